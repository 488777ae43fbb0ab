package anamnesis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/parallel"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ReconcileReport says what a reconcile or rebuild changed in the index
// (`reindex --json` prints it as it is).
type ReconcileReport struct {
	Added   int           `json:"added"`
	Updated int           `json:"updated"`
	Deleted int           `json:"deleted"`
	Indexed int           `json:"indexed"` // notes in the index afterwards
	Skipped []SkippedFile `json:"skipped"` // files currently skipped, with reasons
	// Duplicates: ids more than one file claims (those files are among
	// Skipped too, all but the one indexed).
	Duplicates []DuplicateID `json:"duplicates"`
}

// DuplicateID is a note id claimed by more than one file: one note, the
// one indexed from IndexedFrom (chosen by ownerOf), and files that are
// not indexed because they carry the same id.
type DuplicateID struct {
	ID          string   `json:"id"`
	IndexedFrom string   `json:"indexed_from"`
	NotIndexed  []string `json:"not_indexed"`
}

// duplicateIDs lists the ids several files claim, by id, from the index's
// skipped files.
func duplicateIDs(ctx context.Context, ix *index.Index, bad []index.File) ([]DuplicateID, error) {
	var ids []string
	for _, f := range bad {
		if f.NoteID != "" && strings.HasPrefix(f.Error, "duplicate id ") {
			ids = append(ids, f.NoteID)
		}
	}
	claims, err := ix.Claimants(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := []DuplicateID{}
	for id, paths := range claims {
		if len(paths) > 1 {
			out = append(out, DuplicateID{ID: id, IndexedFrom: paths[0], NotIndexed: paths[1:]})
		}
	}
	slices.SortFunc(out, func(a, b DuplicateID) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// duplicatesCheck is doctor's row for duplicate ids, naming every file.
func (s *Store) duplicatesCheck(ctx context.Context, bad []index.File) (Check, bool) {
	dups, err := duplicateIDs(ctx, s.idx(), bad)
	if err != nil {
		return Check{Name: "duplicate ids", State: CheckProblem, Detail: s.idx().Explain(err).Error(), Fix: "run `anamnesis reindex --full`"}, true
	}
	if len(dups) == 0 {
		return Check{}, false
	}
	c := Check{Name: "duplicate ids", State: CheckWarn,
		Detail: fmt.Sprintf("%s claimed by more than one file; only the file first in memory/'s history (or in local/) is indexed", textfmt.Count(len(dups), "note id is", "note ids are")),
		Fix:    "look at both files: delete the one that should not be there, or give it a new id (`anamnesis write` its text again), then run `anamnesis reindex`"}
	for _, d := range dups {
		c.Items = append(c.Items, fmt.Sprintf("%s: indexed from %s, also claimed by %s", d.ID, d.IndexedFrom, strings.Join(d.NotIndexed, ", ")))
	}
	return c, true
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
	err := parallel.For(ctx, len(files), runtime.GOMAXPROCS(0), func(i int) {
		out[i] = s.readChange(files[i].tree, files[i].rel)
	})
	return out, err
}

// rebuildInto replaces ix's content with every note file and records
// memory/'s HEAD as indexed. The caller holds the rebuild lock (or ix is
// private to it).
func (s *Store) rebuildInto(ctx context.Context, ix *index.Index) (index.Result, error) {
	return s.buildInto(ctx, ix, "rebuilding the index from the note files", false)
}

// buildInto is rebuildInto, reporting progress as stage; arrived marks the notes of memory/ that other
// machines wrote as arrivals (index.Change.Arrived), as a reconcile after
// a sync does. The build is index.RebuildFrom's: one transaction, so a
// build that is killed leaves the index it started from, and memory that
// does not grow with the store (files are read in chunks as they are
// written, postings written as they fill).
func (s *Store) buildInto(ctx context.Context, ix *index.Index, stage string, arrived bool) (index.Result, error) {
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
		if !arrived {
			return s.produceChanges(ctx, files, stage, yield)
		}
		return s.produceChanges(ctx, files, stage, func(c index.Change) error {
			c.Arrived = s.arrivedFromSync(c)
			return yield(c)
		})
	})
	if err != nil {
		return res, err
	}
	if _, err := s.settleDuplicates(ctx, ix, res.Duplicates); err != nil {
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

// arrivedFromSync reports whether c, read after a sync, is a note another
// machine wrote into memory/.
func (s *Store) arrivedFromSync(c index.Change) bool {
	return c.Note != nil && !c.Delete && !c.StatOnly &&
		strings.HasPrefix(c.File.Path, note.PortableDir+"/") && c.Note.MachineID != s.machineID
}

// firstIndex fills an index that records no file yet (a machine's first
// sync, which brought the whole store) with the bulk build a rebuild
// uses rather than a reconcile: a reconcile holds every changed note, and
// every posting, until its one Apply, which took 900 MB for a clone of
// 100,000 notes. It goes through [Store.rebuild], the one owner of
// rebuilds. done is false when the index had files: the caller
// reconciles as usual.
func (s *Store) firstIndex(ctx context.Context) (res index.Result, done bool, err error) {
	empty := func(ctx context.Context) (indexHealth, error) {
		has, err := s.idx().HasFiles(ctx)
		if err != nil || has {
			return indexHealthy, err
		}
		return indexMissing, nil
	}
	if h, err := empty(ctx); err != nil || h == indexHealthy {
		return res, false, err
	}
	// recheck: another process may have indexed files while this one
	// waited for the rebuild lock; then the caller reconciles.
	indexed := false
	res, err = s.rebuild(ctx, rebuildRequest{found: indexMissing, asked: true, firstSync: true,
		recheck: func(ctx context.Context) (indexHealth, error) {
			h, err := empty(ctx)
			indexed = h == indexHealthy
			return h, err
		}})
	return res, err == nil && !indexed, err
}

// produceChanges reads files and yields their changes in order, reading
// chunk i+1 on the other cores while chunk i is written (order is kept
// so duplicate ids resolve as the walk orders them).
func (s *Store) produceChanges(ctx context.Context, files []located, stage string, yield func(index.Change) error) error {
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
func (s *Store) memoryHead(ctx context.Context) (gitsync.Hash, error) {
	if !s.hasRepo() {
		return gitsync.Hash{}, nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return gitsync.Hash{}, err
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
	walked, err := s.walkNotes(ctx)
	if err != nil {
		return nil, err
	}
	if same, err := s.unchanged(ctx, walked); same || err != nil {
		return nil, err
	}
	gen, err := s.idx().FilesGen(ctx) // before the rows: see index.StatCache
	if err != nil {
		return nil, err
	}
	known, err := s.idx().Files(ctx)
	if err != nil {
		return nil, err
	}
	suspects, gone := compareStats(walked, known)
	if len(suspects) == 0 && len(gone) == 0 {
		return nil, s.saveStatCache(ctx, gen, known)
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
	for _, p := range gone {
		changes = append(changes, index.Change{File: index.File{Path: p}, Delete: true})
	}
	return changes, nil
}

// saveStatCache records, when nothing changed, what index_files holds as
// what the next reconcile will find, so that it can compare with one row.
// It is an index write: a read-only home (doctor plans there too) skips it.
func (s *Store) saveStatCache(ctx context.Context, gen int64, known map[string]index.File) error {
	if s.readOnly {
		return nil
	}
	return s.idx().SaveStatCache(ctx, gen, known)
}

// walkNotes lists every note file of both trees, in walkAll's order.
func (s *Store) walkNotes(ctx context.Context) ([]walkedTree, error) {
	var walked []walkedTree
	for _, t := range []note.Tree{s.memory, s.local} {
		entries, err := t.List(ctx)
		if err != nil {
			return nil, err
		}
		walked = append(walked, walkedTree{t, entries})
	}
	return walked, nil
}

// compareStats returns the walked files whose size or mtime differ from
// what the index recorded (or that it does not know), and the recorded
// paths no longer there, sorted.
func compareStats(walked []walkedTree, known map[string]index.File) (suspects []located, gone []string) {
	seen := make(map[string]bool, len(known))
	for _, w := range walked {
		for _, e := range w.entries {
			p := note.TreeDir(w.tree.Scope) + "/" + e.Rel
			seen[p] = true
			if f, ok := known[p]; !ok || f.Size != e.Size || f.MtimeNS != e.MtimeNS {
				suspects = append(suspects, located{w.tree, e.Rel})
			}
		}
	}
	for p := range known {
		if !seen[p] {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	return suspects, gone
}

// unchanged reports whether every note file has the size and mtime the
// index's stat cache records for it, and no file it records is gone: then
// a reconcile has nothing to read (and nothing to apply). Without a
// current stat cache it reports false.
//
// Size and mtime decide, as they do in plan: an editor that writes a
// file in place changes its mtime (the kernel sets it on every write),
// one that writes a new file and renames it changes it too. What they
// cannot see is a rewrite to the same size within the same tick of the
// file system's clock as the write before it, after that write was
// indexed; git's index has the same blind spot ("racy git"). The cache
// adds none: it holds exactly the sizes and mtimes index_files holds.
func (s *Store) unchanged(ctx context.Context, walked []walkedTree) (bool, error) {
	cache, err := s.idx().LoadStatCache(ctx)
	if cache == nil || err != nil {
		return false, err
	}
	// In path order (local/ before memory/, each tree's walk in order),
	// the order the cache is saved in: see index.StatCache.
	byPath := slices.SortedFunc(slices.Values(walked), func(a, b walkedTree) int {
		return strings.Compare(note.TreeDir(a.tree.Scope), note.TreeDir(b.tree.Scope))
	})
	var buf []byte
	for _, w := range byPath {
		dir := note.TreeDir(w.tree.Scope)
		for _, e := range w.entries {
			buf = append(append(append(buf[:0], dir...), '/'), e.Rel...)
			if !cache.Same(buf, e.Size, e.MtimeNS) {
				return false, nil
			}
		}
	}
	return cache.AllSeen(), nil
}

// walkedTree is a tree's note files as a walk found them.
type walkedTree struct {
	tree    note.Tree
	entries []note.Entry
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
	return guarded(ctx, s, func() (ReconcileReport, error) { return s.reconcile(ctx, false) })
}

// reconcile applies what changed on disk. fromSync marks the notes of
// memory/ that other machines wrote as arrivals (index.Change.Arrived):
// a sync falls back to it when the index knows no earlier commit (a
// machine's first sync), and a session open meanwhile must still be
// shown what came in.
func (s *Store) reconcile(ctx context.Context, fromSync bool) (ReconcileReport, error) {
	changes, err := s.plan(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	st, err := s.indexedSince(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	if changes, err = s.addCommitted(ctx, st, changes); err != nil {
		return ReconcileReport{}, err
	}
	if fromSync {
		for i, c := range changes {
			changes[i].Arrived = s.arrivedFromSync(c)
		}
	}
	var res index.Result
	if len(changes) > 0 { // an empty Apply would still take the write lock
		s.progressLarge("indexing changed note files", 0, len(changes))
		res, err = s.idx().Apply(ctx, changes)
		s.progressLarge("", 0, len(changes))
		if err != nil {
			return ReconcileReport{}, err
		}
	}
	if err := s.indexFreedDuplicates(ctx, &res); err != nil {
		return ReconcileReport{}, err
	}
	if _, err := s.settleDuplicates(ctx, s.idx(), res.Duplicates); err != nil {
		return ReconcileReport{}, err
	}
	if !st.current {
		if err := setIndexed(ctx, s.idx(), st.head); err != nil {
			return ReconcileReport{}, err
		}
	}
	return s.report(ctx, res)
}

// addCommitted adds to changes the paths committed since the last
// indexed commit, re-read even if their size and mtime look unchanged.
func (s *Store) addCommitted(ctx context.Context, st indexState, changes []index.Change) ([]index.Change, error) {
	if len(st.changed) == 0 {
		return changes, nil
	}
	planned := map[string]bool{}
	for _, c := range changes {
		planned[c.File.Path] = true
	}
	var files []located
	for _, rel := range st.changed {
		if p := note.PortableDir + "/" + rel; note.IsNotePath(rel) && !planned[p] {
			if _, _, err := s.memory.ReadFile(rel); err == nil || errors.Is(err, note.ErrMalformed) {
				files = append(files, located{s.memory, rel})
			}
		}
	}
	more, err := s.readChanges(ctx, files)
	return append(changes, more...), err
}

// indexFreedDuplicates indexes, in place of an id whose owner just went
// away, a file that duplicated it, until no more are freed.
func (s *Store) indexFreedDuplicates(ctx context.Context, res *index.Result) error {
	for len(res.Freed) > 0 {
		freed := res.Freed
		res.Freed = nil
		dups, err := s.idx().DuplicatesOf(ctx, freed)
		if err != nil || len(dups) == 0 {
			return err
		}
		var files []located
		for _, p := range dups {
			scope, rel, _ := note.SplitHomePath(p)
			files = append(files, located{s.tree(scope), rel})
		}
		again, err := s.readChanges(ctx, files)
		if err != nil {
			return err
		}
		more, err := s.idx().Apply(ctx, again)
		if err != nil {
			return err
		}
		// The duplicates were counted as skipped before; now they are notes.
		res.Skipped -= more.Added + more.Updated
		res.Add(more)
	}
	return nil
}

// indexState is where the index stands against memory/'s history. Every
// read and write of the last indexed commit is in this file.
type indexState struct {
	// head is memory/'s HEAD; zero without a repository or commits.
	head gitsync.Hash
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
	if !s.hasRepo() {
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
	lastHash, perr := gitsync.ParseHash(last)
	if last == "" || perr != nil || !r.HasCommit(lastHash) {
		return st, nil
	}
	st.changed, err = r.ChangedPaths(lastHash, st.head)
	st.known = err == nil
	return st, err
}

// lastIndexedCommit is the memory/ commit the index reflects ("" none).
func (s *Store) lastIndexedCommit(ctx context.Context) (string, error) {
	return s.idx().Meta(ctx, index.MetaLastIndexedCommit)
}

// setIndexed records head as the commit ix reflects (ix: the Store's
// index, or a fresh one a rebuild fills).
func setIndexed(ctx context.Context, ix *index.Index, head gitsync.Hash) error {
	if head.IsZero() {
		return nil
	}
	return ix.SetMeta(ctx, index.MetaLastIndexedCommit, head.String())
}

func (s *Store) report(ctx context.Context, res index.Result) (ReconcileReport, error) {
	// A count, not Stats: grouping every note by five columns scanned the
	// whole notes table (a fifth of a reconcile with nothing to do at
	// 100,000 notes, and its pages in the process's RSS through mmap);
	// count(*) reads the smallest index.
	total, err := s.idx().Count(ctx, index.Filter{})
	if err != nil {
		return ReconcileReport{}, err
	}
	bad, err := s.idx().BadFiles(ctx)
	if err != nil {
		return ReconcileReport{}, err
	}
	dups, err := duplicateIDs(ctx, s.idx(), bad)
	if err != nil {
		return ReconcileReport{}, err
	}
	return ReconcileReport{Added: res.Added, Updated: res.Updated, Deleted: res.Deleted, Indexed: total, Skipped: skippedFiles(bad), Duplicates: dups}, nil
}

// advanceIndexedCommit records head as indexed when the index already
// reflected before: the commit in between only contained files the index
// has seen.
func (s *Store) advanceIndexedCommit(ctx context.Context, before, head gitsync.Hash) error {
	last, err := s.lastIndexedCommit(ctx)
	if err != nil {
		return err
	}
	if last == "" || last == before.String() {
		return setIndexed(ctx, s.idx(), head)
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
	}
	if res, done, err := s.firstIndex(ctx); done || err != nil {
		return res, err
	}
	if !st.known {
		rep, err := s.reconcile(ctx, true)
		return index.Result{Added: rep.Added, Updated: rep.Updated, Deleted: rep.Deleted}, err
	}
	res, err := s.applyPaths(ctx, st.changed)
	if err != nil {
		return res, err
	}
	return res, setIndexed(ctx, s.idx(), st.head)
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
	res, err := s.idx().Apply(ctx, changes)
	s.progressLarge("", 0, len(changes))
	if err != nil {
		return res, err
	}
	if _, err := s.settleDuplicates(ctx, s.idx(), res.Duplicates); err != nil {
		return res, err
	}
	if len(res.Freed) > 0 {
		// A duplicate of a removed id may now be indexable: let a
		// reconcile settle it (cheap: only stat changes are read). The
		// sync runs this inside its guard already.
		if _, err := s.reconcile(ctx, false); err != nil {
			return res, err
		}
	}
	return res, nil
}

// settleDuplicates gives each of ids that several files claim to the
// file ownerOf picks, whatever order the files were indexed in: without
// it, a full rebuild (which indexes in walk order) and an incremental
// reconcile (where the file indexed first keeps the id) could disagree,
// and a file arriving from the hub at a path that sorts first took over a
// note it merely copied the id of. The other files stay recorded as
// duplicates, which reindex, status and doctor report.
func (s *Store) settleDuplicates(ctx context.Context, ix *index.Index, ids []string) (index.Result, error) {
	var res index.Result
	if len(ids) == 0 {
		return res, nil
	}
	claims, err := ix.Claimants(ctx, ids)
	if err != nil {
		return res, err
	}
	settled := make([]string, 0, len(claims))
	for id := range claims {
		settled = append(settled, id)
	}
	sort.Strings(settled)
	var changes []index.Change
	for _, id := range settled {
		paths := claims[id]
		if len(paths) < 2 {
			continue
		}
		want := s.ownerOf(ctx, id, paths)
		if want == paths[0] {
			continue
		}
		scope, rel, _ := note.SplitHomePath(want)
		ch := s.readChange(s.tree(scope), rel)
		if ch.Note == nil || ch.Note.ID != id {
			continue // changed since it was indexed: the next reconcile reads it
		}
		ch.Claim = true
		changes = append(changes, ch)
	}
	if len(changes) == 0 {
		return res, nil
	}
	// Counts stay as they were: one file of each id left the skipped and
	// another joined them.
	return ix.Apply(ctx, changes)
}

// ownerOf decides which of several files claiming note id owns it (paths
// are home-relative, at least two). The rule, first that separates them:
//
//  1. local/ before memory/: nothing but this machine writes local/, so a
//     file synced in from a hub can never take the id of a machine-local
//     note.
//  2. In memory/, the file that was in the history first: a file is later
//     when, in a commit just before it appeared, another claimant was
//     already there. Whoever writes a second file (a hub, a peer, a hand
//     copy) cannot place it before a note that is already committed, so a
//     note keeps its id against any newcomer, on every machine alike (all
//     of them see the same history). Files not committed yet come after
//     committed ones.
//  3. The file named for its id (<type>/<id>.md, or a conflict copy whose
//     name carries its id's hash) before others.
//  4. The lexically smallest path.
//
// 3 and 4 only separate files history cannot (added in one commit, on two
// branches at once, or beyond the walk's budget). All four depend on the
// files and the history only, so a full rebuild and any sequence of
// reconciles agree.
func (s *Store) ownerOf(ctx context.Context, id string, paths []string) string {
	cands := slices.Clone(paths)
	if local := slices.DeleteFunc(slices.Clone(cands), func(p string) bool {
		scope, _, _ := note.SplitHomePath(p)
		return scope != note.ScopeMachineLocal
	}); len(local) > 0 {
		cands = local
	} else if len(cands) > 1 {
		if r, err := s.repo(ctx); err == nil {
			cands = firstInHistory(ctx, r, cands)
		}
	}
	slices.SortFunc(cands, func(a, b string) int {
		ca, cb := namedFor(id, a), namedFor(id, b)
		switch {
		case ca && !cb:
			return -1
		case cb && !ca:
			return 1
		}
		return strings.Compare(a, b)
	})
	return cands[0]
}

// namedFor reports whether home-relative path p is the name a note with
// id gets: <type>/<id>.md, or <stem>.conflict-<8 hex>.md whose hex is the
// start of the blob hash id was derived from (gitsync's conflict copies).
func namedFor(id, p string) bool {
	base := path.Base(p)
	if base == id+".md" {
		return true
	}
	stem, ok := strings.CutSuffix(base, ".md")
	if !ok {
		return false
	}
	i := strings.LastIndex(stem, ".conflict-")
	if i < 0 {
		return false
	}
	h, err := hex.DecodeString(stem[i+len(".conflict-"):])
	if err != nil || len(h) != 4 {
		return false
	}
	// 32 bits of the hash fix the id's first 6 characters (30 bits).
	return len(id) >= 6 && note.IDFromHash(append(h, make([]byte, 12)...))[:6] == id[:6]
}

// historyBudget bounds the commits walked per claimant when settling a
// duplicate id: a file added within that many commits of HEAD is placed
// exactly; older ones are left to the rules after history.
const historyBudget = 2000

// firstInHistory returns the claimants (home-relative memory/ paths) that
// no other claimant preceded in memory/'s history, in their given order.
// For each it walks back from HEAD over the commits that contain it; a
// commit reached that lacks it is where it appeared (one per branch), and
// if another claimant is in such a commit, it came later. The walks run
// side by side and stop once one claimant is left, so settling a newcomer
// against an old note costs about the newcomer's age in commits. Errors
// and exhausted budgets leave a claimant in.
func firstInHistory(ctx context.Context, r *gitsync.Repo, paths []string) []string {
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return paths
	}
	trees := r.Trees()
	type walk struct {
		rel          string
		queue        []gitsync.Hash
		seen         map[gitsync.Hash]bool
		later, ended bool
	}
	has := func(c gitsync.Commit, rel string) bool {
		b, err := trees.BlobAt(c.Tree, rel)
		return err == nil && !b.IsZero()
	}
	ws := make([]*walk, 0, len(paths))
	for _, p := range paths {
		_, rel, _ := note.SplitHomePath(p)
		ws = append(ws, &walk{rel: rel, queue: []gitsync.Hash{head}, seen: map[gitsync.Hash]bool{head: true}})
	}
	left := len(ws)
	for steps := 0; steps < historyBudget && left > 1 && ctx.Err() == nil; steps++ {
		active := false
		for _, w := range ws {
			if w.later || w.ended || left < 2 {
				continue
			}
			if len(w.queue) == 0 {
				w.ended = true
				continue
			}
			active = true
			c, err := r.CommitAt(w.queue[0])
			w.queue = w.queue[1:]
			if err != nil {
				w.ended = true
				continue
			}
			if !has(c, w.rel) {
				// Where w's file appeared on this line of history.
				for _, o := range ws {
					if o != w && has(c, o.rel) {
						w.later = true
						left--
						break
					}
				}
				continue
			}
			for _, ph := range c.Parents {
				if !w.seen[ph] {
					w.seen[ph] = true
					w.queue = append(w.queue, ph)
				}
			}
		}
		if !active {
			break
		}
	}
	var out []string
	for i, w := range ws {
		if !w.later {
			out = append(out, paths[i])
		}
	}
	return out
}
