package anamnesis

// The semantic leg's vectors as status and doctor report them, and read
// ahead by a long-running process.

import (
	"context"
	"fmt"
	"time"
)

// WarmVectors maps (or reads) the configured model's vectors, so that a
// long-running process (the MCP server) answers its first semantic search
// as fast as the next. Without an embedder it does nothing; failures are
// left for the search itself to meet and report.
func (s *Store) WarmVectors(ctx context.Context) {
	if s.embedder != nil {
		_ = s.idx().WarmVectors(ctx, s.embedder.Model())
	}
}

// VectorStatus says how far the semantic leg's vectors are (status).
type VectorStatus struct {
	Model   string `json:"model"`
	With    int    `json:"with_vector"`
	Without int    `json:"without_vector"`
}

// Vectors reports the notes with and without a vector for the configured
// model; nil without an embedder.
func (s *Store) Vectors(ctx context.Context) (*VectorStatus, error) {
	if s.embedder == nil {
		return nil, nil
	}
	with, total, err := guarded2(ctx, s, func() (int, int, error) { return s.idx().VectorCounts(ctx, s.embedder.Model()) })
	if err != nil {
		return nil, err
	}
	return &VectorStatus{Model: s.embedder.Model(), With: with, Without: total - with}, nil
}

// embedderCheck is doctor's finding on the semantic leg: whether the
// embedder answers (one short request) and how many notes lack vectors.
func (s *Store) embedderCheck(ctx context.Context) Check {
	const name = "semantic search"
	if s.embedder == nil && s.embedderErr != nil {
		return Check{Name: name, State: CheckWarn, Detail: fmt.Sprintf("the embedder in %s is not used: %v; search is BM25", ConfigFile, s.embedderErr),
			Fix: "fix \"embedder\" in config.json (kind ollama or openai, url, model)"}
	}
	if s.embedder == nil {
		return Check{Name: name, State: CheckOK, Detail: "off (no \"embedder\" in config.json): search is BM25"}
	}
	vs, err := s.Vectors(ctx)
	if err != nil {
		return Check{Name: name, State: CheckWarn, Detail: err.Error()}
	}
	if _, err := s.embedQuery(ctx, "anamnesis doctor", 5*time.Second); err != nil {
		return Check{Name: name, State: CheckWarn, Detail: fmt.Sprintf("model %s does not answer: %v; search falls back to BM25", vs.Model, err),
			Fix: "start the embedding server, or fix \"embedder\" in config.json"}
	}
	if vs.Without > 0 {
		return Check{Name: name, State: CheckWarn, Detail: fmt.Sprintf("model %s answers; %d of %d notes have no vector yet (BM25 still finds them)", vs.Model, vs.Without, vs.With+vs.Without),
			Fix: "run `anamnesis embed` (write, sync and reindex start it in the background)"}
	}
	return Check{Name: name, State: CheckOK, Detail: fmt.Sprintf("model %s answers; every note has a vector (%d)", vs.Model, vs.With)}
}
