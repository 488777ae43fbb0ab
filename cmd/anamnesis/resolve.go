package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

func resolveCommand() *cli.Command {
	return &cli.Command{
		Name:      "resolve",
		Usage:     "settle a conflict: keep one version, or write the merged text",
		ArgsUsage: "ID",
		Description: "ID is a note with conflict copies (a sync met overlapping edits and kept both), one of its\n" +
			"copies, or a note that two machines each superseded. --keep ID keeps that version: a copy's\n" +
			"text goes into the note under the note's own id and every copy is deleted; of two notes that\n" +
			"replace the same note, the kept one supersedes the other. --body or --body-file gives the\n" +
			"merged text instead (with --keep, it replaces the kept version's body). The result is\n" +
			"committed and, with a remote set, synced. `anamnesis status` lists the conflicts.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keep", Usage: "the `ID` of the version to keep"},
			&cli.StringFlag{Name: "body", Usage: "the merged text"},
			&cli.StringFlag{Name: "body-file", Usage: "read the merged text from this file (- for stdin)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("resolve takes exactly one note id")
			}
			var r anamnesis.Resolution
			r.Keep = strings.TrimSpace(c.String("keep"))
			if c.IsSet("body") || c.IsSet("body-file") {
				body, err := readBody(c)
				if err != nil {
					return err
				}
				r.Body = &body
			}
			if r.Keep == "" && r.Body == nil {
				return usagef("resolve needs --keep ID or the merged text (--body, --body-file)")
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				rep, err := s.Resolve(ctx, c.Args().First(), r)
				if err != nil {
					return err
				}
				var syncErr error
				if s.Remote() != "" {
					_, syncErr = s.Sync(ctx, anamnesis.SyncOptions{})
				}
				if c.Bool("json") {
					if err := printJSON(c.App.Writer, rep); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(c.App.Writer, "kept %s (%s)\n", rep.Kept, rep.Path)
					for _, id := range rep.Removed {
						fmt.Fprintf(c.App.Writer, "removed conflict copy %s\n", id)
					}
					for _, id := range rep.Superseded {
						fmt.Fprintf(c.App.Writer, "%s now supersedes %s\n", rep.Kept, id)
					}
				}
				if syncErr != nil {
					return fmt.Errorf("resolved and committed here, but the sync failed: %w; the next sync sends it", syncErr)
				}
				return nil
			})
		},
	}
}
