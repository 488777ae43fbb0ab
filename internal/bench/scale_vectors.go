package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/fakeembed"
)

// Vectors of the semantic-leg figure: nomic-embed-text's size, from a
// fake server of that model name.
const (
	vecDims  = 768
	vecModel = "fake-768"
)

// vectorSearch measures the first semantic search of a new process, the
// cost every Claude Code hook and CLI search pays: home (indexed by the
// binary under test) gets an embedder in config.json, a fake embedding
// server run here (internal/fakeembed, 768 dimensions), every note a
// vector (fillVectors), and each of runs is `anamnesis search --mode vec`
// in a process of its own, which embeds the query (one request to the
// fake), reads the model's vectors and scores them all.
func vectorSearch(ctx context.Context, cfg Config, home string, env []string, runs int) (Proc, error) {
	srv, stop := fakeembed.Serve(fakeembed.Options{Dim: vecDims, Model: vecModel})
	defer stop()
	if err := setEmbedder(home, srv.URL); err != nil {
		return Proc{}, err
	}
	t0 := time.Now()
	if err := fillVectors(ctx, cfg, home, env); err != nil {
		return Proc{}, err
	}
	cfg.logf("  vectors for every note in %v", time.Since(t0).Round(time.Millisecond))
	args := []string{"search", "--mode", "vec", "-k", "10", "why is the sync slow after the database migration"}
	// One search first, untimed: a binary that keeps the vectors in a
	// form of its own writes it after the vectors were put, as its own
	// embed would have.
	if _, _, _, err := timeProcRSS(ctx, cfg.Binary, env, "", args...); err != nil {
		return Proc{}, err
	}
	return timeRuns(ctx, cfg.Binary, env, runs, noStdin, args...)
}

// setEmbedder names the fake at url as home's embedder in config.json,
// keeping whatever else the file says.
func setEmbedder(home, url string) error {
	p := filepath.Join(home, anamnesis.ConfigFile)
	cfg := map[string]any{}
	if data, err := os.ReadFile(p); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
	}
	cfg["embedder"] = map[string]string{"kind": "ollama", "url": url, "model": vecModel}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// errOtherSchema is FillVectors' answer to an index it cannot write.
var errOtherSchema = errors.New("the index is of another schema than this harness's")

// exitOtherSchema is the exit status of `anamnesis-bench -fill-vectors`
// for errOtherSchema.
const exitOtherSchema = 3

// fillVectors gives every note of home a vector in a process of its own,
// this harness run with -fill-vectors (FillVectors): a child's peak RSS
// starts at its parent's (Linux counts the memory of the process that
// exec'd it), so what the fill reads must not grow this process. An
// index of another schema (an older binary under test) is left to the
// binary's own `anamnesis embed`, a request per 32 notes.
func fillVectors(ctx context.Context, cfg Config, home string, env []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("fill vectors: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "-fill-vectors", filepath.Join(home, anamnesis.IndexFile))
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == exitOtherSchema {
		_, _, _, err := timeProcRSS(ctx, cfg.Binary, env, "", "embed")
		return err
	}
	if err != nil {
		return fmt.Errorf("fill vectors: %w: %s", err, out)
	}
	return nil
}

// FillVectors gives every note of the index at dbPath a vector for the
// fake's model: the fake's vector of its text (fakeembed.Vector, 768
// dimensions), put through the index in batches of 5,000 (`anamnesis
// embed` puts 64 at a time, a request each, which at 100,000 notes takes
// minutes). It is `anamnesis-bench -fill-vectors`; errOtherSchema means
// the index is not of this harness's schema, and nothing was written.
func FillVectors(ctx context.Context, dbPath string) error {
	ro, stale, err := index.OpenReadOnly(ctx, dbPath)
	if err != nil {
		return err
	}
	ro.Close()
	if stale {
		return errOtherSchema
	}
	ix, _, err := index.Open(ctx, dbPath, index.Options{})
	if err != nil {
		return err
	}
	defer ix.Close()
	model := "ollama:" + vecModel // what embed.Client.Model calls it
	for {
		batch, _, err := ix.PendingVectors(ctx, model, 5000)
		if err != nil || len(batch) == 0 {
			return err
		}
		vecs := make(map[string][]float32, len(batch))
		for _, p := range batch {
			vecs[p.Hash] = fakeembed.Vector(p.Text, vecDims)
		}
		if err := ix.PutVectors(ctx, model, vecs); err != nil {
			return err
		}
	}
}

// FillVectorsExit is FillVectors' exit status for
// `anamnesis-bench -fill-vectors`.
func FillVectorsExit(err error) int {
	if errors.Is(err, errOtherSchema) {
		return exitOtherSchema
	}
	return 1
}
