package anamnesis

// Search modes (BM25, the vector leg, both fused by reciprocal rank).

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
)

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

// DefaultMode is the search mode of a caller that names none: hybrid
// with an embedder, else fts. SearchMode and Evaluate read "" as it.
func (s *Store) DefaultMode() string {
	if s.embedder != nil {
		return ModeHybrid
	}
	return ModeFTS
}

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
