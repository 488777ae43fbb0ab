package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/urfave/cli/v2"
)

func searchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "find the notes most relevant to some words",
		ArgsUsage: "QUERY...",
		Description: "Ranks notes by BM25 over title, body and tags (any of the query's words may match),\n" +
			"newest first on ties. Notes replaced by another note (supersedes) are left out.\n" +
			"With --decay-days D (or recall_decay_days in config.json) the best matches are re-ranked\n" +
			"by score x exp(-age/D), so older notes fade; off by default.\n" +
			"With an embedder in config.json (\"embedder\"), --mode hybrid (the default then) fuses BM25 with\n" +
			"a semantic leg by reciprocal rank; --mode vec is the semantic leg alone, --mode fts BM25 alone.\n" +
			"An embedder that does not answer leaves BM25, with one line on stderr.\n" +
			"Flags may follow the query; put -- before a query that itself contains one of these flags.",
		Flags: append(filterFlags(true), decayFlag(),
			&cli.StringFlag{Name: "mode", Usage: "`MODE`: hybrid, vec or fts (default: hybrid with an embedder, else fts)"}),
		Action: func(c *cli.Context) error {
			if !c.Args().Present() {
				return usagef("search needs a query")
			}
			if c.Int("k") < 1 {
				return usagef("-k must be at least 1, got %d", c.Int("k"))
			}
			query := strings.Join(c.Args().Slice(), " ")
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				hits, degraded, err := s.SearchMode(ctx, query, filterFrom(c, c.Int("k")), c.String("mode"))
				if err != nil {
					return err
				}
				if degraded != nil {
					fmt.Fprintf(c.App.ErrWriter, "anamnesis: semantic search unavailable (%v); BM25 results\n", degraded)
				} else if c.String("mode") != anamnesis.ModeFTS {
					vectorsFollow(c, s)
				}
				if c.Bool("json") {
					return printResults(c.App.Writer, hits, true)
				}
				if len(hits) == 0 {
					fmt.Fprintln(c.App.ErrWriter, "no matching notes")
				}
				for i, h := range hits {
					fmt.Fprintf(c.App.Writer, "%d. [%s] %s\n   %s · %s · %s\n", i+1, h.Type, h.Title, h.ID, h.Project, textfmt.Date(h.UpdatedAt))
					for _, l := range snippet(h.Body, 2, 100) {
						fmt.Fprintf(c.App.Writer, "   %s\n", l)
					}
				}
				return nil
			})
		},
	}
}

// embedStamp is touched in state/ when a search starts the background
// embedding; it spaces those starts (embedEvery).
const (
	embedStamp = "embed.stamp"
	embedEvery = time.Minute
)

// vectorsFollow says on stderr when notes lack vectors for the
// configured model (after the embedder or its model changed, or before
// the first embedding) and starts `anamnesis embed` in the background,
// at most once a minute, so nobody has to run it by hand.
func vectorsFollow(c *cli.Context, s *anamnesis.Store) {
	vs, err := s.Vectors(c.Context)
	if err != nil || vs == nil || vs.Without == 0 {
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "anamnesis: %d of %d notes have no vector for model %s yet (BM25 still finds them); ", vs.Without, vs.With+vs.Without, vs.Model)
	if !stampDue(s.Home(), embedStamp, time.Now(), embedEvery) {
		fmt.Fprintln(c.App.ErrWriter, "they are being computed in the background")
		return
	}
	if err := spawnSelf(envOf(c), s.Home(), "embed"); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "computing them in the background failed to start: %v (run `anamnesis embed`)\n", err)
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "computing them in the background (log: %s)\n", filepath.Join(s.Home(), "state", "embed.log"))
}
