package gitsync

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/anamnesis-memory/anamnesis/internal/parallel"
)

// Temporary files of in-flight atomic writes; never committed.
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".tmp-anamnesis-") || strings.HasSuffix(name, ".anamnesis-tmp")
}

// loadIndex reads .git/index, sorted, and the tree its stage-0 entries
// make when the file says so (see gitindex.go; zero when unknown). A
// missing index is empty; one that cannot be decoded (torn, or an
// extension the git CLI wrote that go-git does not know) is rebuilt from
// HEAD's tree, which only costs rehashing every file once: the index is a
// cache of the worktree's stat data and of what is staged, and this
// package stages nothing it does not commit in the same step.
func (g *Repo) loadIndex() (*gitindex.Index, plumbing.Hash, error) {
	g.indexDecodes.Add(1)
	idx, mark, err := g.readIndexFile()
	if err == nil {
		sortIndex(idx)
		return idx, mark, nil
	}
	tree, terr := g.headTree()
	if terr != nil {
		return nil, plumbing.ZeroHash, terr
	}
	files, ferr := g.flatten(tree)
	if ferr != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("read git index (%v) and rebuild it: %w", err, ferr)
	}
	idx = &gitindex.Index{Version: 2}
	for p, e := range files {
		ie := idx.Add(p)
		ie.Hash, ie.Mode = e.Hash, e.Mode
	}
	sortIndex(idx)
	return idx, tree, nil
}

// readIndexFile decodes .git/index as it streams in: this package's own
// shape with decodeIndexFast, anything else with go-git's decoder.
func (g *Repo) readIndexFile() (*gitindex.Index, plumbing.Hash, error) {
	f, fi, err := g.openIndex()
	if errors.Is(err, fs.ErrNotExist) {
		return &gitindex.Index{Version: 2}, plumbing.ZeroHash, nil
	}
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	defer f.Close()
	fast, mark, err := decodeIndexFast(f, fi.Size())
	if !errors.Is(err, errNotFast) {
		return fast, mark, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	// go-git's decoder reads in small pieces: buffered, not a system call each.
	idx := &gitindex.Index{Version: 2}
	if err := gitindex.NewDecoder(bufio.NewReaderSize(f, 256<<10)).Decode(idx); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return idx, plumbing.ZeroHash, nil
}

// openIndex opens .git/index and stats it (its size bounds a scan; its
// mtime is the racy-clean instant of the index read).
func (g *Repo) openIndex() (*os.File, fs.FileInfo, error) {
	f, err := os.Open(filepath.Join(g.gitDir, "index"))
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// saveIndex writes .git/index through a temporary file and a rename, so a
// crash never leaves a torn index (go-git's own SetIndex writes in place).
// tree, unless zero, is the tree idx's entries make; it is recorded only
// when no entry is a conflict stage.
//
// The file is not fsynced. The index is a cache: of stat data (a stale or
// missing entry only makes the next status hash that file again) and of
// what was committed (every path it stages is committed before it is
// saved, and a commit's objects and ref are written first). After a power
// loss the rename may be lost (the previous index: its tree mark then
// differs from HEAD's, so the next commit builds every tree from the
// index as before) or the file may be empty or torn (its checksum fails
// and loadIndex rebuilds it from HEAD). A SIGKILL cannot tear it: the
// rename is atomic and the page cache survives the process. fsync of a
// 10 MB index at 100,000 notes was most of a one-note commit. The same
// holds for the index a commit of a few paths splices (commitFew, through
// replaceIndex): a scan that meets a torn file or a tree that is not
// HEAD's leaves the commit to loadIndex and the whole-index way.
func (g *Repo) saveIndex(idx *gitindex.Index, tree plumbing.Hash) error {
	sortIndex(idx)
	if idx.Version == 0 {
		idx.Version = 2
	}
	return g.replaceIndex(func(w io.Writer) error {
		if !fastEncodable(idx) {
			bw := bufio.NewWriterSize(w, 256<<10)
			if err := gitindex.NewEncoder(bw).Encode(idx); err != nil {
				return err
			}
			return bw.Flush()
		}
		if hasStages(idx) {
			tree = plumbing.ZeroHash
		}
		return encodeIndexFast(w, idx, tree)
	})
}

// worktreeFile is the state of one file on disk.
type worktreeFile struct {
	mode  filemode.FileMode
	size  int64
	mtime time.Time
}

// ErrSymlink is a symbolic link inside memory/: a store holds regular
// files in real directories only, and a link would send this machine's
// writes (and a sync's checkout) wherever it points.
var ErrSymlink = errors.New("is a symbolic link (a store holds regular files only; run anamnesis doctor --fix)")

// statFile describes the file at p. A symlink is ErrSymlink, never
// followed.
func statFile(p string) (worktreeFile, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return worktreeFile{}, err
	}
	wf := worktreeFile{mode: filemode.Regular, size: fi.Size(), mtime: fi.ModTime()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return wf, fmt.Errorf("%s %w", p, ErrSymlink)
	case !fi.Mode().IsRegular():
		return wf, fmt.Errorf("%s is not a regular file", p)
	case fi.Mode()&0o111 != 0:
		wf.mode = filemode.Executable
	}
	return wf, nil
}

// realParents checks that every directory between the worktree root and
// the file rel (forward slashes) that exists is a real directory, not a
// link: os.MkdirAll, os.Remove and a rename would all follow one.
func (g *Repo) realParents(rel string) error {
	dir := g.dir
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // created by the writer, as a real directory
		}
		if err != nil {
			return fmt.Errorf("stat %s: %w", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s %w", dir, ErrSymlink)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
	}
	return nil
}

// stageTouched brings idx entries for the given paths in line with the worktree:
// changed content is written as blobs, missing files are removed, and
// unchanged files only get their stat data refreshed. It returns the
// paths whose content or mode changed (a commit's changes) and whether any
// entry changed at all (the index then needs saving).
func (g *Repo) stageTouched(ctx context.Context, idx *gitindex.Index, paths []string, known map[string]*gitindex.Entry) (changed []string, touched bool, err error) {
	racyBefore := g.racyBefore()
	stats, err := g.statAll(ctx, paths)
	if err != nil {
		return changed, touched, err // nothing written yet: the index is saved by the caller only on success
	}
	for i, rel := range paths {
		c, t, err := g.stageOne(idx, known, rel, stats[i], racyBefore)
		if err != nil {
			return changed, touched, err
		}
		if c {
			changed = append(changed, rel)
		}
		touched = touched || t
	}
	return changed, touched, nil
}

// racyBefore is the instant before which a file's mtime can be trusted
// to show every change to it: the index's own mtime (a file modified in
// the same instant the index was written is "racily clean" and hashed).
func (g *Repo) racyBefore() time.Time {
	if fi, err := os.Stat(filepath.Join(g.gitDir, "index")); err == nil {
		return fi.ModTime()
	}
	return time.Now().Add(-2 * time.Second)
}

// stageOne is stageTouched for the path rel, which st describes: whether
// its content or mode changed, and whether its entry changed at all.
func (g *Repo) stageOne(idx *gitindex.Index, known map[string]*gitindex.Entry, rel string, st statResult, racyBefore time.Time) (changed, touched bool, err error) {
	e := known[rel]
	if errors.Is(st.err, fs.ErrNotExist) {
		if e == nil {
			return false, false, nil
		}
		removeEntries(idx, rel)
		delete(known, rel)
		return true, true, nil
	}
	if keep, err := g.keepEntry(e, rel, st, racyBefore); keep || err != nil {
		return false, false, err
	}
	abs := filepath.Join(g.dir, filepath.FromSlash(rel))
	data, err := os.ReadFile(abs)
	if err != nil {
		return false, true, fmt.Errorf("read %s: %w", abs, err)
	}
	h := blobHash(data)
	if e == nil || e.Hash != h || e.Mode != st.wf.mode || e.Stage != 0 {
		if _, err := g.writeBlob(data); err != nil {
			return false, true, err
		}
		changed = true
	}
	if e == nil || e.Stage != 0 {
		removeEntries(idx, rel) // also drops conflict stages a git CLI merge left
		e = idx.Add(rel)
		known[rel] = e
	}
	e.Hash, e.Mode, e.Size, e.ModifiedAt = h, st.wf.mode, uint32(st.wf.size), st.wf.mtime
	return changed, true, nil
}

// keepEntry reports whether rel's entry e stays as it is without reading
// the file: it is stat-clean, or the file is too large to commit.
func (g *Repo) keepEntry(e *gitindex.Entry, rel string, st statResult, racyBefore time.Time) (bool, error) {
	if st.err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Join(g.dir, filepath.FromSlash(rel)), st.err)
	}
	if st.wf.size > MaxBlobBytes {
		// Every other machine refuses a file this large (a note is
		// at most MaxBlobBytes): committing it would stop their syncs.
		// It stays out of history, its last committed version (if
		// any) in; the sync's report names it.
		g.tooLarge = append(g.tooLarge, rel)
		return true, nil
	}
	return e != nil && e.Stage == 0 && statClean(e, st.wf, racyBefore), nil
}

// statClean reports whether the file wf is as its entry e records it:
// same mode, size and mtime, and not modified in the same instant the
// index was written ("racily clean", then it is hashed).
func statClean(e *gitindex.Entry, wf worktreeFile, racyBefore time.Time) bool {
	return e.Mode == wf.mode && int64(e.Size) == wf.size && e.ModifiedAt.Equal(wf.mtime) && wf.mtime.Before(racyBefore)
}

// removeEntries drops every stage of rel from idx.
func removeEntries(idx *gitindex.Index, rel string) {
	for {
		if _, err := idx.Remove(rel); err != nil {
			return
		}
	}
}

// statResult is statFile's answer for one path.
type statResult struct {
	wf  worktreeFile
	err error
}

// statAll stats the worktree paths, on as many goroutines as there are
// CPUs for a long list: a sync with nothing to do is an lstat of every
// note, which at 100,000 notes was 40% of it on one core.
func (g *Repo) statAll(ctx context.Context, paths []string) ([]statResult, error) {
	out := make([]statResult, len(paths))
	one := func(i int) {
		out[i].wf, out[i].err = statFile(filepath.Join(g.dir, filepath.FromSlash(paths[i])))
	}
	// One goroutine below a few thousand paths: a commit of one note
	// stats a handful.
	if err := parallel.For(ctx, len(paths), min(8, len(paths)/1024+1), one); err != nil {
		return nil, err
	}
	return out, nil
}

// worktreePaths lists every file under the worktree except .git and
// in-flight temporary files (see walkWorktree), in no order.
func (g *Repo) worktreePaths(removeLeftovers bool) ([]string, error) {
	var out []string
	err := g.walkWorktree(removeLeftovers, func(dir, name string) {
		if dir != "" {
			name = dir + "/" + name
		}
		out = append(out, name)
	})
	return out, err
}

// walkWorktree calls fn with every file under the worktree except .git
// and in-flight temporary files: its directory (relative, forward
// slashes, "" for the root) and its name. A symbolic link is ErrSymlink.
// With removeLeftovers, checkout temporary files are deleted as they are
// met: only a caller holding the lock may ask for that, because only
// then is no checkout writing them.
//
// Each directory is read unsorted and paths are built by concatenation:
// filepath.WalkDir sorts every directory and its callers joined and
// relativized each path, a quarter of a sync with nothing to do at
// 100,000 notes. Callers sort or look up as they need.
func (g *Repo) walkWorktree(removeLeftovers bool, fn func(dir, name string)) error {
	var walk func(abs, rel string) error
	walk = func(abs, rel string) error {
		f, err := os.Open(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we looked
		}
		if err != nil {
			return err
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, d := range entries {
			name := d.Name()
			switch {
			case d.IsDir():
				if name == ".git" {
					continue
				}
				r := name
				if rel != "" {
					r = rel + "/" + name
				}
				if err := walk(filepath.Join(abs, name), r); err != nil {
					return err
				}
			case d.Type()&fs.ModeSymlink != 0:
				return fmt.Errorf("%s %w", filepath.Join(abs, name), ErrSymlink)
			case isTempName(name):
				// Under the lock, a checkout temp file was left by a killed
				// sync. Without it, it may belong to a sync running right now,
				// between writing and renaming it: removing it made that sync
				// fail half way. Writers' own temp files (.tmp-anamnesis-*)
				// are never ours to touch.
				if removeLeftovers && strings.HasSuffix(name, ".anamnesis-tmp") {
					os.Remove(filepath.Join(abs, name))
				}
			default:
				fn(rel, name)
			}
		}
		return nil
	}
	if err := walk(g.dir, ""); err != nil {
		return fmt.Errorf("walk %s: %w", g.dir, err)
	}
	return nil
}

func entryMap(idx *gitindex.Index) map[string]*gitindex.Entry {
	m := make(map[string]*gitindex.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		if cur, ok := m[e.Name]; !ok || e.Stage < cur.Stage {
			m[e.Name] = e
		}
	}
	return m
}

// everyPath is what a commit of the whole worktree stages: idx's entries
// by path, and every worktree file plus every indexed path that is gone
// (a deletion). removeLeftovers is worktreePaths'.
func (g *Repo) everyPath(idx *gitindex.Index, removeLeftovers bool) (map[string]*gitindex.Entry, []string, error) {
	known := entryMap(idx)
	paths, err := g.worktreePaths(removeLeftovers)
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		seen[p] = true
	}
	for p := range known {
		if !seen[p] {
			paths = append(paths, p) // indexed but gone: stage the deletion
		}
	}
	return known, paths, nil
}

// CommitAll commits every change in the worktree (new, edited and deleted
// files), as `git add -A && git commit` would. It returns the new head and
// whether a commit was made. The caller holds the lock.
func (g *Repo) CommitAll(ctx context.Context) (Hash, bool, error) {
	h, ok, err := g.commitAll(ctx)
	return Hash(h), ok, err
}

func (g *Repo) commitAll(ctx context.Context) (plumbing.Hash, bool, error) {
	msg := g.commitMessage() + "\nsync: commit what changed on disk since the last commit\n"
	st, err := g.statusByIndex(ctx, true)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if st.complete {
		// Every file is indexed and the index is HEAD's: what can have
		// changed are the suspects, committed as a write's paths are.
		if len(st.suspects) == 0 {
			return st.head, false, nil
		}
		if h, committed, done, err := g.commitFew(ctx, st.paths(), msg); done || err != nil {
			return h, committed, err
		}
	}
	idx, mark, err := g.loadIndex()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	known, paths, err := g.everyPath(idx, true)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	return g.commit(ctx, idx, mark, known, paths, msg)
}

// CommitPaths commits the current content of the given worktree paths
// (relative, forward slashes) without scanning anything else: the fast
// path after writing one note. The caller holds the lock.
func (g *Repo) CommitPaths(ctx context.Context, paths []string) (Hash, bool, error) {
	return g.CommitPathsSaying(ctx, paths, "")
}

// CommitPathsSaying is CommitPaths with what happened (one or more
// lines, "write semantic 01J…: title") as the commit message's body,
// under the subject the Python tool's dashboard parses.
func (g *Repo) CommitPathsSaying(ctx context.Context, paths []string, what string) (Hash, bool, error) {
	msg := g.commitMessage()
	if what = strings.TrimSpace(what); what != "" {
		msg += "\n" + what + "\n"
	}
	return g.CommitPathsMessage(ctx, paths, msg)
}

// CommitPathsMessage is CommitPaths with a whole message of the caller's
// ("": the usual one): a consolidation run's commit says what it did, so
// that `consolidate --log` can list it and `--undo` find it.
func (g *Repo) CommitPathsMessage(ctx context.Context, paths []string, msg string) (Hash, bool, error) {
	h, ok, err := g.commitPathsMessage(ctx, paths, msg)
	return Hash(h), ok, err
}

func (g *Repo) commitPathsMessage(ctx context.Context, paths []string, msg string) (plumbing.Hash, bool, error) {
	for _, p := range paths {
		if err := g.realParents(p); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	if h, committed, done, err := g.commitFew(ctx, paths, msg); done || err != nil {
		return h, committed, err
	}
	idx, mark, err := g.loadIndex()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	headTree, err := g.headTree()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if mark.IsZero() || mark != headTree {
		// The index is not HEAD's tree: the git CLI wrote it, or a sync
		// was killed after moving main but before saving the index, which
		// then lags behind the files the sync wrote. Committing only
		// paths on top of it would undo that sync's changes in this
		// commit: stage the whole worktree instead, as CommitAll does.
		known, all, err := g.everyPath(idx, false)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		return g.commit(ctx, idx, mark, known, all, msg)
	}
	return g.commit(ctx, idx, mark, lookupEntries(idx, paths), paths, msg)
}

// headTree is the tree main points at (zero before the first commit).
func (g *Repo) headTree() (plumbing.Hash, error) {
	head, err := g.head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return g.commitTree(head)
}

// headAndTree is the commit main points at and its tree (zero before
// the first commit).
func (g *Repo) headAndTree() (head, tree plumbing.Hash, err error) {
	if head, err = g.head(); err != nil {
		return head, tree, err
	}
	tree, err = g.commitTree(head)
	return head, tree, err
}

// changesOf is what updateTree applies for the changed paths: each one's
// staged entry, nil for a deletion.
func changesOf(changed []string, known map[string]*gitindex.Entry) map[string]*entry {
	changes := make(map[string]*entry, len(changed))
	for _, p := range changed {
		changes[p] = nil
		if e := known[p]; e != nil {
			changes[p] = &entry{Mode: e.Mode, Hash: e.Hash}
		}
	}
	return changes
}

// commit stages paths (known holds at least their entries) and commits
// the index with msg ("": the usual message). mark is the tree the index
// made as loaded (zero if unknown).
func (g *Repo) commit(ctx context.Context, idx *gitindex.Index, mark plumbing.Hash, known map[string]*gitindex.Entry, paths []string, msg string) (plumbing.Hash, bool, error) {
	changed, touched, err := g.stageTouched(ctx, idx, paths, known)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	head, headTree, err := g.headAndTree()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	var tree plumbing.Hash
	if !mark.IsZero() && mark == headTree {
		// The index was HEAD's tree before staging: HEAD's tree with the
		// staged changes is the index's tree, built along their paths only.
		tree, err = g.updateTree(headTree, changesOf(changed, known))
	} else {
		// An index of unknown or other content (the git CLI wrote it, a
		// sync was killed between its index and its ref): every tree is
		// built from it, as git write-tree would.
		all := entryMap(idx)
		if head.IsZero() && len(all) == 0 {
			return head, false, nil
		}
		files := make(map[string]entry, len(all))
		for p, e := range all {
			files[p] = entry{Mode: e.Mode, Hash: e.Hash}
		}
		tree, err = g.buildTree(files)
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	return g.record(head, headTree, tree, mark, touched, msg, func(tree plumbing.Hash) error { return g.saveIndex(idx, tree) })
}

// record commits tree on top of head (whose tree is headTree) unless it
// is headTree, then saves the index with save. mark is the tree the index
// made before staging and touched whether staging changed any entry: an
// index whose tree is HEAD's is saved again only then (refreshed stat
// data speed up the next status; a mark lets the next commit start from
// HEAD's tree). A zero tree is the empty one (every file deleted).
func (g *Repo) record(head, headTree, tree, mark plumbing.Hash, touched bool, msg string, save func(tree plumbing.Hash) error) (plumbing.Hash, bool, error) {
	if tree.IsZero() {
		var err error
		if tree, err = g.writeTree(nil); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	if tree == headTree {
		if touched || mark != tree {
			return head, false, save(tree)
		}
		return head, false, nil
	}
	var parents []plumbing.Hash
	if !head.IsZero() {
		parents = []plumbing.Hash{head}
	}
	if msg == "" {
		msg = g.commitMessage()
	}
	c, err := g.writeCommit(tree, parents, msg)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if err := g.moveBranch(head, c); err != nil {
		return plumbing.ZeroHash, false, err
	}
	if err := save(tree); err != nil {
		return plumbing.ZeroHash, false, err
	}
	return c, true, nil
}

// Dirty reports whether the worktree differs from HEAD. It stops at the
// first difference and changes nothing, in memory/ or .git, so it is
// safe without the lock while a sync runs: files whose size and mtime match
// the index are trusted, the rest are hashed and compared (see
// statusByIndex).
func (g *Repo) Dirty() (bool, error) {
	st, err := g.statusByIndex(context.Background(), false) // no lock held: look, never touch
	if errors.Is(err, ErrSymlink) {
		return true, nil // a link is not committed (sync refuses it; doctor --fix removes it)
	}
	if err != nil {
		return false, err
	}
	if !st.complete {
		return g.dirtyByDecodedIndex()
	}
	for _, s := range st.suspects {
		if s.gone || !g.sameContent(s.path, s.mode, s.hash) {
			return true, nil
		}
	}
	return false, nil
}

// dirtyByDecodedIndex is Dirty for an index statusByIndex cannot vouch
// for: decoded whole, and compared with every file and with HEAD's tree.
func (g *Repo) dirtyByDecodedIndex() (bool, error) {
	idx, mark, err := g.loadIndex()
	if err != nil {
		return false, err
	}
	known := entryMap(idx)
	if differs, err := g.worktreeDiffers(known); differs || err != nil {
		return differs, err
	}
	return g.indexDiffersFromHead(known, mark)
}

// worktreeDiffers reports whether the worktree's files are not exactly
// known's: one differs from its entry, is not in it, or is gone.
func (g *Repo) worktreeDiffers(known map[string]*gitindex.Entry) (bool, error) {
	paths, err := g.worktreePaths(false) // no lock held: look, never touch
	if errors.Is(err, ErrSymlink) {
		return true, nil // a link is not committed (sync refuses it; doctor --fix removes it)
	}
	if err != nil {
		return false, err
	}
	if len(paths) != len(known) {
		return true, nil
	}
	racyBefore := g.racyBefore()
	for _, rel := range paths {
		e := known[rel]
		if e == nil || e.Stage != 0 {
			return true, nil
		}
		wf, err := statFile(filepath.Join(g.dir, filepath.FromSlash(rel)))
		if err != nil || !statClean(e, wf, racyBefore) && !g.sameContent(rel, e.Mode, e.Hash) {
			return true, nil
		}
	}
	return false, nil
}

// indexDiffersFromHead reports whether the index's entries (known; mark
// the tree the index recorded, zero if none) are not HEAD's tree.
func (g *Repo) indexDiffersFromHead(known map[string]*gitindex.Entry, mark plumbing.Hash) (bool, error) {
	headTree, err := g.headTree()
	if err != nil {
		return false, err
	}
	if !mark.IsZero() {
		// The index's own tree, recorded with it: nothing is staged
		// unless it differs from HEAD's, and HEAD need not be listed.
		return mark != headTree, nil
	}
	headFiles, err := g.flatten(headTree)
	if err != nil {
		return false, err
	}
	if len(headFiles) != len(known) {
		return true, nil
	}
	for p, e := range known {
		if headFiles[p] != (entry{Mode: e.Mode, Hash: e.Hash}) {
			return true, nil // staged but not committed
		}
	}
	return false, nil
}
