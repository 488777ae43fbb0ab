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
	fh := fileHistory{r: r, trees: r.Trees(), rel: rel, byCommit: map[gitsync.Hash]gitsync.Hash{}}
	out.Complete, err = r.WalkLog(ctx, maxCommits, func(c gitsync.Commit) (bool, error) {
		out.Scanned++
		v, ok, added, err := fh.version(c)
		if err != nil || !ok {
			return false, err
		}
		out.Versions = append(out.Versions, v)
		// The commit that added the file ends the walk.
		return added, nil
	})
	if err != nil {
		return out, fmt.Errorf("history of %s: %w", rel, err)
	}
	return out, nil
}

// fileHistory finds the versions of one file (rel, in memory/) commit by
// commit.
type fileHistory struct {
	r        *gitsync.Repo
	trees    *gitsync.Trees
	rel      string
	byCommit map[gitsync.Hash]gitsync.Hash // commit -> the file's blob (zero: absent)
}

// blobOf is the file's blob at commit c (zero: absent), each commit's
// looked up once: a commit is asked for as itself and as its children's
// parent.
func (fh *fileHistory) blobOf(c gitsync.Commit) (gitsync.Hash, error) {
	if b, ok := fh.byCommit[c.Hash]; ok {
		return b, nil
	}
	b, err := fh.trees.BlobAt(c.Tree, fh.rel)
	if err != nil {
		return gitsync.Hash{}, fmt.Errorf("read %s at %s: %w", fh.rel, c.Hash, err)
	}
	fh.byCommit[c.Hash] = b
	return b, nil
}

// version is the version commit c made of the file: ok is false when c
// made none (the file is as in a parent, or c's line of history never
// had it: another machine's commits before it merged the note, a root
// commit); added reports the commit that added the file.
func (fh *fileHistory) version(c gitsync.Commit) (v Version, ok, added bool, err error) {
	blob, err := fh.blobOf(c)
	if err != nil {
		return v, false, false, err
	}
	changed, inParent, err := fh.againstParents(c, blob)
	if err != nil || !changed || blob.IsZero() && !inParent {
		return v, false, false, err
	}
	v = Version{Commit: c.Hash.String(), Time: c.Time.Format("2006-01-02T15:04:05-07:00"),
		Machine: c.Machine, Subject: subject(c.Message), Deleted: blob.IsZero()}
	if blob.IsZero() {
		return v, true, false, nil
	}
	b, err := fh.r.ReadBlob(blob, maxVersionBytes)
	if err != nil {
		return v, false, false, fmt.Errorf("read %s at %s: %w", fh.rel, c.Hash, err)
	}
	v.Content = string(b)
	return v, true, !inParent, nil
}

// againstParents compares the file's blob at c with its parents': a
// version is a commit whose file differs from every parent's (a merge
// that took one side's version made nothing new). inParent reports that
// some parent has the file.
func (fh *fileHistory) againstParents(c gitsync.Commit, blob gitsync.Hash) (changed, inParent bool, err error) {
	changed = true
	for _, ph := range c.Parents {
		p, err := fh.r.CommitAt(ph)
		if err != nil {
			return false, false, fmt.Errorf("parent %s: %w", ph, err)
		}
		pb, err := fh.blobOf(p)
		if err != nil {
			return false, false, err
		}
		inParent = inParent || !pb.IsZero()
		if pb == blob {
			changed = false
		}
	}
	return changed, inParent, nil
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
