package anamnesis

import (
	"context"
	"fmt"

	"github.com/anamnesis-memory/anamnesis/eval"
	"github.com/anamnesis-memory/anamnesis/index"
)

// Evaluate runs eval cases against this store's search. A relevant note
// that was superseded is also found through the notes that replaced it
// (transitively), since search hides it on purpose.
//
// mode is a search mode (SearchMode); "" is fts. The semantic modes need
// an embedder that answers: a query it cannot embed fails the run rather
// than scoring BM25 under another name.
func (s *Store) Evaluate(ctx context.Context, cases []eval.Case, ks []int, mode string) (*eval.Report, error) {
	if mode == "" {
		mode = s.DefaultMode()
	}
	replacedBy, err := s.superseders(ctx)
	if err != nil {
		return nil, err
	}
	expanded := make([]eval.Case, len(cases))
	for i, c := range cases {
		expanded[i] = c
		expanded[i].Equivalent = map[string][]string{}
		for _, r := range c.Relevant {
			if all := eval.ExpandRelevant([]string{r}, replacedBy); len(all) > 1 {
				expanded[i].Equivalent[r] = all[1:]
			}
		}
	}
	rep, err := eval.Run(ctx, expanded, ks, func(ctx context.Context, q string, k int) ([]eval.Hit, error) {
		hits, degraded, err := s.SearchMode(ctx, q, index.Filter{Limit: k}, mode)
		if err != nil {
			return nil, err
		}
		if degraded != nil {
			return nil, fmt.Errorf("%s search of %q: %w", mode, q, degraded)
		}
		out := make([]eval.Hit, len(hits))
		for i, h := range hits {
			out[i] = eval.Hit{ID: h.ID, Text: h.Title + "\n" + h.Body}
		}
		return out, nil
	})
	if rep != nil {
		rep.Mode = mode
	}
	return rep, err
}

// SelfCases builds eval cases from this store's notes (see eval.SelfCases).
func (s *Store) SelfCases(ctx context.Context, n int, seed int64) ([]eval.Case, error) {
	hits, err := s.idx().List(ctx, index.Filter{Live: true})
	if err != nil {
		return nil, err
	}
	notes := make([]eval.Note, len(hits))
	for i, h := range hits {
		notes[i] = eval.Note{ID: h.ID, Title: h.Title, Body: h.Body}
	}
	return eval.SelfCases(notes, n, seed), nil
}

// superseders maps each superseded id to the notes that supersede it.
func (s *Store) superseders(ctx context.Context) (map[string][]string, error) {
	hits, err := s.idx().List(ctx, index.Filter{})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, h := range hits {
		for _, old := range h.Supersedes {
			out[old] = append(out[old], h.ID)
		}
	}
	return out, nil
}
