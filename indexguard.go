package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// The index is derived from the note files, and several processes share
// it (the CLI, hooks, the MCP server, background syncs). This file owns
// how it is opened and kept usable, read from the top:
//
//   - [Store.openIndex] opens index.db and says what it found
//     ([indexHealth]). It never reads the note files.
//   - [Store.rebuild] is the one owner of rebuilds: an index opening found
//     missing, outdated or damaged, damage an operation met later
//     ([Store.guard]), `reindex --full` ([Store.Rebuild]) and `doctor
//     --fix` all end there, and nothing else rebuilds.
//   - [Store.guard] wraps every operation on the index: damage goes to
//     [Store.rebuild] and the operation runs again; a write that timed
//     out behind another process's rebuild waits for it and runs again.
//
// Reconciling the index with files changed behind its back is not part
// of any of this: it is [Store.Reconcile], which a caller asks for. The
// one exception keeps notes from being lost: replacing a damaged file
// ends by reading back what other processes wrote meanwhile
// ([Store.replaceDamaged]).

// ErrReadOnly marks a change refused because the store's home cannot be
// written (a read-only mount, a backup snapshot). Reading still works.
var ErrReadOnly = errors.New("read-only")

// indexHealth is what opening (or using) the index found.
type indexHealth int

const (
	indexHealthy  indexHealth = iota
	indexMissing              // there was no index.db: a new store, or it was deleted
	indexOutdated             // another schema version, or marked for a rebuild (an interrupted rebuild, damage a hook met)
	indexDamaged              // not a database, or damaged pages
)

// String is the word notices use ("its index is damaged").
func (h indexHealth) String() string {
	switch h {
	case indexMissing:
		return "missing"
	case indexOutdated:
		return "out of date"
	case indexDamaged:
		return "damaged"
	}
	return "healthy"
}

// healthOf classifies what index.Open, index.OpenReadOnly or
// Index.NeedsRebuild answered; damage is a health, not an error.
func healthOf(needsRebuild bool, err error) (indexHealth, error) {
	switch {
	case index.IsCorrupt(err):
		return indexDamaged, nil
	case err != nil:
		return indexHealthy, err
	case needsRebuild:
		return indexOutdated, nil
	}
	return indexHealthy, nil
}

// openIndex makes index.db ready to answer. The whole way, top to bottom:
//
//  1. index.db and the files beside it must lie inside the home: SQLite
//     opens (and creates) them by name and would write through a link.
//  2. Open it: for writing ([Store.openWritable], which creates a missing
//     file), or through an immutable connection when this process cannot
//     write the home ([Store.openReadOnly]).
//  3. A healthy index is used as it is. Opening never reads the note
//     files and never reconciles: a caller that wants files changed
//     behind the index's back picked up asks for it with
//     [Store.Reconcile] (git's hooks and `reindex` do; a sync reindexes
//     what it merged, [Store.Sync]).
//  4. A missing, outdated or damaged index goes to [Store.rebuild], the
//     one owner of rebuilds. It decides what a rebuild means for this
//     Store: a temporary index for a read-only home,
//     [ErrNeedsRebuild] for a hook ([Options.DeferRebuild]), else a
//     rebuild under the rebuild lock, after a second look
//     ([Store.lookAgain]): another process may have rebuilt it meanwhile.
//
// Damage that opening cannot see (a torn page in a table) is met by an
// operation later, and [Store.guard] sends it to [Store.rebuild] too.
func (s *Store) openIndex(ctx context.Context) error {
	for _, f := range indexFiles(s.indexPath()) {
		if err := platform.CheckBeneath(s.home, f); err != nil {
			return fmt.Errorf("open index: %w", err)
		}
	}
	open := s.openWritable
	if !dirWritable(s.home) {
		open = s.openReadOnly
	}
	health, err := open(ctx)
	if err != nil || health == indexHealthy {
		return err
	}
	if _, err := s.rebuild(ctx, rebuildRequest{found: health, recheck: s.lookAgain, atOpen: true}); err != nil {
		if ix := s.idx(); ix != nil {
			ix.Close() // Open fails: nobody else holds this Store
		}
		return err
	}
	return nil
}

// openWritable opens index.db for reading and writing, creating it when
// there is none; a file that is damaged beyond opening leaves no index
// open (the rebuild replaces it).
func (s *Store) openWritable(ctx context.Context) (indexHealth, error) {
	p := s.indexPath()
	_, statErr := os.Stat(p)
	ix, needs, err := index.Open(ctx, p, s.indexOptions())
	health, err := healthOf(needs, err)
	if err != nil {
		return health, err
	}
	if ix != nil {
		s.setIndex(ix)
	}
	if health == indexOutdated && statErr != nil {
		health = indexMissing
	}
	return health, nil
}

// openReadOnly opens the index of a home this process cannot write,
// through an immutable connection (WAL needs a writable -shm). Whatever
// is wrong with it, [Store.rebuild] answers with a temporary index.
func (s *Store) openReadOnly(ctx context.Context) (indexHealth, error) {
	s.readOnly = true
	p := s.indexPath()
	if _, err := os.Stat(p); err != nil {
		return indexMissing, nil
	}
	ix, needs, err := index.OpenReadOnly(ctx, p)
	health, err := healthOf(needs, err)
	if ix != nil {
		s.setIndex(ix)
	}
	return health, err
}

// lookAgain is what index.db is now, for a rebuild that found it
// missing, outdated or damaged and has since taken the rebuild lock: the
// process that held the lock may have rebuilt it. A file that could not
// be opened before is opened again.
func (s *Store) lookAgain(ctx context.Context) (indexHealth, error) {
	if s.idx() != nil {
		return healthOf(s.idx().NeedsRebuild(ctx))
	}
	ix, needs, err := index.Open(ctx, s.indexPath(), s.indexOptions())
	health, err := healthOf(needs, err)
	if ix != nil && err == nil {
		s.setIndex(ix)
	}
	return health, err
}

// rebuildRequest is what a caller of [Store.rebuild] knows.
type rebuildRequest struct {
	// atOpen marks the rebuild of opening the Store: a Rebuild asked for
	// next uses its result instead of rebuilding again (builtAtOpen).
	atOpen bool
	// found is what the caller found wrong: missing, outdated or damaged.
	found indexHealth
	// cause is the error that found damage, for the message of a hook
	// that leaves the rebuild to the background (nil at open).
	cause error
	// recheck looks again under the rebuild lock, since another process
	// may have rebuilt the index while this one waited for the lock;
	// healthy means there is nothing left to do.
	recheck func(context.Context) (indexHealth, error)
	// asked marks a rebuild the caller asked for (`reindex --full`,
	// `doctor --fix`), not one it found necessary: it runs whatever the
	// index looks like, even in a hook, and the caller reports it (a
	// notice is sent only for damage met on the way).
	asked bool
	// firstSync marks the build of an index that records no file yet after
	// a machine's first sync: progress is labelled as a sync's indexing
	// and the notes other machines wrote are marked as arrivals.
	firstSync bool
}

// rebuild is the one owner of rebuilds of the index from the note files:
// every rebuild, at open, after damage, asked for or not, is decided and
// done here, in this order:
//
//  1. A read-only home: the notes are indexed into a temporary database
//     ([Store.useTemporaryIndex]); the home's own index is not touched.
//  2. A hook ([Options.DeferRebuild]) has no time for a rebuild (17 s at
//     100,000 notes): damage is marked in the index so that the next
//     open rebuilds it, and the answer is [ErrNeedsRebuild], on which the
//     hook starts `reindex` in the background.
//  3. Otherwise one rebuild at a time, under the rebuild lock beside
//     index.db. The request's recheck runs first: a process that waited
//     for another's rebuild uses its result.
//  4. An outdated or missing index is rebuilt in place
//     ([Store.rebuildInto], one write transaction), and says so in a
//     notice unless a new store had nothing to index.
//  5. A damaged one (or one that turns out damaged while rebuilt in
//     place) is rebuilt in a fresh file that replaces it
//     ([Store.replaceDamaged]).
//
// The result counts what the rebuild indexed.
func (s *Store) rebuild(ctx context.Context, r rebuildRequest) (index.Result, error) {
	switch {
	case s.readOnly:
		return index.Result{}, s.useTemporaryIndex(ctx, r.found.String())
	case s.deferRebuild && !r.asked:
		return index.Result{}, s.deferToBackground(ctx, r)
	}
	lock, err := s.lockRebuild(ctx)
	if err != nil {
		return index.Result{}, err
	}
	defer lock.Release()
	health := r.found
	if r.recheck != nil {
		if health, err = r.recheck(ctx); err != nil || health == indexHealthy {
			return index.Result{}, err
		}
	}
	if health == indexDamaged {
		res, err := s.replaceDamaged(ctx, !r.asked)
		if err == nil && r.atOpen {
			s.builtAtOpen.Store(&res)
		}
		return res, err
	}
	var res index.Result
	if r.firstSync {
		res, err = s.buildInto(ctx, s.idx(), "indexing changed note files", true)
	} else {
		res, err = s.rebuildInto(ctx, s.idx())
	}
	switch {
	case index.IsCorrupt(err):
		// Damage met while rebuilding in place: a fresh file after all.
		return s.replaceDamaged(ctx, true)
	case err != nil:
		return res, fmt.Errorf("rebuild index %s: %w", s.indexPath(), err)
	case !r.asked && (r.found != indexMissing || res.Added > 0 || res.Skipped > 0):
		s.notice(fmt.Sprintf("index %s rebuilt from the note files (%d notes, %d skipped)", s.indexPath(), res.Added, res.Skipped))
	}
	if r.atOpen {
		s.builtAtOpen.Store(&res)
	}
	return res, nil
}

// deferToBackground is rebuild's answer in a hook: damage is marked so
// that the next open (the background `reindex`) rebuilds the index even
// though its file opens cleanly; an index found outdated is marked
// already (or is not a database to mark).
func (s *Store) deferToBackground(ctx context.Context, r rebuildRequest) error {
	if ix := s.idx(); ix != nil && r.found == indexDamaged {
		ix.MarkStale(ctx)
	}
	if r.cause != nil {
		return fmt.Errorf("index %s is %s (%v): %w", s.indexPath(), r.found, r.cause, ErrNeedsRebuild)
	}
	return fmt.Errorf("index %s is %s: %w", s.indexPath(), r.found, ErrNeedsRebuild)
}

// replaceDamaged replaces a damaged index with one rebuilt from the note
// files; the caller holds the rebuild lock. The new index is built in a
// file of its own (the damaged one may fail even to drop its tables) and
// then copied over the damaged one by SQLite, so every process that has
// index.db open sees the new content.
//
// It ends with the one reconcile no caller asks for, because the
// guarantee that no note is lost depends on it: notes other processes
// wrote while the new file was built went into the damaged file, or were
// not yet on disk when the files were listed, and the copy dropped them;
// [Store.reconcile] reads them from the files.
func (s *Store) replaceDamaged(ctx context.Context, announce bool) (index.Result, error) {
	p := s.indexPath()
	dir, err := os.MkdirTemp(s.home, ".index-rebuild-")
	if err != nil {
		return index.Result{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, IndexFile)
	fresh, _, err := index.Open(ctx, tmp, s.indexOptions())
	if err != nil {
		return index.Result{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	res, err := s.rebuildInto(ctx, fresh)
	if cerr := fresh.Close(); err == nil {
		err = cerr // closing folds the WAL into the file Replace copies
	}
	if err != nil {
		return index.Result{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	if err := s.copyOver(ctx, tmp); err != nil {
		return index.Result{}, err
	}
	rep, err := s.reconcile(ctx, false)
	if err != nil {
		return res, err
	}
	res.Added, res.Updated, res.Deleted = res.Added+rep.Added, res.Updated+rep.Updated, res.Deleted+rep.Deleted
	if announce {
		s.notice(fmt.Sprintf("index %s was damaged; rebuilt it from the note files (%d notes, %d skipped)", p, rep.Indexed, len(rep.Skipped)))
	}
	return res, nil
}

// copyOver puts the rebuilt database at tmp in place of index.db: through
// SQLite's backup API (index.Replace) while index.db is still a database,
// by rename when not even its header is left. The Store's index is then
// open on the new content.
func (s *Store) copyOver(ctx context.Context, tmp string) error {
	p := s.indexPath()
	reopen := s.idx() == nil
	err := index.Replace(ctx, p, tmp, s.busy)
	if err != nil && !index.IsCorrupt(err) {
		return fmt.Errorf("replace damaged index %s: %w", p, err)
	}
	if err != nil {
		// Not a database at all (its header is gone): no connection can
		// read or write it, so the file itself is replaced.
		if old := s.idx(); old != nil {
			old.Close() // later calls fail cleanly if reopening fails
		}
		reopen = true
		for _, suffix := range []string{"-wal", "-shm"} {
			if rmErr := os.Remove(p + suffix); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
				return fmt.Errorf("remove damaged index %s: %w", p+suffix, rmErr)
			}
		}
		if err := platform.Rename(tmp, p); err != nil {
			return fmt.Errorf("replace damaged index %s: %w", p, err)
		}
	}
	if !reopen {
		return nil
	}
	ix, _, err := index.Open(ctx, p, s.indexOptions())
	if err != nil {
		return err
	}
	s.setIndex(ix)
	return nil
}

// useTemporaryIndex indexes the notes of a read-only home into a
// temporary database (why says what is wrong with the home's own), which
// goes away with the Store.
func (s *Store) useTemporaryIndex(ctx context.Context, why string) error {
	dir, err := os.MkdirTemp("", "anamnesis-index-")
	if err != nil {
		return fmt.Errorf("home %s is read-only and its index is %s; a temporary index cannot be made either: %w", s.home, why, err)
	}
	ix, _, err := index.Open(ctx, filepath.Join(dir, IndexFile), s.indexOptions())
	if err == nil {
		_, err = s.rebuildInto(ctx, ix)
		if err != nil {
			ix.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("home %s is read-only and its index is %s; indexing the notes elsewhere failed: %w", s.home, why, err)
	}
	s.ixMu.Lock()
	old, oldDir := s.ix.Swap(ix), s.tmpIndex
	s.tmpIndex = dir
	s.ixMu.Unlock()
	if old != nil {
		old.Close()
	}
	if oldDir != "" {
		os.RemoveAll(oldDir)
	}
	s.notice(fmt.Sprintf("home %s is read-only and its index is %s; searching a temporary index of the note files", s.home, why))
	return nil
}

// Rebuild drops the index and rebuilds it from every note file, through
// [Store.rebuild] like every rebuild: one at a time (a second waits for
// the first), and a damaged index is replaced by a new one.
func (s *Store) Rebuild(ctx context.Context) (ReconcileReport, error) {
	if err := s.writable("rebuild the index"); err != nil {
		return ReconcileReport{}, err
	}
	res, err := s.rebuild(ctx, rebuildRequest{found: indexOutdated, asked: true})
	if err != nil {
		return ReconcileReport{}, s.idx().Explain(err)
	}
	return s.report(ctx, res)
}

// RebuildAfterOpen is Rebuild for a process that opened the Store to
// rebuild its index and does nothing else first (`reindex --full`): when
// opening it rebuilt the index from every file already (a missing index,
// or one of another schema after an upgrade), that rebuild is reported
// instead of a second (21 s more at 122,000 notes). Later, files may
// have changed since the open: use Rebuild.
func (s *Store) RebuildAfterOpen(ctx context.Context) (ReconcileReport, error) {
	if res := s.builtAtOpen.Swap(nil); res != nil {
		return s.report(ctx, *res)
	}
	return s.Rebuild(ctx)
}

// guard runs op, which uses the index, and settles what the index itself
// got wrong: damage goes to [Store.rebuild] and op runs again; a write
// that timed out behind another process's rebuild waits for the rebuild
// and runs again. Other errors are returned worded for people.
func (s *Store) guard(ctx context.Context, op func() error) error {
	err := op()
	repaired, waited := false, false
	for err != nil {
		switch {
		case index.IsCorrupt(err) && !repaired:
			repaired = true
			var rerr error
			if err, rerr = s.repair(ctx, op, err); rerr != nil {
				return rerr
			}
		case errors.Is(err, index.ErrBusy) && !waited && !s.deferRebuild:
			waited = true
			// Most likely a rebuild held the write lock (a rebuild of
			// 100,000 notes takes longer than the busy timeout): wait
			// for it, then try once more.
			if _, werr := index.WaitRebuild(ctx, s.indexPath(), s.waitingFor(ctx)); werr != nil {
				return err
			}
			err = op()
		default:
			return s.idx().Explain(err)
		}
	}
	return nil
}

// guarded is guard for an operation with a result.
func guarded[T any](ctx context.Context, s *Store, op func() (T, error)) (T, error) {
	var out T
	err := s.guard(ctx, func() error {
		var err error
		out, err = op()
		return err
	})
	return out, err
}

// repair hands the damage op met (cause) to [Store.rebuild] and returns
// op's error once the index is repaired (rerr: the repair failed, or a
// hook deferred it). op itself is rebuild's second look: run under the
// rebuild lock, it succeeds if another process repaired the index while
// this one waited, and then it is not run a third time.
func (s *Store) repair(ctx context.Context, op func() error, cause error) (opErr, rerr error) {
	ran := false
	recheck := func(context.Context) (indexHealth, error) {
		if ran, opErr = true, op(); index.IsCorrupt(opErr) {
			return indexDamaged, nil
		}
		return indexHealthy, nil // guard settles any other error
	}
	if _, rerr = s.rebuild(ctx, rebuildRequest{found: indexDamaged, cause: cause, recheck: recheck}); rerr != nil {
		return nil, rerr
	}
	if ran && !index.IsCorrupt(opErr) {
		return opErr, nil
	}
	return op(), nil
}

func (s *Store) indexPath() string { return filepath.Join(s.home, IndexFile) }

// indexFiles are the files of the index at p: the database, SQLite's WAL
// and shared memory, and the rebuild lock (index.AcquireRebuild).
func indexFiles(p string) []string {
	return []string{p, p + "-wal", p + "-shm", p + ".lock"}
}

// indexOptions are the options every index of this store opens with.
func (s *Store) indexOptions() index.Options {
	return index.Options{Busy: s.busy, CacheStatements: s.server}
}

// writable fails with ErrReadOnly, naming the home, when nothing can be
// written there; what says what was refused.
func (s *Store) writable(what string) error {
	if s.readOnly {
		return fmt.Errorf("cannot %s: home %s is %w", what, s.home, ErrReadOnly)
	}
	return nil
}

// dirWritable reports whether this process may create files in dir: a
// read-only mount fails with EROFS, a directory without write permission
// with EACCES (platform.Writable asks without writing).
func dirWritable(dir string) bool {
	return platform.Writable(dir) == nil
}

// lockRebuild takes the rebuild lock, saying so when another process's
// rebuild makes this one wait for more than a moment.
func (s *Store) lockRebuild(ctx context.Context) (*index.RebuildLock, error) {
	return index.AcquireRebuild(ctx, s.indexPath(), s.waitingFor(ctx))
}

// waitingFor is the callback the lock functions call when a wait for
// another process's rebuild has lasted a second.
func (s *Store) waitingFor(context.Context) func(pid int) {
	return func(pid int) {
		s.noticeOnce(fmt.Sprintf("waiting for process %d, which is rebuilding the index", pid))
	}
}

// noticeOnce sends msg unless the same notice was sent already.
func (s *Store) noticeOnce(msg string) {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	if s.noticed == nil {
		s.noticed = map[string]bool{}
	}
	if !s.noticed[msg] {
		s.noticed[msg] = true
		s.notice(msg)
	}
}
