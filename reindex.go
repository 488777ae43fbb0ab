package anamnesis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/go-git/go-git/v5/plumbing"
)

// ReconcileReport says what a reconcile or rebuild changed in the index
// (`reindex --json` prints it as it is).
type ReconcileReport struct {
	Added   int           `json:"added"`
	Updated int           `json:"updated"`
	Deleted int           `json:"deleted"`
	Indexed int           `json:"indexed"` // notes in the index afterwards
	Skipped []SkippedFile `json:"skipped"` // files currently skipped, with reasons
}

type located struct {
	tree note.Tree
	rel  string
}

// walkAll lists every candidate note file of both trees, memory/ first,
// each tree in lexical order (so duplicate ids resolve the same way on
// every run).
func (s *Store) walkAll(ctx context.Context, fn func(note.Tree, note.Entry) error) error {
	for _, t := range []note.Tree{s.memory, s.local} {
		if err := t.Walk(ctx, func(e note.Entry) error { return fn(t, e) }); err != nil {
			return err
		}
	}
	return nil
}

// readChanges reads and parses files on all cores; results keep the
// order of the input.
func (s *Store) readChanges(ctx context.Context, files []located) ([]index.Change, error) {
	out := make([]index.Change, len(files))
	workers := runtime.GOMAXPROCS(0)
	if workers > len(files) {
		workers = len(files)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = s.readChange(files[i].tree, files[i].rel)
			}
		}()
	}
	var err error
	for i := range files {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out, err
}

// Rebuild drops the index and rebuilds it from every note file. One
// rebuild runs at a time: a second waits for the first. A damaged index
// is replaced by a new one (see repairLocked).
func (s *Store) Rebuild(ctx context.Context) (ReconcileReport, error) {
	if err := s.writable("rebuild the index"); err != nil {
		return ReconcileReport{}, err
	}
	lock, err := s.lockRebuild(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	defer lock.Release()
	res, err := s.rebuildInto(ctx, s.ix)
	if index.IsCorrupt(err) {
		return s.repairLocked(ctx, true)
	}
	if err != nil {
		return ReconcileReport{}, s.ix.Explain(err)
	}
	return s.report(ctx, res)
}

// rebuildInto replaces ix's content with every note file and records
// memory/'s HEAD as indexed. The caller holds the rebuild lock (or ix is
// private to it).
func (s *Store) rebuildInto(ctx context.Context, ix *index.Index) (index.Result, error) {
	res, err := ix.RebuildFrom(ctx, func(yield func(index.Change) error) error {
		// The files are listed inside the rebuild's write transaction. A
		// write that indexed its note before the transaction began had
		// written the file first, so the listing holds it; a write after
		// it applies on top of the new tables. (Listing before the
		// transaction lost such notes: the rebuild replaced the tables
		// they had just been indexed into.)
		var files []located
		if err := s.walkAll(ctx, func(t note.Tree, e note.Entry) error {
			files = append(files, located{t, e.Rel})
			return nil
		}); err != nil {
			return err
		}
		return s.produceChanges(ctx, files, yield)
	})
	if err != nil {
		return res, err
	}
	// The rebuild read the worktree, which holds at least HEAD.
	if head, err := s.memoryHead(ctx); err == nil {
		if err := setIndexed(ctx, ix, head); err != nil {
			return res, err
		}
	}
	return res, nil
}

// produceChanges reads files and yields their changes in order, reading
// chunk i+1 on the other cores while chunk i is written (order is kept
// so duplicate ids resolve as the walk orders them).
func (s *Store) produceChanges(ctx context.Context, files []located, yield func(index.Change) error) error {
	const chunk = 256
	chunks := make(chan []index.Change, 2)
	readErr := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for range chunks { // let the reader finish
		}
	}()
	go func() {
		defer close(chunks)
		for i := 0; i < len(files); i += chunk {
			changes, err := s.readChanges(cctx, files[i:min(i+chunk, len(files))])
			if err != nil {
				readErr <- err
				return
			}
			select {
			case chunks <- changes:
			case <-cctx.Done():
				readErr <- cctx.Err()
				return
			}
		}
	}()
	const stage = "rebuilding the index from the note files"
	defer s.progress("", 0, 0)
	s.progressLarge(stage, 0, len(files))
	done := 0
	for changes := range chunks {
		for _, c := range changes {
			if err := yield(c); err != nil {
				return err
			}
		}
		done += len(changes)
		s.progressLarge(stage, done, len(files))
	}
	select {
	case err := <-readErr:
		return err
	default:
		return nil
	}
}

// memoryHead is memory/'s HEAD, or zero when there is no repository yet.
func (s *Store) memoryHead(ctx context.Context) (plumbing.Hash, error) {
	if _, err := os.Stat(filepath.Join(s.memory.Root, ".git")); err != nil {
		return plumbing.ZeroHash, nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Head()
}

// progressLarge reports progress of a batch only when it is large enough
// to take noticeable time (a first index, a big pull); small reconciles
// run on every command and hook and stay silent.
func (s *Store) progressLarge(stage string, done, total int) {
	if total >= 200 {
		s.progress(stage, done, total)
	}
}

// Plan compares the trees with the index's per-file state and returns the
// changes a reconcile would apply. Only files whose size or mtime differ
// from what was indexed are read and hashed.
func (s *Store) Plan(ctx context.Context) ([]index.Change, error) {
	return guarded(ctx, s, func() ([]index.Change, error) { return s.plan(ctx) })
}

func (s *Store) plan(ctx context.Context) ([]index.Change, error) {
	known, err := s.ix.Files(ctx)
	if err != nil {
		return nil, err
	}
	var suspects []located
	seen := make(map[string]bool, len(known))
	if err := s.walkAll(ctx, func(t note.Tree, e note.Entry) error {
		p := note.TreeDir(t.Scope) + "/" + e.Rel
		seen[p] = true
		if f, ok := known[p]; ok && f.Size == e.Size && f.MtimeNS == e.MtimeNS {
			return nil
		}
		suspects = append(suspects, located{t, e.Rel})
		return nil
	}); err != nil {
		return nil, err
	}
	read, err := s.readChanges(ctx, suspects)
	if err != nil {
		return nil, err
	}
	var changes []index.Change
	for _, ch := range read {
		if f, ok := known[ch.File.Path]; ok && ch.File.Hash != "" && f.Hash == ch.File.Hash && f.Error == "" {
			ch = index.Change{File: ch.File, StatOnly: true}
		}
		changes = append(changes, ch)
	}
	var gone []string
	for p := range known {
		if !seen[p] {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		changes = append(changes, index.Change{File: index.File{Path: p}, Delete: true})
	}
	return changes, nil
}

// Reconcile brings the index in line with the files: notes added, edited
// or deleted by hand (or by git) are picked up, unchanged files are not
// read. Paths that differ between the last indexed commit and memory/'s
// HEAD are re-read even if their size and mtime look unchanged. It is
// idempotent and cheap when nothing changed.
func (s *Store) Reconcile(ctx context.Context) (ReconcileReport, error) {
	if err := s.writable("reindex"); err != nil {
		return ReconcileReport{}, err
	}
	return guarded(ctx, s, func() (ReconcileReport, error) { return s.reconcile(ctx) })
}

func (s *Store) reconcile(ctx context.Context) (ReconcileReport, error) {
	changes, err := s.plan(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	// Paths committed since the last indexed commit are re-read even if
	// their size and mtime look unchanged.
	st, err := s.indexedSince(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	if forced := st.changed; len(forced) > 0 {
		planned := map[string]bool{}
		for _, c := range changes {
			planned[c.File.Path] = true
		}
		var files []located
		for _, rel := range forced {
			if p := note.PortableDir + "/" + rel; note.IsNotePath(rel) && !planned[p] {
				if _, _, err := s.memory.ReadFile(rel); err == nil || errors.Is(err, note.ErrMalformed) {
					files = append(files, located{s.memory, rel})
				}
			}
		}
		more, err := s.readChanges(ctx, files)
		if err != nil {
			return ReconcileReport{}, err
		}
		changes = append(changes, more...)
	}
	s.progressLarge("indexing changed note files", 0, len(changes))
	res, err := s.ix.Apply(ctx, changes)
	s.progressLarge("", 0, len(changes))
	if err != nil {
		return ReconcileReport{}, err
	}
	// A file that duplicated an id whose owner just went away can now be
	// indexed in its place.
	for len(res.Freed) > 0 {
		freed := res.Freed
		res.Freed = nil
		dups, err := s.ix.DuplicatesOf(ctx, freed)
		if err != nil {
			return ReconcileReport{}, err
		}
		if len(dups) == 0 {
			break
		}
		var files []located
		for _, p := range dups {
			scope, rel, _ := note.SplitHomePath(p)
			files = append(files, located{s.tree(scope), rel})
		}
		again, err := s.readChanges(ctx, files)
		if err != nil {
			return ReconcileReport{}, err
		}
		more, err := s.ix.Apply(ctx, again)
		if err != nil {
			return ReconcileReport{}, err
		}
		// The duplicates were counted as skipped before; now they are notes.
		res.Skipped -= more.Added + more.Updated
		res.Add(more)
	}
	if !st.current {
		if err := setIndexed(ctx, s.ix, st.head); err != nil {
			return ReconcileReport{}, err
		}
	}
	return s.report(ctx, res)
}

// indexState is where the index stands against memory/'s history. Every
// read and write of the last indexed commit is in this file.
type indexState struct {
	// head is memory/'s HEAD; zero without a repository or commits.
	head plumbing.Hash
	// current: the index records head as indexed.
	current bool
	// known: the index records a commit of head's history, and changed
	// lists the paths that differ between it and head. Otherwise only a
	// full reconcile knows what changed.
	known   bool
	changed []string
}

// indexedSince reads where the index stands. A store without a
// repository yet has no head and nothing known.
func (s *Store) indexedSince(ctx context.Context) (indexState, error) {
	var st indexState
	if _, err := os.Stat(filepath.Join(s.memory.Root, ".git")); err != nil {
		return st, nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return st, err
	}
	if st.head, err = r.Head(); err != nil || st.head.IsZero() {
		return st, err
	}
	last, err := s.lastIndexedCommit(ctx)
	if err != nil {
		return st, err
	}
	if last == st.head.String() {
		st.current, st.known = true, true
		return st, nil
	}
	if last == "" || !r.HasCommit(plumbing.NewHash(last)) {
		return st, nil
	}
	st.changed, err = r.ChangedPaths(plumbing.NewHash(last), st.head)
	st.known = err == nil
	return st, err
}

// lastIndexedCommit is the memory/ commit the index reflects ("" none).
func (s *Store) lastIndexedCommit(ctx context.Context) (string, error) {
	return s.ix.Meta(ctx, index.MetaLastIndexedCommit)
}

// setIndexed records head as the commit ix reflects (ix: the Store's
// index, or a fresh one a rebuild fills).
func setIndexed(ctx context.Context, ix *index.Index, head plumbing.Hash) error {
	if head.IsZero() {
		return nil
	}
	return ix.SetMeta(ctx, index.MetaLastIndexedCommit, head.String())
}

func (s *Store) report(ctx context.Context, res index.Result) (ReconcileReport, error) {
	st, err := s.ix.Stats(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	bad, err := s.ix.BadFiles(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	return ReconcileReport{Added: res.Added, Updated: res.Updated, Deleted: res.Deleted, Indexed: st.Total, Skipped: skippedFiles(bad)}, nil
}

// advanceIndexedCommit records head as indexed when the index already
// reflected before: the commit in between only contained files the index
// has seen.
func (s *Store) advanceIndexedCommit(ctx context.Context, before, head plumbing.Hash) error {
	last, err := s.lastIndexedCommit(ctx)
	if err != nil {
		return err
	}
	if last == "" || last == before.String() {
		return setIndexed(ctx, s.ix, head)
	}
	return nil
}

// reindexSince applies exactly the memory/ paths that differ between the
// last indexed commit and HEAD, then records HEAD. Without a usable last
// indexed commit it falls back to a full reconcile.
func (s *Store) reindexSince(ctx context.Context) (index.Result, error) {
	st, err := s.indexedSince(ctx)
	switch {
	case err != nil:
		return index.Result{}, err
	case st.current:
		return index.Result{}, nil
	case !st.known:
		rep, err := s.Reconcile(ctx)
		return index.Result{Added: rep.Added, Updated: rep.Updated, Deleted: rep.Deleted}, err
	}
	res, err := s.applyPaths(ctx, st.changed)
	if err != nil {
		return res, err
	}
	return res, setIndexed(ctx, s.ix, st.head)
}

// applyPaths re-reads the given memory/ paths (relative to memory/) and
// applies them: present files are upserted, missing ones deleted.
func (s *Store) applyPaths(ctx context.Context, rels []string) (index.Result, error) {
	var files []located
	var changes []index.Change
	for _, rel := range rels {
		if !note.IsNotePath(rel) {
			continue
		}
		if _, _, err := s.memory.ReadFile(rel); err != nil && !errors.Is(err, note.ErrMalformed) {
			changes = append(changes, index.Change{File: index.File{Path: note.PortableDir + "/" + rel}, Delete: true})
			continue
		}
		files = append(files, located{s.memory, rel})
	}
	read, err := s.readChanges(ctx, files)
	if err != nil {
		return index.Result{}, err
	}
	for i := range read {
		// What a sync merged in came from the other machines: a session
		// under way is shown it with its next prompt (Store.Arrived).
		read[i].Arrived = true
	}
	changes = append(read, changes...)
	if len(changes) == 0 {
		return index.Result{}, nil
	}
	s.progressLarge("indexing changed note files", 0, len(changes))
	res, err := s.ix.Apply(ctx, changes)
	s.progressLarge("", 0, len(changes))
	if err != nil {
		return res, err
	}
	if len(res.Freed) > 0 {
		// A duplicate of a removed id may now be indexable: let a
		// reconcile settle it (cheap: only stat changes are read).
		if _, err := s.Reconcile(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}
