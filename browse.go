package anamnesis

import (
	"context"

	"github.com/anamnesis-memory/anamnesis/index"
)

// What a browser of the store (the web UI) reads besides Search and List:
// counts for its filters, the notes replacing a page of notes, and the
// index's state without the cost of a full Status (which also asks git
// whether memory/ is dirty: 56 ms at 10,000 notes).

// Cursor is a note's place in List's order (Filter.Before).
type Cursor = index.Cursor

// Count counts the notes f selects (its Limit and Before ignored).
func (s *Store) Count(ctx context.Context, f Filter) (int, error) {
	if err := validateFilter(f); err != nil {
		return 0, err
	}
	f.Before, f.Limit = nil, 0
	return guarded(ctx, s, func() (int, error) { return s.idx().Count(ctx, f) })
}

// Facets counts notes by each value a filter can take.
type Facets struct {
	Total     int            `json:"total"`
	ByType    map[string]int `json:"by_type"`
	ByScope   map[string]int `json:"by_scope"`
	ByProject map[string]int `json:"by_project"`
	ByMachine map[string]int `json:"by_machine"`
	BySource  map[string]int `json:"by_source"`
}

// Facets counts notes by type, scope, project, machine and source.
func (s *Store) Facets(ctx context.Context) (Facets, error) {
	rows, err := guarded(ctx, s, func() ([]index.FacetRow, error) { return s.idx().Facets(ctx) })
	if err != nil {
		return Facets{}, err
	}
	out := Facets{ByType: map[string]int{}, ByScope: map[string]int{}, ByProject: map[string]int{},
		ByMachine: map[string]int{}, BySource: map[string]int{}}
	for _, r := range rows {
		out.Total += r.Notes
		out.ByType[r.Type] += r.Notes
		out.ByScope[r.Scope] += r.Notes
		out.ByProject[r.Project] += r.Notes
		out.ByMachine[r.MachineID] += r.Notes
		out.BySource[r.ProvSource] += r.Notes
	}
	return out, nil
}

// FacetRow counts the notes of one combination of type, scope, project,
// machine and source.
type FacetRow = index.FacetRow

// FacetRows is what Facets sums, one row per combination, for a caller
// that counts within filters (the web UI's drop-downs).
func (s *Store) FacetRows(ctx context.Context) ([]FacetRow, error) {
	return guarded(ctx, s, func() ([]index.FacetRow, error) { return s.idx().Facets(ctx) })
}

// SupersededBy returns, for each of ids some note supersedes, the notes
// that supersede it.
func (s *Store) SupersededBy(ctx context.Context, ids []string) (map[string][]string, error) {
	return guarded(ctx, s, func() (map[string][]string, error) { return s.idx().SupersededBy(ctx, ids) })
}

// IndexState is the index part of Status: its file, note count, last
// indexed commit and the files it could not index.
func (s *Store) IndexState(ctx context.Context) (IndexStatus, error) {
	var out IndexStatus
	err := s.guard(ctx, func() error {
		n, err := s.idx().Count(ctx, index.Filter{})
		if err != nil {
			return err
		}
		last, err := s.lastIndexedCommit(ctx)
		if err != nil {
			return err
		}
		bad, err := s.idx().BadFiles(ctx)
		if err != nil {
			return err
		}
		out = IndexStatus{Path: s.idx().Path(), Notes: n, LastIndexedCommit: last, Skipped: skippedFiles(bad)}
		return nil
	})
	return out, err
}

// MachineID is the machine this store stamps new notes with.
func (s *Store) MachineID() string { return s.machineID }

// Head is the commit memory/'s main points at, "" before the first commit
// or without a repository: a cheap key for what is derived from history.
func (s *Store) Head(ctx context.Context) (string, error) {
	if !s.hasRepo() {
		return "", nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return "", err
	}
	h, err := r.Head()
	if err != nil || h.IsZero() {
		return "", err
	}
	return h.String(), nil
}
