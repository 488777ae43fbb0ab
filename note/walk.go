package note

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/parallel"
)

// Entry is one candidate note file found by Walk.
type Entry struct {
	Rel     string // path inside the tree, forward slashes
	Size    int64
	MtimeNS int64
}

// Walk lists every file at a note path (IsNotePath) with its size and
// mtime (from lstat: symlinks are listed, so they can be reported), in
// lexical order of Rel, calling fn on the caller's goroutine. Other
// files and directories (.git, a hub's README.md, in-flight temporary
// files) are skipped, and only the type directories are read. A missing
// tree is empty; a file removed while the walk runs is left out.
//
// It is the cost of a reconcile with nothing to do (every command and
// hook runs one): at 100,000 notes filepath.WalkDir spent 400 ms, half in
// lstat by absolute path, most of the rest joining, cleaning and
// relativising paths. So each type directory is read once for names
// only (a note's type comes from its directory, its kind from lstat),
// and the note files are lstat'ed relative to their directory's open
// descriptor (fstatat where there is one: the kernel resolves one name,
// not the whole path), in chunks spread over GOMAXPROCS goroutines: a
// store's notes sit in a few big directories, a third of them in
// episodic/ alone.
func (t Tree) Walk(ctx context.Context, fn func(Entry) error) error {
	entries, err := t.list(ctx, nil)
	for _, e := range entries {
		if err := fn(e); err != nil {
			return fmt.Errorf("walk %s: %w", t.Root, err)
		}
	}
	return err
}

// List is Walk into a slice, for callers that keep every entry (a
// reconcile compares them all): the entries are laid out once, in order,
// rather than appended one by one.
func (t Tree) List(ctx context.Context) ([]Entry, error) {
	entries, err := t.list(ctx, nil)
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// walkChunk is how many names of a directory one goroutine lstats at a
// time: big enough that handing out chunks costs nothing next to the
// syscalls, small enough that the cores finish together.
const walkChunk = 512

// typeDir is one type directory of a walk.
type typeDir struct {
	typ   string
	dir   *walkDir
	err   error    // opening or reading it failed
	names []string // its note file names, sorted
	// found[i] is what lstat found for names[i]; Rel is "" for a name to
	// leave out (removed meanwhile, or a directory).
	found  []Entry
	chunks []statChunk
}

// statChunk is names[lo:hi] of one type directory; err is the first
// lstat that failed in it, at index errAt.
type statChunk struct {
	td     *typeDir
	lo, hi int
	errAt  int
	err    error
}

// list is the walk: the entries in order, up to the first failure (as
// filepath.WalkDir gave them), and that failure. afterList, when not nil,
// runs once the directories are listed and before their files are
// lstat'ed (tests remove files there).
func (t Tree) list(ctx context.Context, afterList func()) ([]Entry, error) {
	dirs, err := t.listTypeDirs(ctx)
	defer func() {
		for _, td := range dirs {
			td.dir.close()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", t.Root, err)
	}
	if afterList != nil {
		afterList()
	}
	total := 0
	for _, td := range dirs {
		total += len(td.names)
	}
	found := make([]Entry, total)
	var chunks []*statChunk
	for _, td := range dirs {
		td.found, found = found[:len(td.names)], found[len(td.names):]
		for lo := 0; lo < len(td.names); lo += walkChunk {
			td.chunks = append(td.chunks, statChunk{td: td, lo: lo, hi: min(lo+walkChunk, len(td.names)), errAt: -1})
		}
		for i := range td.chunks {
			chunks = append(chunks, &td.chunks[i])
		}
	}
	if err := parallel.For(ctx, len(chunks), runtime.GOMAXPROCS(0), func(i int) { chunks[i].stat() }); err != nil {
		return nil, fmt.Errorf("walk %s: %w", t.Root, err)
	}
	entries, err := compact(dirs)
	if err != nil {
		return entries, fmt.Errorf("walk %s: %w", t.Root, err)
	}
	return entries, nil
}

// compact moves the entries found, in order, to the front of the slice
// the directories' found share, and returns them with the first
// failure, ending them there.
func compact(dirs []*typeDir) ([]Entry, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	out := dirs[0].found[:0]
	for _, td := range dirs {
		if td.err != nil {
			return out, td.err
		}
		for _, c := range td.chunks {
			for i := c.lo; i < c.hi; i++ {
				if i == c.errAt {
					return out, c.err
				}
				if e := td.found[i]; e.Rel != "" {
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// stat lstats the chunk's names into found, stopping at the first
// failure other than a file removed meanwhile.
func (c *statChunk) stat() {
	td := c.td
	for i := c.lo; i < c.hi; i++ {
		st, err := td.dir.lstat(td.names[i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// removed while we walked
		case err != nil:
			c.errAt, c.err = i, err
			return
		case !st.isDir:
			// A directory inside a type directory is nothing of ours
			// (filepath.WalkDir skipped it by its entry's type).
			td.found[i] = Entry{Rel: td.typ + "/" + td.names[i], Size: st.size, MtimeNS: st.mtimeNS}
		}
	}
}

// listTypeDirs opens the tree's type directories and reads their note
// file names, on all cores. A root that is not a directory (missing, a
// file, a link: filepath.WalkDir did not follow one) has none. A
// directory that cannot be read is returned with its error, which
// [Tree.Walk] reports in its place. The caller closes the directories,
// even with an error.
func (t Tree) listTypeDirs(ctx context.Context) ([]*typeDir, error) {
	fi, err := os.Lstat(t.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil || !fi.IsDir() {
		return nil, err
	}
	root, err := openWalkRoot(t.Root)
	if err != nil {
		return nil, err
	}
	defer root.close()
	rootEntries, err := root.f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	// Only directories named after a type hold notes; nothing else is
	// opened (.git, a hub's .github/).
	var dirs []*typeDir
	for _, e := range rootEntries {
		if e.IsDir() && ValidType(e.Name()) {
			dirs = append(dirs, &typeDir{typ: e.Name()})
		}
	}
	slices.SortFunc(dirs, func(a, b *typeDir) int { return strings.Compare(a.typ, b.typ) })
	if err := parallel.For(ctx, len(dirs), runtime.GOMAXPROCS(0), func(i int) { dirs[i].err = dirs[i].readNames(root) }); err != nil {
		return dirs, err
	}
	// A directory that went away (or became a link) since the root was
	// read holds no notes.
	return slices.DeleteFunc(dirs, func(td *typeDir) bool { return errors.Is(td.err, errGone) }), nil
}

// errGone is a type directory that is no longer one.
var errGone = errors.New("type directory gone")

// readNames opens td's directory below root and reads its note file names,
// sorted.
func (td *typeDir) readNames(root *walkDir) error {
	d, err := root.openTypeDir(td.typ)
	if err != nil {
		return err
	}
	td.dir = d
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return err
	}
	notes := names[:0]
	for _, n := range names {
		if isNoteFileName(n) {
			notes = append(notes, n)
		}
	}
	slices.Sort(notes)
	td.names = notes
	return nil
}
