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
// it (the CLI, hooks, the MCP server, background syncs). This file keeps
// it usable whatever happens to it:
//
//   - Damage found by any operation (a torn write, a bad disk) is repaired
//     at once: the index is rebuilt from the files into a new database
//     that replaces the damaged one, with one notice, and the operation
//     runs again.
//   - One rebuild at a time: rebuilds hold the rebuild lock beside
//     index.db; a process that finds the index needing a rebuild waits for
//     the one under way and then uses its result.
//   - A write that timed out behind a long rebuild waits for it and
//     applies its change afterwards.
//   - A read-only home is read through an immutable connection (or a
//     temporary index when its own cannot be used); writes name the home.

// ErrReadOnly marks a change refused because the store's home cannot be
// written (a read-only mount, a backup snapshot). Reading still works.
var ErrReadOnly = errors.New("read-only")

func (s *Store) indexPath() string { return filepath.Join(s.home, IndexFile) }

// indexFiles are the files of the index at p: the database, SQLite's WAL
// and shared memory, and the rebuild lock (index.AcquireRebuild).
func indexFiles(p string) []string {
	return []string{p, p + "-wal", p + "-shm", p + ".lock"}
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

// openIndex opens index.db, rebuilding it when it is new, of another
// schema version or damaged (with Options.DeferRebuild, it reports
// ErrNeedsRebuild instead).
func (s *Store) openIndex(ctx context.Context) error {
	p := s.indexPath()
	// SQLite opens (and creates) these by name and would write through a
	// link; the lock is written with the pid of a rebuild.
	for _, f := range indexFiles(p) {
		if err := platform.CheckBeneath(s.home, f); err != nil {
			return fmt.Errorf("open index: %w", err)
		}
	}
	if !dirWritable(s.home) {
		return s.openReadOnly(ctx)
	}
	_, statErr := os.Stat(p)
	existed := statErr == nil
	ix, needsRebuild, err := index.Open(ctx, p, s.indexOptions())
	if index.IsCorrupt(err) {
		if s.deferRebuild {
			return fmt.Errorf("index %s is damaged: %w", p, ErrNeedsRebuild)
		}
		return s.repairAtOpen(ctx, err)
	}
	if err != nil {
		return err
	}
	s.setIndex(ix)
	if !needsRebuild {
		return nil
	}
	if s.deferRebuild {
		ix.Close()
		return fmt.Errorf("index %s: %w", p, ErrNeedsRebuild)
	}
	if err := s.rebuildIfNeeded(ctx, existed); err != nil {
		ix.Close()
		return fmt.Errorf("rebuild index %s: %w", p, err)
	}
	return nil
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

// rebuildIfNeeded rebuilds an index that needs it, unless another process
// did so while this one waited for the rebuild lock (after a schema
// change every process opening the store finds the same need).
func (s *Store) rebuildIfNeeded(ctx context.Context, existed bool) error {
	lock, err := s.lockRebuild(ctx)
	if err != nil {
		return err
	}
	defer lock.Release()
	needs, err := s.idx().NeedsRebuild(ctx)
	if index.IsCorrupt(err) {
		_, err = s.repairLocked(ctx, true)
		return err
	}
	if err != nil || !needs {
		return err
	}
	res, err := s.rebuildInto(ctx, s.idx())
	if index.IsCorrupt(err) {
		_, err = s.repairLocked(ctx, true)
		return err
	}
	if err != nil {
		return err
	}
	if existed || res.Added > 0 || res.Skipped > 0 {
		s.notice(fmt.Sprintf("index %s rebuilt from the note files (%d notes, %d skipped)", s.indexPath(), res.Added, res.Skipped))
	}
	return nil
}

// repairAtOpen handles a file that is damaged before it could be opened
// (its schema, or not a database at all): under the rebuild lock, it is
// opened again (another process may have repaired it meanwhile) and, if
// still damaged, replaced.
func (s *Store) repairAtOpen(ctx context.Context, cause error) error {
	lock, err := s.lockRebuild(ctx)
	if err != nil {
		return err
	}
	defer lock.Release()
	ix, needs, err := index.Open(ctx, s.indexPath(), s.indexOptions())
	if err == nil {
		s.setIndex(ix)
		if !needs {
			return nil
		}
		res, err := s.rebuildInto(ctx, ix)
		if err == nil {
			s.notice(fmt.Sprintf("index %s rebuilt from the note files (%d notes, %d skipped)", s.indexPath(), res.Added, res.Skipped))
			return nil
		}
		if !index.IsCorrupt(err) {
			ix.Close()
			return err
		}
	} else if !index.IsCorrupt(err) {
		return err
	}
	_, err = s.repairLocked(ctx, true)
	if ix := s.idx(); err != nil && ix != nil {
		ix.Close() // Open fails: nobody else holds this Store
	}
	return err
}

// repairLocked replaces a damaged index with one rebuilt from the note
// files; the caller holds the rebuild lock. The new index is built in a
// file of its own (the damaged one may fail even to drop its tables) and
// then copied over the damaged one by SQLite, so every process that has
// index.db open sees the new content. Notes written meanwhile went into
// the damaged file or were not yet on disk when the files were listed: a
// reconcile afterwards reads them from the files.
func (s *Store) repairLocked(ctx context.Context, announce bool) (ReconcileReport, error) {
	p := s.indexPath()
	dir, err := os.MkdirTemp(s.home, ".index-rebuild-")
	if err != nil {
		return ReconcileReport{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, IndexFile)
	fresh, _, err := index.Open(ctx, tmp, s.indexOptions())
	if err != nil {
		return ReconcileReport{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	res, err := s.rebuildInto(ctx, fresh)
	if cerr := fresh.Close(); err == nil {
		err = cerr // closing folds the WAL into the file Replace copies
	}
	if err != nil {
		return ReconcileReport{}, fmt.Errorf("rebuild damaged index %s: %w", p, err)
	}
	reopen := s.idx() == nil
	err = index.Replace(ctx, p, tmp, s.busy)
	if err != nil && !index.IsCorrupt(err) {
		return ReconcileReport{}, fmt.Errorf("replace damaged index %s: %w", p, err)
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
				return ReconcileReport{}, fmt.Errorf("remove damaged index %s: %w", p+suffix, rmErr)
			}
		}
		if err := platform.Rename(tmp, p); err != nil {
			return ReconcileReport{}, fmt.Errorf("replace damaged index %s: %w", p, err)
		}
	}
	if reopen {
		ix, _, err := index.Open(ctx, p, s.indexOptions())
		if err != nil {
			return ReconcileReport{}, err
		}
		s.setIndex(ix)
	}
	rep, err := s.reconcile(ctx, false)
	if err != nil {
		return rep, err
	}
	rep.Added, rep.Updated, rep.Deleted = rep.Added+res.Added, rep.Updated+res.Updated, rep.Deleted+res.Deleted
	if !announce {
		return rep, nil
	}
	s.notice(fmt.Sprintf("index %s was damaged; rebuilt it from the note files (%d notes, %d skipped)", p, rep.Indexed, len(rep.Skipped)))
	return rep, nil
}

// guard runs op, which uses the index, and settles what the index itself
// got wrong: damage is repaired and op runs again; a write that timed
// out behind another process's rebuild waits for the rebuild and runs
// again. Other errors are returned worded for people.
func (s *Store) guard(ctx context.Context, op func() error) error {
	repaired, waited := false, false
	for {
		err := op()
		switch {
		case err == nil:
			return nil
		case index.IsCorrupt(err) && !repaired:
			repaired = true
			if err := s.repairDamage(ctx, op, err); err != nil {
				return err
			}
		case errors.Is(err, index.ErrBusy) && !waited && !s.deferRebuild:
			waited = true
			// Most likely a rebuild held the write lock (a rebuild of
			// 100,000 notes takes longer than the busy timeout): wait
			// for it, then try once more.
			if _, werr := index.WaitRebuild(ctx, s.indexPath(), s.waitingFor(ctx)); werr != nil {
				return err
			}
		default:
			return s.idx().Explain(err)
		}
	}
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

// repairDamage repairs the index after op met damage in it. Under the
// rebuild lock op is tried once more first: another process may have
// repaired the index while this one waited. A hook (DeferRebuild) only
// marks the index for a rebuild, which it starts in the background.
func (s *Store) repairDamage(ctx context.Context, op func() error, cause error) error {
	if s.readOnly {
		return s.useTemporaryIndex(ctx, "damaged")
	}
	if s.deferRebuild {
		s.idx().MarkStale(ctx)
		return fmt.Errorf("index %s is damaged (%v): %w", s.indexPath(), cause, ErrNeedsRebuild)
	}
	lock, err := s.lockRebuild(ctx)
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := op(); !index.IsCorrupt(err) {
		return nil // guard runs op again for its result
	}
	_, err = s.repairLocked(ctx, true)
	return err
}

// openReadOnly opens the index of a home this process cannot write. Its
// own index.db is used if it is current; otherwise the notes are indexed
// into a temporary database that goes away with the Store.
func (s *Store) openReadOnly(ctx context.Context) error {
	s.readOnly = true
	p := s.indexPath()
	if _, err := os.Stat(p); err != nil {
		return s.useTemporaryIndex(ctx, "missing")
	}
	ix, needs, err := index.OpenReadOnly(ctx, p)
	switch {
	case index.IsCorrupt(err):
		return s.useTemporaryIndex(ctx, "damaged")
	case err != nil:
		return err
	case needs:
		ix.Close()
		return s.useTemporaryIndex(ctx, "out of date")
	}
	s.setIndex(ix)
	return nil
}

// useTemporaryIndex indexes the notes of a read-only home into a
// temporary database (why says what is wrong with the home's own).
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

// indexOptions are the options every index of this store opens with.
func (s *Store) indexOptions() index.Options {
	return index.Options{Busy: s.busy, CacheStatements: s.server}
}
