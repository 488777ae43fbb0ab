package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Version is one state of a note file in memory/'s history: the commit
// that produced it, who made that commit, and the file as it was.
type Version struct {
	Commit  string `json:"commit"`
	Time    string `json:"time"`    // committer time, RFC 3339
	Machine string `json:"machine"` // from the author, anamnesis@MACHINE
	Subject string `json:"subject"`
	// Content is the file at this commit; Deleted says the commit removed
	// it (Content is then empty).
	Content string `json:"content"`
	Deleted bool   `json:"deleted,omitempty"`
}

// History is a note's versions, newest first.
type History struct {
	Path     string    `json:"path"`
	Versions []Version `json:"versions"`
	// Complete says the walk reached the commit that added the file; it
	// is false when it stopped after maxCommits commits, or for a note
	// that is not under git (machine-local, no repository yet).
	Complete bool `json:"complete"`
	// Scanned counts the commits looked at.
	Scanned int `json:"scanned"`
}

// History returns the versions of note id's file in memory/'s git
// history, newest first, looking at no more than maxCommits commits
// (newest by committer time first; <= 0: 5,000). A machine-local note,
// or a store without a repository, has no history.
//
// The walk stops at the commit that added the file. A note's file lives
// in its type's directory, which holds a third of the store, so each
// commit's entry is found through the directory's tree hash: a commit
// that left the directory alone (the common case) costs no tree decoding.
func (s *Store) History(ctx context.Context, id string, maxCommits int) (History, error) {
	if !note.ValidID(id) {
		return History{}, fmt.Errorf("%q: %w", id, ErrInvalidID)
	}
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, id) })
	if errors.Is(err, index.ErrNotFound) {
		return History{}, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return History{}, err
	}
	out := History{Path: h.Path, Versions: []Version{}}
	scope, rel, _ := note.SplitHomePath(h.Path)
	if scope != note.ScopePortable {
		return out, nil
	}
	if !s.hasRepo() {
		return out, nil
	}
	if maxCommits <= 0 {
		maxCommits = 5000
	}
	r, err := s.repo(ctx)
	if err != nil {
		return out, err
	}
	trees := r.Trees()
	byCommit := map[gitsync.Hash]gitsync.Hash{} // commit -> the file's blob (zero: absent)
	blobOf := func(c gitsync.Commit) (gitsync.Hash, error) {
		if b, ok := byCommit[c.Hash]; ok {
			return b, nil
		}
		b, err := trees.BlobAt(c.Tree, rel)
		if err != nil {
			return gitsync.Hash{}, fmt.Errorf("read %s at %s: %w", rel, c.Hash, err)
		}
		byCommit[c.Hash] = b
		return b, nil
	}
	out.Complete, err = r.WalkLog(ctx, maxCommits, func(c gitsync.Commit) (bool, error) {
		out.Scanned++
		blob, err := blobOf(c)
		if err != nil {
			return false, err
		}
		// A version is a commit whose file differs from every parent's:
		// a merge that took one side's version made nothing new.
		changed, inParent := true, false
		for _, ph := range c.Parents {
			p, err := r.CommitAt(ph)
			if err != nil {
				return false, fmt.Errorf("parent %s: %w", ph, err)
			}
			pb, err := blobOf(p)
			if err != nil {
				return false, err
			}
			inParent = inParent || !pb.IsZero()
			if pb == blob {
				changed = false
			}
		}
		if !changed || blob.IsZero() && !inParent {
			// Unchanged, or a commit on a line of history that never had
			// the file (another machine's commits before it merged the
			// note, a root commit): no version.
			return false, nil
		}
		v := Version{Commit: c.Hash.String(), Time: c.Time.Format("2006-01-02T15:04:05-07:00"),
			Machine: c.Machine, Subject: subject(c.Message), Deleted: blob.IsZero()}
		if !blob.IsZero() {
			b, err := r.ReadBlob(blob, maxVersionBytes)
			if err != nil {
				return false, fmt.Errorf("read %s at %s: %w", rel, c.Hash, err)
			}
			v.Content = string(b)
		}
		out.Versions = append(out.Versions, v)
		// The commit that added the file ends the walk.
		return !blob.IsZero() && !inParent, nil
	})
	if err != nil {
		return out, fmt.Errorf("history of %s: %w", rel, err)
	}
	return out, nil
}

// maxVersionBytes bounds what a version's content reads of its blob.
const maxVersionBytes = 4 << 20

// MachineActivity is what memory/'s history and the index say about one
// machine.
type MachineActivity struct {
	Machine string `json:"machine"`
	// Notes counts the indexed notes written there (their machine_id).
	Notes int `json:"notes"`
	// Commits counts its commits among those scanned; LastCommit is the
	// newest one's committer time and subject.
	Commits     int    `json:"commits"`
	LastCommit  string `json:"last_commit,omitempty"`
	LastSubject string `json:"last_subject,omitempty"`
	// LastMerge is the time of its newest merge commit: the last time it
	// synced and found other machines' work to merge (a sync that had
	// nothing to merge leaves no commit).
	LastMerge string `json:"last_merge,omitempty"`
	// This marks this machine.
	This bool `json:"this,omitempty"`
}

// Fleet lists every machine seen in the newest maxCommits commits of
// memory/ (<= 0: 2,000) or as the writer of an indexed note, most recent
// commit first, and says whether the whole history was scanned.
func (s *Store) Fleet(ctx context.Context, maxCommits int) (machines []MachineActivity, complete bool, err error) {
	if maxCommits <= 0 {
		maxCommits = 2000
	}
	facets, err := guarded(ctx, s, func() ([]index.FacetRow, error) { return s.idx().Facets(ctx) })
	if err != nil {
		return nil, false, err
	}
	notes := map[string]int{}
	for _, f := range facets {
		notes[f.MachineID] += f.Notes
	}
	by := map[string]*MachineActivity{}
	get := func(m string) *MachineActivity {
		if a := by[m]; a != nil {
			return a
		}
		a := &MachineActivity{Machine: m, This: m == s.machineID}
		by[m] = a
		return a
	}
	for m, n := range notes {
		get(m).Notes = n
	}
	get(s.machineID)
	complete = true
	if s.hasRepo() {
		r, err := s.repo(ctx)
		if err != nil {
			return nil, false, err
		}
		if complete, err = r.WalkLog(ctx, maxCommits, func(c gitsync.Commit) (bool, error) {
			countCommit(c, get)
			return false, nil
		}); err != nil {
			return nil, false, err
		}
	}
	for _, a := range by {
		machines = append(machines, *a)
	}
	sort.Slice(machines, func(i, j int) bool {
		a, b := machines[i], machines[j]
		if a.LastCommit != b.LastCommit {
			return a.LastCommit > b.LastCommit
		}
		return a.Machine < b.Machine
	})
	return machines, complete, nil
}

// countCommit adds one commit to its machine's activity (the walk is
// newest first, so the first commit seen of a machine is its last).
func countCommit(c gitsync.Commit, get func(string) *MachineActivity) {
	a := get(c.Machine) // a commit made by hand: its email, still a writer
	a.Commits++
	when := c.Time.UTC().Format("2006-01-02T15:04:05Z")
	if a.LastCommit == "" {
		a.LastCommit, a.LastSubject = when, subject(c.Message)
	}
	if len(c.Parents) > 1 && a.LastMerge == "" {
		a.LastMerge = when
	}
}

// subjectRunes bounds a commit's subject as the history reports it: the
// message comes from any machine of the fleet.
const subjectRunes = 150

// subject is a commit message's first line, clipped at a word.
func subject(msg string) string {
	return textfmt.Clip(textfmt.FirstLine(msg), subjectRunes)
}
