package main

import (
	"context"
	"fmt"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/urfave/cli/v2"
)

func reindexCommand() *cli.Command {
	return &cli.Command{
		Name:  "reindex",
		Usage: "bring the index in line with the note files",
		Description: "By default only files whose size or modification time changed since the last\n" +
			"reindex are read, so hand edits, new files and deletions are picked up cheaply.\n" +
			"--full drops the index and rebuilds it from every file.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "full", Usage: "rebuild the whole index from the files"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				defer spawnEmbed(c, s) // vectors follow in the background
				var rep anamnesis.ReconcileReport
				var err error
				if c.Bool("full") {
					rep, err = s.RebuildAfterOpen(ctx)
				} else {
					rep, err = s.Reconcile(ctx)
				}
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, rep)
				}
				fmt.Fprintf(c.App.Writer, "reindex: %d added, %d updated, %d deleted; %s indexed\n",
					rep.Added, rep.Updated, rep.Deleted, textfmt.Count(rep.Indexed, "note", "notes"))
				if len(rep.Skipped) > 0 {
					fmt.Fprintf(c.App.Writer, "skipped %s:\n", textfmt.Count(len(rep.Skipped), "file", "files"))
					for _, f := range rep.Skipped {
						fmt.Fprintf(c.App.Writer, "  %s: %s\n", f.Path, f.Error)
					}
				}
				return nil
			})
		},
	}
}
