package anamnesis

// The semantic leg's embedding: the Embedder a Store is given, the
// vectors notes lack computed in batches (EmbedPending), a query's vector.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
)

// Embedder turns texts into vectors; package embed's Client (Ollama or an
// OpenAI-compatible server) is the one cmd configures.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// ErrNoEmbedder is the error of a vector search on a store without one.
var ErrNoEmbedder = errors.New("no embedder configured (\"embedder\" in config.json)")

// EmbedReport says what EmbedPending did.
type EmbedReport struct {
	Model    string `json:"model"`
	Embedded int    `json:"embedded"`
	Pending  int    `json:"pending"` // still without a vector
}

// EmbedPending computes the vectors notes lack for the configured model,
// in batches, until none is left or ctx ends. Vectors are derived data in
// index.db, kept by content hash and model: an unchanged note is never
// embedded twice, a model change embeds everything again.
func (s *Store) EmbedPending(ctx context.Context) (EmbedReport, error) {
	rep := EmbedReport{}
	if s.embedder == nil {
		return rep, ErrNoEmbedder
	}
	rep.Model = s.embedder.Model()
	for {
		batch, total, err := guarded2(ctx, s, func() ([]index.Pending, int, error) {
			return s.idx().PendingVectors(ctx, rep.Model, 64)
		})
		if err != nil {
			return rep, err
		}
		rep.Pending = total
		if len(batch) == 0 {
			return rep, nil
		}
		texts := make([]string, len(batch))
		for i, p := range batch {
			texts[i] = p.Text
		}
		vecs, err := s.embedder.Embed(ctx, texts)
		if err != nil {
			return rep, fmt.Errorf("embed %d notes: %w", len(texts), err)
		}
		if len(vecs) != len(texts) {
			return rep, fmt.Errorf("embed %d notes: the embedder returned %d vectors", len(texts), len(vecs))
		}
		put := make(map[string][]float32, len(batch))
		for i, p := range batch {
			put[p.Hash] = unit(vecs[i])
		}
		if err := s.guard(ctx, func() error { return s.idx().PutVectors(ctx, rep.Model, put) }); err != nil {
			return rep, err
		}
		rep.Embedded += len(batch)
		s.progressLarge("embedding notes", rep.Embedded, rep.Embedded+total-len(batch))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
}

// guarded2 is guarded for an operation with two results.
func guarded2[A, B any](ctx context.Context, s *Store, op func() (A, B, error)) (A, B, error) {
	var a A
	var b B
	err := s.guard(ctx, func() error {
		var err error
		a, b, err = op()
		return err
	})
	return a, b, err
}

// HasEmbedder reports whether a vector leg is configured.
func (s *Store) HasEmbedder() bool { return s.embedder != nil }

// embedQuery embeds one query within timeout (0: the embedder's own).
func (s *Store) embedQuery(ctx context.Context, query string, timeout time.Duration) ([]float32, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	vs, err := s.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("embed the query: the embedder returned %d vectors", len(vs))
	}
	return unit(vs[0]), nil
}

// unit scales v to length 1 (cosine is then a dot product); a zero
// vector stays zero.
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
