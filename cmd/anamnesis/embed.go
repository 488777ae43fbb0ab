package main

import (
	"context"
	"fmt"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/urfave/cli/v2"
)

func embedCommand() *cli.Command {
	return &cli.Command{
		Name:  "embed",
		Usage: "compute the vectors notes lack for the semantic search leg",
		Description: "Needs an embedder in config.json, e.g.\n" +
			"  \"embedder\": {\"kind\": \"ollama\", \"url\": \"http://127.0.0.1:11434\", \"model\": \"nomic-embed-text\"}\n" +
			"or {\"kind\": \"openai\", \"url\": \"http://127.0.0.1:8080\", \"model\": \"...\", \"api_key_env\": \"OPENAI_API_KEY\"}\n" +
			"for any OpenAI-compatible server. Vectors live in index.db by content hash and model: only new\n" +
			"and edited notes are embedded. write, sync and reindex start it in the background on their own.",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("embed takes no arguments")
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				rep, err := s.EmbedPending(ctx)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, rep)
				}
				fmt.Fprintf(c.App.Writer, "embed: %s embedded with %s; %d without a vector\n", textfmt.Count(rep.Embedded, "note", "notes"), rep.Model, rep.Pending)
				return nil
			})
		},
	}
}

// spawnEmbed starts `anamnesis embed` detached when the store has an
// embedder, so vectors follow writes, syncs and reindexes without making
// anyone wait for the model.
func spawnEmbed(c *cli.Context, s *anamnesis.Store) {
	if s.HasEmbedder() {
		spawnEmbedIn(c, s.Home())
	}
}

// spawnEmbedIn starts `anamnesis embed` detached for the store at home.
func spawnEmbedIn(c *cli.Context, home string) {
	if err := spawnSelf(envOf(c), home, "embed"); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: background embedding not started: %v\n", err)
	}
}
