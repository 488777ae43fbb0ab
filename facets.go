package anamnesis

import (
	"context"

	"github.com/anamnesis-memory/anamnesis/index"
)

// Counting notes by filter, without reading them: what a browser of the
// store (the web UI) shows beside its filters.

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
