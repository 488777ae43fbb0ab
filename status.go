package anamnesis

import (
	"context"

	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
)

// Status is the store's state as `anamnesis status --json` reports it.
type Status struct {
	Home  string      `json:"home"`
	Notes NoteCounts  `json:"notes"`
	Index IndexStatus `json:"index"`
	Sync  SyncStatus  `json:"sync"`
	// Native counts the notes imported from Claude Code's auto memory, per
	// project and the machine whose Claude wrote them.
	Native []index.SourceCount `json:"native"`
	// Vectors says how far the semantic leg is; absent without an embedder.
	Vectors *VectorStatus `json:"vectors,omitempty"`
	// Consolidation is today's model use by `consolidate` on this machine
	// and the proposals waiting for review.
	Consolidation ConsolidationStatus `json:"consolidation"`
}

// ConsolidationStatus is what `status` shows of consolidation.
type ConsolidationStatus struct {
	Today   consolidate.Spent `json:"today"`
	Pending int               `json:"pending"`
}

// NoteCounts counts indexed notes.
type NoteCounts struct {
	Total     int            `json:"total"`
	ByType    map[string]int `json:"by_type"`
	ByScope   map[string]int `json:"by_scope"`
	ByProject map[string]int `json:"by_project"`
}

// IndexStatus describes the derived index.
type IndexStatus struct {
	Path              string        `json:"path"`
	Notes             int           `json:"notes"`
	LastIndexedCommit string        `json:"last_indexed_commit"`
	Skipped           []SkippedFile `json:"skipped"`
}

// SkippedFile is a note file that is not indexed, and why.
type SkippedFile struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// SyncStatus describes memory/'s git state.
type SyncStatus struct {
	Remote         string   `json:"remote"` // redacted: no password or token
	Head           string   `json:"head"`
	Dirty          bool     `json:"dirty"`
	ConflictCopies []string `json:"conflict_copies"`
	// Conflicts are the unresolved conflicts: notes with conflict copies,
	// and notes superseded by two live notes (`anamnesis resolve`).
	Conflicts []Conflict `json:"conflicts"`
	Tailnet   string     `json:"tailnet"` // tailscaled's state as this machine sees it
}

// Status reports counts, index state and sync state. It reads the index
// only; run Reconcile first to account for edits made outside anamnesis.
func (s *Store) Status(ctx context.Context) (Status, error) {
	var st index.Stats
	var last string
	var bad []index.File
	var copies []string
	var native []index.SourceCount
	err := s.guard(ctx, func() (err error) {
		if native, err = s.idx().CountBySource(ctx, NativeSource); err != nil {
			return err
		}
		if st, err = s.idx().Stats(ctx); err != nil {
			return err
		}
		if last, err = s.lastIndexedCommit(ctx); err != nil {
			return err
		}
		if bad, err = s.idx().BadFiles(ctx); err != nil {
			return err
		}
		copies, err = s.conflictCopies(ctx)
		return err
	})
	if err != nil {
		return Status{}, err
	}
	if copies == nil {
		copies = []string{}
	}
	conflicts, err := s.Conflicts(ctx)
	if err != nil {
		return Status{}, err
	}
	if conflicts == nil {
		conflicts = []Conflict{}
	}
	out := Status{
		Home:   s.home,
		Notes:  NoteCounts{Total: st.Total, ByType: st.ByType, ByScope: st.ByScope, ByProject: st.ByProject},
		Index:  IndexStatus{Path: s.idx().Path(), Notes: st.Total, LastIndexedCommit: last, Skipped: skippedFiles(bad)},
		Sync:   SyncStatus{Remote: gitsync.Redact(s.Remote()), ConflictCopies: copies, Conflicts: conflicts},
		Native: native,
	}
	if out.Native == nil {
		out.Native = []index.SourceCount{}
	}
	if out.Vectors, err = s.Vectors(ctx); err != nil {
		return Status{}, err
	}
	if err := s.repoState(ctx, &out.Sync); err != nil {
		return Status{}, err
	}
	out.Sync.Tailnet = s.tailnetSummary(ctx).Text
	if out.Consolidation, err = s.consolidationStatus(); err != nil {
		return Status{}, err
	}
	return out, nil
}

// repoState fills in memory/'s head and whether its work tree has
// changes to commit (nothing before it is a repository).
func (s *Store) repoState(ctx context.Context, sync *SyncStatus) error {
	if !s.hasRepo() {
		return nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return err
	}
	head, err := r.Head()
	if err != nil {
		return err
	}
	if !head.IsZero() {
		sync.Head = head.String()
	}
	sync.Dirty, err = r.Dirty()
	return err
}

// consolidationStatus is today's use of the consolidation budget and the
// number of proposals pending review.
func (s *Store) consolidationStatus() (ConsolidationStatus, error) {
	today, err := (&consolidate.Budget{Path: s.ConsolidateBudgetPath(), Now: s.now}).Today()
	if err != nil {
		return ConsolidationStatus{}, err
	}
	pending, err := s.PendingProposals()
	if err != nil {
		return ConsolidationStatus{}, err
	}
	return ConsolidationStatus{Today: today, Pending: len(pending)}, nil
}

// TailscaleSocket is tailscaled's socket for this store: the option
// (flag or environment), else config.json's tailscale_socket, else ""
// (the system's).
func (s *Store) TailscaleSocket() string {
	if s.tsSocket != "" {
		return s.tsSocket
	}
	return s.config.TailscaleSocket
}

func skippedFiles(bad []index.File) []SkippedFile {
	out := make([]SkippedFile, 0, len(bad))
	for _, f := range bad {
		out = append(out, SkippedFile{Path: f.Path, Error: f.Error})
	}
	return out
}

// IndexState is the index part of Status: its file, note count, last
// indexed commit and the files it could not index, without the cost of a
// full Status (which also asks git whether memory/ is dirty: 56 ms at
// 10,000 notes).
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
