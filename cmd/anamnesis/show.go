package main

import (
	"context"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print one note",
		ArgsUsage: "ID",
		Flags:     []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("show takes exactly one note id")
			}
			id := c.Args().First()
			if !note.ValidID(id) {
				return usagef("%q is not a note id (ids are letters, digits, - and _)", id)
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				n, path, data, err := s.GetFile(ctx, id)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					h := anamnesis.Hit{Note: *n, Path: path}
					return printJSON(c.App.Writer, anamnesis.NoteOf(h, false))
				}
				_, err = rawWriter(c.App.Writer).Write(data)
				return err
			})
		},
	}
}
