package main

import (
	"context"
	"fmt"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/urfave/cli/v2"
)

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list notes, newest first (superseded notes included)",
		Flags: append(filterFlags(false), &cli.StringFlag{Name: "source",
			Usage: "only notes from this source: native (imported from Claude Code's auto memory) or a prov_source such as claude-code or human"}),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("list takes no arguments; filter with --project, --type, --scope, --source")
			}
			if err := atLeastOne(c, "limit", " (leave it out for every note)"); err != nil {
				return err
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				f := filterFrom(c, c.Int("limit"))
				if f.ProvSource = c.String("source"); f.ProvSource == "native" {
					f.ProvSource = anamnesis.NativeSource
				}
				hits, err := s.List(ctx, f)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printResults(c.App.Writer, hits, false)
				}
				superseded, err := s.Superseded(ctx)
				if err != nil {
					return err
				}
				for _, h := range hits {
					mark := ""
					if superseded[h.ID] {
						mark = "  (superseded)"
					}
					fmt.Fprintf(c.App.Writer, "%s  %s  %-10s  %s  %s%s\n", h.ID, textfmt.Date(h.UpdatedAt), h.Type, h.Project, textfmt.Clip(h.Title, 100), mark)
				}
				if len(hits) == 0 {
					fmt.Fprintln(c.App.ErrWriter, "no notes")
				}
				return nil
			})
		},
	}
}
