package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func writeCommand() *cli.Command {
	return &cli.Command{
		Name:      "write",
		Usage:     "write a new note and print its id",
		ArgsUsage: " ",
		Description: "The body comes from --body, --body-file, or standard input when it is piped.\n" +
			"Types: procedural (how-tos, decisions, fixes), semantic (facts, preferences, conventions),\n" +
			"episodic (what happened). Portable notes sync to your other machines; machine-local ones never leave this one.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "procedural, semantic or episodic (required)"},
			&cli.StringFlag{Name: "title", Usage: "one-line title (required)"},
			&cli.StringFlag{Name: "body", Usage: "note text"},
			&cli.StringFlag{Name: "body-file", Usage: "read the note text from this file (- for stdin)"},
			&cli.StringFlag{Name: "project", Usage: "project key (default global)"},
			&cli.StringFlag{Name: "tags", Usage: "comma-separated tags"},
			&cli.StringFlag{Name: "scope", Value: note.ScopePortable, Usage: "portable or machine-local"},
			&cli.StringSliceFlag{Name: "supersedes", Usage: "id of a note this one replaces (repeatable)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("write takes no arguments (got %q); pass the body with --body", c.Args().First())
			}
			for _, f := range []string{"type", "title"} {
				if !c.IsSet(f) {
					return usagef("write needs --%s", f)
				}
			}
			body, err := readBody(c)
			if err != nil {
				return err
			}
			var tags []string
			if t := c.String("tags"); t != "" {
				tags = strings.Split(t, ",")
			}
			var sup []string
			for _, v := range c.StringSlice("supersedes") {
				sup = append(sup, strings.Split(v, ",")...)
			}
			return withStore(c, forFirstWrite, func(ctx context.Context, s *anamnesis.Store) error {
				defer spawnEmbed(c, s) // vectors follow in the background
				n, path, err := s.Write(ctx, anamnesis.WriteRequest{
					Type: c.String("type"), Title: c.String("title"), Body: body, Project: c.String("project"),
					Tags: tags, Scope: c.String("scope"), Supersedes: sup, Once: true,
				})
				if err != nil {
					return err
				}
				if c.Bool("json") {
					// Notes the new one may have meant to replace, as
					// memory_write answers (writeOut).
					sim, err := s.Similar(ctx, n, similarShown)
					if err != nil {
						sim = []anamnesis.SimilarNote{}
					}
					return printJSON(c.App.Writer, writeOut{ID: n.ID, Path: path, Similar: sim})
				}
				fmt.Fprintln(c.App.Writer, n.ID)
				return nil
			})
		},
	}
}

func readBody(c *cli.Context) (string, error) {
	body, file := c.String("body"), c.String("body-file")
	switch {
	case c.IsSet("body") && file != "":
		return "", usagef("give the body with --body or --body-file, not both")
	case c.IsSet("body"):
		return body, nil
	case file == "-":
		return readAllLimited(c.App.Reader, "standard input")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("read body: %w", err)
		}
		defer f.Close()
		return readAllLimited(f, file)
	}
	if f, ok := c.App.Reader.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", usagef("no body: pass --body TEXT, --body-file FILE, or pipe the text on standard input")
		}
	}
	return readAllLimited(c.App.Reader, "standard input")
}

func readAllLimited(r io.Reader, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, note.MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("read body from %s: %w", what, err)
	}
	if len(data) > note.MaxBody {
		return "", fmt.Errorf("body from %s is too large: a note's body is at most %d bytes", what, note.MaxBody)
	}
	return strings.TrimRight(string(data), "\n"), nil
}
