package gitsync

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// What makes a sync with nothing to do cheap: git's own index, used as
// the stat cache it is for `git status`. Every indexed file is lstat'ed
// and its size, mode and mtime compared with its entry's, straight from
// the index's bytes as they stream in (no entry is decoded, no map of
// 100,000 paths built); the worktree's directories are read meanwhile
// and only their files counted, per directory: when each directory holds
// as many files as the index lists there (less those found gone), no
// file is new. Only files whose stat data differ (edited, deleted, or
// modified in the instant the index was written: "racily clean") are
// read and hashed, and when none does and the index's tree (its cache
// tree's root, see gitindex.go) is HEAD's, nothing is committed and
// nothing written. An lstat per file remains, as for git status: an edit
// in place changes no directory, so nothing cheaper can see it without a
// file watcher.

// suspect is an indexed file whose stat data differ from its entry's:
// gone, or to be hashed to know whether it changed.
type suspect struct {
	path string
	gone bool
	mode filemode.FileMode
	hash plumbing.Hash
}

// indexStatus is the worktree measured against the index.
type indexStatus struct {
	head, headTree plumbing.Hash
	suspects       []suspect
	// complete: the index is of this package's shape and HEAD's tree, and
	// lists every worktree file, so the suspects are all that can differ
	// from HEAD. Otherwise the caller looks the slow way (a file is new,
	// the git CLI staged something, the index is missing or torn).
	complete bool
}

// paths are the suspects' paths.
func (st indexStatus) paths() []string {
	out := make([]string, len(st.suspects))
	for i, s := range st.suspects {
		out[i] = s.path
	}
	return out
}

// statusByIndex measures the worktree against .git/index (see the top of
// this file). removeLeftovers is walkWorktree's. Errors are the
// worktree's (a symbolic link) or HEAD's; an index it cannot use only
// leaves the status incomplete.
func (g *Repo) statusByIndex(ctx context.Context, removeLeftovers bool) (indexStatus, error) {
	var st indexStatus
	var err error
	if st.head, st.headTree, err = g.headAndTree(); err != nil {
		return st, err
	}
	type walked struct {
		files map[string]int
		err   error
	}
	walk := make(chan walked, 1)
	go func() {
		files := map[string]int{}
		err := g.walkWorktree(removeLeftovers, func(dir, _ string) { files[dir]++ })
		walk <- walked{files, err}
	}()
	indexed, scan, scanErr := g.statIndexed(ctx)
	w := <-walk
	if w.err != nil {
		return st, w.err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	st.suspects = indexed.suspects
	st.complete = scanErr == nil && !scan.tree.IsZero() && scan.tree == st.headTree && indexed.sameFiles(w.files)
	return st, nil
}

// indexedFiles is what statIndexed found: the suspects, and how many
// indexed files each directory holds.
type indexedFiles struct {
	suspects []suspect
	perDir   map[string]int
}

// sameFiles reports whether each directory holds as many files as the
// index lists there, less those found gone: every file on disk is then
// indexed.
func (ix indexedFiles) sameFiles(onDisk map[string]int) bool {
	want := ix.perDir
	for _, s := range ix.suspects {
		if s.gone {
			want[dirOf(s.path)]--
		}
	}
	for dir, n := range want {
		if onDisk[dir] != n {
			return false
		}
	}
	for dir, n := range onDisk {
		if want[dir] != n {
			return false
		}
	}
	return true
}

// dirOf is a path's directory, "" at the root.
func dirOf(p string) string {
	if i := lastSlash(p); i >= 0 {
		return p[:i]
	}
	return ""
}

func lastSlash[S ~string | ~[]byte](p S) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}

// statIndexed streams .git/index and lstats every entry's file on as
// many goroutines as there are CPUs (a sync with nothing to do is an
// lstat of every note; at 100,000 notes they were 40% of it on one
// core), in batches handed over as raw entry bytes.
func (g *Repo) statIndexed(ctx context.Context) (indexedFiles, indexScan, error) {
	ix := indexedFiles{perDir: map[string]int{}}
	f, fi, err := g.openIndex()
	if err != nil {
		return ix, indexScan{}, err
	}
	defer f.Close()
	// The index read's mtime, even if another is renamed in meanwhile.
	ch := newStatChecker(ctx, g.dir, fi.ModTime())
	var dir []byte
	run := 0
	scan, err := scanIndex(f, fi.Size(), func(e rawIndexEntry) error {
		ch.add(e.b)
		name := e.name()
		d := name[:max(lastSlash(name), 0)]
		if !bytes.Equal(d, dir) {
			if run > 0 {
				ix.perDir[string(dir)] += run
			}
			dir, run = append(dir[:0], d...), 0
		}
		run++
		return ctx.Err()
	})
	if run > 0 {
		ix.perDir[string(dir)] += run
	}
	var werr error
	ix.suspects, werr = ch.wait()
	if err == nil {
		err = werr
	}
	return ix, scan, err
}

// statChecker compares raw index entries with the files they name on
// worker goroutines.
type statChecker struct {
	ctx        context.Context
	root       string
	racyBefore time.Time
	err        error // opening the root
	batches    chan []byte
	batch      []byte
	wg         sync.WaitGroup
	mu         sync.Mutex
	found      []suspect
}

// statBatch is how many bytes of raw entries go to a worker at once.
const statBatch = 128 << 10

func newStatChecker(ctx context.Context, root string, racyBefore time.Time) *statChecker {
	c := &statChecker{ctx: ctx, root: root, racyBefore: racyBefore, batches: make(chan []byte, 4)}
	workers := min(runtime.GOMAXPROCS(0), 8)
	for range workers {
		c.wg.Add(1)
		go c.work()
	}
	return c
}

// add queues one raw entry (its fixed part and name; copied).
func (c *statChecker) add(raw []byte) {
	if c.batch == nil {
		c.batch = make([]byte, 0, statBatch+4096)
	}
	c.batch = append(c.batch, raw...)
	if len(c.batch) >= statBatch {
		c.batches <- c.batch
		c.batch = nil
	}
}

// wait checks what is queued and returns the suspects.
func (c *statChecker) wait() ([]suspect, error) {
	if len(c.batch) > 0 {
		c.batches <- c.batch
	}
	close(c.batches)
	c.wg.Wait()
	return c.found, c.err
}

func (c *statChecker) work() {
	defer c.wg.Done()
	var found []suspect
	st, err := openStatter(c.root)
	if err == nil {
		defer st.close()
	}
	for b := range c.batches {
		if err != nil || c.ctx.Err() != nil {
			continue // drained, not checked: the caller returns the error
		}
		for len(b) > 0 {
			n := entryFixedLen + int(binary.BigEndian.Uint16(b[60:62])&nameMask)
			if s, ok := c.check(st, b[:n]); !ok {
				found = append(found, s)
			}
			b = b[n:]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.found = append(c.found, found...)
	if err != nil {
		c.err = err
	}
}

// check compares one raw entry with its file: ok when the file is as
// indexed (same mode, size and mtime, and not racily clean).
func (c *statChecker) check(st *worktreeStatter, raw []byte) (suspect, bool) {
	s := suspect{path: string(raw[entryFixedLen:])}
	s.mode = filemode.FileMode(binary.BigEndian.Uint32(raw[24:28]))
	copy(s.hash[:], raw[40:60])
	wf, err := st.stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.gone = true
		return s, false
	}
	if err != nil {
		return s, false // staging says what is wrong with it
	}
	sec, nsec := binary.BigEndian.Uint32(raw[8:12]), binary.BigEndian.Uint32(raw[12:16])
	size := binary.BigEndian.Uint32(raw[36:40])
	same := s.mode == wf.mode && int64(size) == wf.size &&
		wf.mtime.Unix() == int64(sec) && wf.mtime.Nanosecond() == int(nsec) && wf.mtime.Before(c.racyBefore)
	return s, same
}

// sameContent reports whether the file at rel has the given mode and
// content.
func (g *Repo) sameContent(rel string, mode filemode.FileMode, hash plumbing.Hash) bool {
	abs := filepath.Join(g.dir, filepath.FromSlash(rel))
	wf, err := statFile(abs)
	if err != nil || wf.mode != mode {
		return false
	}
	data, err := os.ReadFile(abs)
	return err == nil && blobHash(data) == hash
}
