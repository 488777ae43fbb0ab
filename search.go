package anamnesis

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Search ranks notes against free text (see index.Search). A session
// note never outranks a durable note it echoes (echoFirst).
func (s *Store) Search(ctx context.Context, query string, f index.Filter) ([]index.Hit, error) {
	if err := validateFilter(f); err != nil {
		return nil, err
	}
	hits, err := guarded(ctx, s, func() ([]index.Hit, error) { return s.search(ctx, query, f) })
	if err != nil {
		return nil, err
	}
	// Within the k best: reading candidates past k so that a durable note
	// just below could move up cost 0.5 ms a search at 10,000 notes (the
	// k-th score bounds the pruning), and a note that holds every word an
	// echo holds ranks close to it anyway.
	hits = durableFirst(query, hits)
	// A conflict copy and its note come together, even past k.
	if hits, err = s.pairConflicts(ctx, hits); err != nil {
		return nil, err
	}
	MarkSameFact(hits)
	return hits, nil
}

// durableFirst moves each session (episodic) note below the last durable
// note ranked after it that holds every query word the session note
// holds. A session note that repeats a question ("how big is the walrus
// cache?") scores high on the question's words, but the durable note
// that answers it is what the reader wants first; a session note with a
// query word no durable note has keeps its place.
func durableFirst(query string, hits []index.Hit) []index.Hit {
	first := slices.IndexFunc(hits, func(h index.Hit) bool { return h.Type == note.TypeEpisodic })
	if first < 0 || !slices.ContainsFunc(hits[first:], func(h index.Hit) bool { return h.Type != note.TypeEpisodic }) {
		return hits // no session note above a durable one: nothing to move
	}
	q := map[string]bool{}
	for _, t := range fts5token.Tokens(query) {
		q[t] = true
	}
	matched := make([]map[string]bool, len(hits))
	for i, h := range hits {
		matched[i] = map[string]bool{}
		for _, t := range fts5token.Tokens(h.Title + "\n" + h.Body + "\n" + strings.Join(h.Tags, " ")) {
			if q[t] {
				matched[i][t] = true
			}
		}
	}
	covers := func(d, e map[string]bool) bool {
		for t := range e {
			if !d[t] {
				return false
			}
		}
		return true
	}
	out := slices.Clone(hits)
	for i := 0; i < len(out); i++ {
		if out[i].Type != note.TypeEpisodic {
			continue
		}
		last := -1
		for j := i + 1; j < len(out); j++ {
			if out[j].Type != note.TypeEpisodic && covers(matched[j], matched[i]) {
				last = j
			}
		}
		if last < 0 {
			continue
		}
		// Move i to last; the entries between shift up one.
		e, m := out[i], matched[i]
		copy(out[i:last], out[i+1:last+1])
		copy(matched[i:last], matched[i+1:last+1])
		out[last], matched[last] = e, m
		i-- // out[i] is a new entry now
	}
	return out
}

func (s *Store) search(ctx context.Context, query string, f index.Filter) ([]index.Hit, error) {
	query = contentQuery(query)
	days := s.decayDays
	if days <= 0 {
		return s.idx().Search(ctx, query, f)
	}
	k := f.Limit
	if k <= 0 {
		k = index.DefaultK
	}
	pool := f
	pool.Limit = min(max(4*k, decayPool), index.MaxK)
	hits, err := s.idx().Search(ctx, query, pool)
	if err != nil {
		return nil, err
	}
	return decay(hits, s.now(), days, k), nil
}

// contentQuery drops a query's function words ("how", "do", "the":
// index.IsStopword) when it holds any other word. In a young store a
// function word is in few notes, so bm25 weighs it like a subject, and
// "how do I deploy" ranked first a session note that said "how do I"
// over the note about deploying. A query of function words only is kept.
func contentQuery(query string) string {
	words := strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '_' })
	var kept []string
	for _, w := range words {
		if !index.IsStopword(strings.ToLower(w)) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 || len(kept) == len(words) {
		return query
	}
	return strings.Join(kept, " ")
}

// decayPool is the least number of BM25 candidates decay re-ranks: a note
// outside them is not considered, so decay is a re-ranking of the best
// matches, not a second ranking of the store.
const decayPool = 32

// decay multiplies each score by exp(-age/days), age from updated_at, and
// keeps the best k. The sort is stable, so equal scores keep the seed's
// newest-first order. A note with an unreadable or future timestamp is
// not penalized.
func decay(hits []index.Hit, now time.Time, days float64, k int) []index.Hit {
	for i := range hits {
		if t, err := time.Parse(time.RFC3339Nano, hits[i].UpdatedAt); err == nil && now.After(t) {
			hits[i].Score *= math.Exp(-now.Sub(t).Hours() / 24 / days)
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// List returns notes newest first, superseded ones included.
func (s *Store) List(ctx context.Context, f index.Filter) ([]index.Hit, error) {
	if err := validateFilter(f); err != nil {
		return nil, err
	}
	return guarded(ctx, s, func() ([]index.Hit, error) { return s.idx().List(ctx, f) })
}

func validateFilter(f index.Filter) error {
	if f.Type != "" && !note.ValidType(f.Type) {
		return invalidf("type %q is not one of %s", f.Type, strings.Join(note.Types(), ", "))
	}
	if f.Scope != "" && !note.ValidScope(f.Scope) {
		return invalidf("scope %q is not %s or %s", f.Scope, note.ScopePortable, note.ScopeMachineLocal)
	}
	if f.Limit < 0 {
		return invalidf("limit %d is negative", f.Limit)
	}
	return nil
}

// Superseded returns the ids some note supersedes (`list` marks them).
func (s *Store) Superseded(ctx context.Context) (map[string]bool, error) {
	ids, err := guarded(ctx, s, func() ([]string, error) { return s.idx().SupersededIDs(ctx) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// SupersededBy returns, for each of ids some note supersedes, the notes
// that supersede it.
func (s *Store) SupersededBy(ctx context.Context, ids []string) (map[string][]string, error) {
	return guarded(ctx, s, func() (map[string][]string, error) { return s.idx().SupersededBy(ctx, ids) })
}

// Cursor is a note's place in List's order (Filter.Before).
type Cursor = index.Cursor

// SearchPaths reports how this Store's searches were answered so far
// (by our postings or one of FTS5's rankings), for the benchmark.
func (s *Store) SearchPaths() index.PathCounts { return s.idx().Paths() }

// RarestWords returns up to n of words with the fewest notes containing
// them; the benchmark builds queries about one note with it.
func (s *Store) RarestWords(ctx context.Context, words []string, n int) ([]string, error) {
	return guarded(ctx, s, func() ([]string, error) { return s.idx().RarestWords(ctx, words, n) })
}

// Filter and Hit are the index's, named here so that users of the Store
// need not import the index.
type (
	Filter = index.Filter
	Hit    = index.Hit
)

// Result sizes of Search.
const (
	DefaultK = index.DefaultK // notes a search returns unless told
	MaxK     = index.MaxK     // the most one search returns
)

// commonOnly is the score below which a hit matched only on words at
// least half the notes contain: FTS5 floors their IDF at 1e-6, so such a
// hit scores about 1e-6 per matching word, while one distinctive word
// scores orders of magnitude more (a word in 499 of 1,000 notes: 0.004).
const commonOnly = 1e-3

// Relevant drops the hits that matched only on words most notes contain
// when others matched on a distinctive word: they pad results without
// being about the query. When no hit did (a store of a few notes, where
// every word is in half of them, or a query of common words only), all
// are kept.
func Relevant(hits []Hit) []Hit {
	if !slices.ContainsFunc(hits, func(h Hit) bool { return h.Score >= commonOnly }) {
		return hits
	}
	return slices.DeleteFunc(slices.Clone(hits), func(h Hit) bool { return h.Score < commonOnly })
}

// Relevance is a hit's score relative to the best hit's, rounded to two
// decimals: 1 for the best match, a figure a person can read where the
// raw bm25 score (0.0000028, 14.7) means nothing.
func Relevance(score, best float64) float64 {
	if best <= 0 {
		return 0
	}
	return math.Round(score/best*100) / 100
}
