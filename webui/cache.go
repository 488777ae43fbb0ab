package webui

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/note"
)

// slowCache holds what takes too long to compute for a page: doctor's
// findings (its integrity check and postings comparison take 0.3 s at
// 10,000 notes) and the tailnet's peers (each probed with a timeout).
// The fleet page shows the last answer with its time and starts a new
// check in the background when it is older than slowMaxAge.
type slowCache struct {
	mu   sync.Mutex
	last slowSnapshot // At zero: never checked
}

const slowMaxAge = 2 * time.Minute

// slowSnapshot is the last check, as the fleet page shows it.
type slowSnapshot struct {
	Running  bool
	At       time.Time // when the last check finished
	Checks   []anamnesis.Check
	Tailnet  *Tailnet
	TailErr  string
	Duration time.Duration
}

func (c *slowCache) snapshot() slowSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// refreshSlow starts a check unless one runs; wait makes the caller wait
// for it (the benchmark and tests).
func (s *Server) refreshSlow(wait bool) {
	c := &s.slow
	c.mu.Lock()
	if c.last.Running {
		c.mu.Unlock()
		return
	}
	c.last.Running = true
	c.mu.Unlock()
	run := func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(s.baseCtx, time.Minute)
		defer cancel()
		checks := s.st.Doctor(ctx, s.opts.Install)
		var tn *Tailnet
		var tailErr string
		if s.opts.Tailnet != nil {
			t, err := s.opts.Tailnet(ctx)
			if err != nil {
				tailErr = err.Error()
			} else {
				tn = &t
			}
		}
		c.mu.Lock()
		c.last = slowSnapshot{At: s.opts.Now(), Checks: checks, Tailnet: tn, TailErr: tailErr, Duration: time.Since(start)}
		c.mu.Unlock()
	}
	if wait {
		run()
		return
	}
	go run()
}

type fleetData struct {
	Machines []machineRow
	Complete bool
}

// machineRow is a machine with its last sync as far as this machine can
// tell: another machine's commit that is here was pushed by a sync of
// its own after it was made, and a merge commit is a sync; this
// machine's own come from its sync log.
type machineRow struct {
	anamnesis.MachineActivity
	LastSync string // RFC 3339, "" when nothing says
	SyncHow  string // where LastSync comes from
}

// versions brings the version index to main's head and returns it
// locked (the caller unlocks v.mu), or nil while its first build runs in
// the background (the page says the history is being indexed). Commits
// that arrived since the last page are added here: one commit costs the
// directories it touched, a few milliseconds.
func (s *Server) versions(ctx context.Context) (*versionIndex, error) {
	v := s.vers
	s.versMu.Lock()
	building := s.versBuilding
	s.versMu.Unlock()
	if building {
		return nil, nil
	}
	head, err := s.st.Head(ctx)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if err := v.update(ctx, head, true); err != nil {
		v.mu.Unlock()
		return nil, fmt.Errorf("index the history: %w", err)
	}
	if v.repo == nil { // no repository: nothing to show
		v.mu.Unlock()
		return nil, nil
	}
	return v, nil
}

// buildVersions brings the kept index up to date (or builds it, about
// 2 ms a commit) in the background, so no page waits for it.
func (s *Server) buildVersions() {
	s.versMu.Lock()
	s.versBuilding = true
	s.versMu.Unlock()
	go func() {
		defer func() {
			s.versMu.Lock()
			s.versBuilding = false
			s.versMu.Unlock()
			close(s.versDone)
		}()
		head, err := s.st.Head(s.baseCtx)
		v := s.vers
		v.mu.Lock()
		defer v.mu.Unlock()
		if err == nil {
			// A failure is not kept: the next page tries again and shows it.
			_ = v.update(s.baseCtx, head, false)
		}
	}()
}

// waitVersions waits for the first build (tests, the benchmark).
func (s *Server) waitVersions() {
	<-s.versDone
}

func (s *Server) fleetOf(ctx context.Context) (*fleetData, error) {
	f, err := s.facets(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]*anamnesis.MachineActivity{}
	get := func(m string) *anamnesis.MachineActivity {
		if a := by[m]; a != nil {
			return a
		}
		a := &anamnesis.MachineActivity{Machine: m, This: m == s.st.MachineID()}
		by[m] = a
		return a
	}
	for m, n := range f.ByMachine {
		get(m).Notes = n
	}
	get(s.st.MachineID())
	v, err := s.versions(ctx)
	if err != nil {
		return nil, err
	}
	complete := v != nil
	if v != nil {
		v.machines(get)
		v.mu.Unlock()
	}
	out := &fleetData{Complete: complete}
	mine := s.syncState()
	for _, a := range by {
		out.Machines = append(out.Machines, rowOf(*a, mine))
	}
	sort.Slice(out.Machines, func(i, j int) bool {
		a, b := out.Machines[i], out.Machines[j]
		if a.LastCommit != b.LastCommit {
			return a.LastCommit > b.LastCommit
		}
		return a.Machine < b.Machine
	})
	return out, nil
}

// rowOf is machine a's row: when it last synced, as far as this machine
// can tell, and how it can tell: this machine's sync log (mine), else
// its last merge; another machine's last merge or newest commit,
// whichever is later.
func rowOf(a anamnesis.MachineActivity, mine syncState) machineRow {
	row := machineRow{MachineActivity: a}
	switch {
	case a.This && !mine.At.IsZero():
		row.LastSync, row.SyncHow = mine.At.UTC().Format(time.RFC3339), "sync log"
		if mine.Failed {
			row.SyncHow = "sync log: it failed"
		}
	case a.This && a.LastMerge != "":
		row.LastSync, row.SyncHow = a.LastMerge, "its last merge"
	case !a.This && a.LastMerge > a.LastCommit:
		row.LastSync, row.SyncHow = a.LastMerge, "its last merge"
	case !a.This && a.LastCommit != "":
		row.LastSync, row.SyncHow = a.LastCommit, "its newest commit that reached here"
	}
	return row
}

// historyOf is note id's versions from the version index; building
// says the index is not ready yet. total counts every version, of which
// History holds limit+1 from the from-th.
func (s *Server) historyOf(ctx context.Context, path string, from, limit int) (h anamnesis.History, total int, building bool, err error) {
	h = anamnesis.History{Path: path, Versions: []anamnesis.Version{}}
	ran, err := s.withVersions(ctx, path, func(v *versionIndex, rel string) (err error) {
		h, total, err = v.history(rel, from, limit)
		return err
	})
	if err == nil && !ran {
		if scope, _, _ := note.SplitHomePath(path); scope == note.ScopePortable {
			s.versMu.Lock()
			building = s.versBuilding
			s.versMu.Unlock()
		}
	}
	return h, total, building, err
}

// withVersions runs fn with the version index, locked, and the path of a
// portable note inside memory/; ran is false when there is nothing to run
// it on (a machine-local note, no repository, the index still building).
func (s *Server) withVersions(ctx context.Context, path string, fn func(v *versionIndex, rel string) error) (ran bool, err error) {
	scope, rel, _ := note.SplitHomePath(path)
	if scope != note.ScopePortable {
		return false, nil
	}
	v, err := s.versions(ctx)
	if err != nil || v == nil {
		return false, err
	}
	defer v.mu.Unlock()
	return true, fn(v, rel)
}

// facetsMaxAge is how long the filters' counts are reused. They change
// with the index, which other processes (syncs, hooks) change without a
// sign this server can read cheaply; counts in a drop-down a few seconds
// old are harmless, and this server's own writes clear them at once.
const facetsMaxAge = 10 * time.Second

type facetsCache struct {
	mu   sync.Mutex
	at   time.Time
	rows []anamnesis.FacetRow
}

// facetRows is the index's counts per combination of type, scope,
// project, machine and source, at most facetsMaxAge old.
func (s *Server) facetRows(ctx context.Context) ([]anamnesis.FacetRow, error) {
	c := &s.facetsC
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && s.opts.Now().Sub(c.at) < facetsMaxAge {
		return c.rows, nil
	}
	rows, err := s.st.FacetRows(ctx)
	if err != nil {
		return nil, err
	}
	c.rows, c.at = rows, s.opts.Now()
	return rows, nil
}

// facets counts every note by each column.
func (s *Server) facets(ctx context.Context) (anamnesis.Facets, error) {
	return s.facetsWithin(ctx, anamnesis.Filter{})
}

// facetsWithin counts the notes by each column within the other active
// filters: with type=semantic set, the projects list counts semantic
// notes, while the types list still counts every type (within the other
// filters), so choosing another type shows what it would give. ("hide
// superseded" is not a column of the counts: they include superseded
// notes.)
func (s *Server) facetsWithin(ctx context.Context, f anamnesis.Filter) (anamnesis.Facets, error) {
	rows, err := s.facetRows(ctx)
	if err != nil {
		return anamnesis.Facets{}, err
	}
	return countFacets(rows, f), nil
}

// countFacets is facetsWithin over the index's rows.
func countFacets(rows []anamnesis.FacetRow, f anamnesis.Filter) anamnesis.Facets {
	out := anamnesis.Facets{ByType: map[string]int{}, ByScope: map[string]int{}, ByProject: map[string]int{},
		ByMachine: map[string]int{}, BySource: map[string]int{}}
	// The five columns, in one order: what the filter wants ("" for
	// anything) and the counts of each value.
	want := [...]string{f.Type, f.Scope, f.Project, f.MachineID, f.ProvSource}
	counts := [...]map[string]int{out.ByType, out.ByScope, out.ByProject, out.ByMachine, out.BySource}
	for _, r := range rows {
		got := [...]string{r.Type, r.Scope, r.Project, r.MachineID, r.ProvSource}
		misses, missed := 0, 0
		for c := range want {
			if want[c] != "" && want[c] != got[c] {
				misses, missed = misses+1, c
			}
		}
		// A column counts the rows that match every other column: a
		// row that matches all counts in each, and in the total; a row
		// that misses one column counts only there (choosing its value
		// instead would give it); a row that misses two counts nowhere.
		switch misses {
		case 0:
			out.Total += r.Notes
			for c := range counts {
				counts[c][got[c]] += r.Notes
			}
		case 1:
			counts[missed][got[missed]] += r.Notes
		}
	}
	// A value chosen in a filter stays in its list even at zero, so the
	// select still shows it.
	for c, v := range want {
		if v != "" {
			counts[c][v] += 0
		}
	}
	return out
}

func (s *Server) forgetFacets() {
	s.facetsC.mu.Lock()
	s.facetsC.at = time.Time{}
	s.facetsC.rows = nil
	s.facetsC.mu.Unlock()
}

// versionAt is the version of the note file at path that commit made.
func (s *Server) versionAt(ctx context.Context, path, commit string) (ver anamnesis.Version, found bool, err error) {
	_, err = s.withVersions(ctx, path, func(v *versionIndex, rel string) (err error) {
		ver, found, err = v.at(rel, commit)
		return err
	})
	return ver, found, err
}
