package main

import (
	"context"
	"fmt"
	"time"

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
	if !s.HasEmbedder() {
		return
	}
	if err := spawnSelf(envOf(c), s.Home(), "embed"); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: background embedding not started: %v\n", err)
	}
}

// describeEmbedder is init's plan line for an embedder: which, and
// whether it answers now (it is recorded either way: a model server that
// is not running yet leaves search to BM25 until it is).
func describeEmbedder(ctx context.Context, e *anamnesis.EmbedderConfig) string {
	if e == nil {
		return "off (search is BM25)"
	}
	what := fmt.Sprintf("%s model %s at %s", e.Kind, e.Model, e.URL)
	emb, err := newEmbedder(*e)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = emb.Embed(ctx, []string{"anamnesis init"})
	}
	if err != nil {
		return what + fmt.Sprintf(" (does not answer yet: %v; search stays BM25 until it does)", err)
	}
	return what + " (answers; notes are embedded in the background after the first sync)"
}
