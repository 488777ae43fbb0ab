package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
)

// Embedder turns texts into vectors; package embed's Client (Ollama or an
// OpenAI-compatible server) is the one cmd configures.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// Search modes: BM25 alone, the vector leg alone, or both fused.
const (
	ModeFTS    = "fts"
	ModeVec    = "vec"
	ModeHybrid = "hybrid"
)

// Fusion parameters: each leg gives up to legK candidates, fused by
// reciprocal rank, Σ weight/(rrfK + rank).
const (
	legK = 50
	rrfK = 60
)

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

// WarmVectors reads the configured model's vectors into memory, so that a
// long-running process (the MCP server) answers its first semantic search
// as fast as the next. Without an embedder it does nothing; failures are
// left for the search itself to meet and report.
func (s *Store) WarmVectors(ctx context.Context) {
	if s.embedder != nil {
		_ = s.idx().WarmVectors(ctx, s.embedder.Model())
	}
}

// DefaultMode is the search mode of a caller that names none: hybrid
// with an embedder, else fts. SearchMode and Evaluate read "" as it.
func (s *Store) DefaultMode() string {
	if s.embedder != nil {
		return ModeHybrid
	}
	return ModeFTS
}

// HasEmbedder reports whether a vector leg is configured.
func (s *Store) HasEmbedder() bool { return s.embedder != nil }

// SearchMode ranks notes by mode ("": DefaultMode): ModeFTS is Search; ModeVec ranks by
// cosine to the query's embedding; ModeHybrid fuses both by reciprocal
// rank (fuse), then the optional decay. Every hit says why it ranked
// where it did (BM25Rank, VecRank, Cosine, Decay, Score). When the query
// cannot be embedded (the embedder is down, slow or wrong), a hybrid
// search returns the BM25 ranking and the error as degraded, so the
// caller can say so in one line and go on.
func (s *Store) SearchMode(ctx context.Context, query string, f index.Filter, mode string) (hits []index.Hit, degraded error, err error) {
	if mode == "" {
		mode = s.DefaultMode()
	}
	switch mode {
	case ModeFTS:
		hits, err := s.Search(ctx, query, f)
		return hits, nil, err
	case ModeVec, ModeHybrid:
	default:
		return nil, nil, invalidf("search mode %q is not one of fts, vec, hybrid", mode)
	}
	if err := validateFilter(f); err != nil {
		return nil, nil, err
	}
	if s.embedder == nil {
		if mode == ModeVec {
			return nil, nil, ErrNoEmbedder
		}
		hits, err := s.Search(ctx, query, f)
		return hits, nil, err
	}
	q, embErr := s.embedQuery(ctx, query, 0)
	if embErr != nil {
		if mode == ModeVec {
			return nil, nil, embErr
		}
		hits, err := s.Search(ctx, query, f)
		return hits, embErr, err
	}
	hits, err = s.searchWithVector(ctx, query, q, f, mode)
	return hits, nil, err
}

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

// searchWithVector runs the legs mode asks for with the query's vector.
func (s *Store) searchWithVector(ctx context.Context, query string, q []float32, f index.Filter, mode string) ([]index.Hit, error) {
	k := f.Limit
	if k <= 0 {
		k = index.DefaultK
	}
	leg := f
	leg.Limit = max(legK, k)
	vec, cos, err := guarded2(ctx, s, func() ([]index.Hit, []float64, error) {
		return s.idx().NearestVectors(ctx, s.embedder.Model(), q, leg, leg.Limit)
	})
	if err != nil {
		return nil, err
	}
	var bm25 []index.Hit
	if mode == ModeHybrid {
		if bm25, err = guarded(ctx, s, func() ([]index.Hit, error) { return s.idx().Search(ctx, contentQuery(query), leg) }); err != nil {
			return nil, err
		}
	}
	hits := fuse(bm25, vec, cos, 1, 1)
	if days := s.decayDays; days > 0 {
		now := s.now()
		for i := range hits {
			hits[i].Decay = 1
			if t, err := time.Parse(time.RFC3339Nano, hits[i].UpdatedAt); err == nil && now.After(t) {
				hits[i].Decay = math.Exp(-now.Sub(t).Hours() / 24 / days)
			}
			hits[i].Score *= hits[i].Decay
		}
		slices.SortStableFunc(hits, func(a, b index.Hit) int { return cmpDesc(a.Score, b.Score) })
	}
	if len(hits) > k {
		hits = hits[:k]
	}
	if hits, err = s.pairConflicts(ctx, hits); err != nil {
		return nil, err
	}
	MarkSameFact(hits)
	return hits, nil
}

// fuse merges the BM25 ranking and the vector ranking (with each note's
// cosine) by reciprocal rank: score = wBM25/(60+bm25 rank) + wVec/(60+vec
// rank), a leg a note is missing from adding nothing. Ties keep the BM25
// order, then the vector order.
func fuse(bm25, vec []index.Hit, cos []float64, wBM25, wVec float64) []index.Hit {
	byID := map[string]int{}
	var out []index.Hit
	for i, h := range bm25 {
		h.BM25Rank = i + 1
		h.Score = wBM25 / float64(rrfK+i+1)
		byID[h.ID] = len(out)
		out = append(out, h)
	}
	for i, h := range vec {
		add := wVec / float64(rrfK+i+1)
		if j, ok := byID[h.ID]; ok {
			out[j].VecRank, out[j].Cosine = i+1, cos[i]
			out[j].Score += add
			continue
		}
		h.BM25Rank, h.VecRank, h.Cosine, h.Score = 0, i+1, cos[i], add
		byID[h.ID] = len(out)
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b index.Hit) int { return cmpDesc(a.Score, b.Score) })
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
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
