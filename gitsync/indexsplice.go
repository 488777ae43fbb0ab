package gitsync

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// A commit of a few known paths (a write, a SessionEnd's capture, the
// edits a sync found) edits .git/index in place of decoding it: one
// streamed pass reads the entries of those paths and where they go and
// verifies the checksum, and a second copies the file's bytes around the
// changed entries into the new index. Nothing is held per entry: at
// 100,000 notes the decoded index was most of a write's 64 MB peak and
// decoding and encoding it 40% of its time.

// indexEdit replaces, at off in the old index, the entry of old bytes
// (0: none, an insertion) with e (nil: none, a deletion).
type indexEdit struct {
	off, old int64
	e        *gitindex.Entry
}

// pathsInIndex is one pass over an index looking for paths (sorted,
// unique): each one's entry (nil when absent) and its offset and length,
// or where it would be inserted.
type pathsInIndex struct {
	scan    indexScan
	paths   []string
	entries []*gitindex.Entry
	at      []indexEdit
}

// findPaths scans the index in r (size bytes) for paths, sorted and
// unique, with scanIndex: its errors (errNotFast, a torn file) are the
// caller's cue to decode the index as a whole instead.
func findPaths(r io.Reader, size int64, paths []string) (pathsInIndex, error) {
	p := pathsInIndex{paths: paths, entries: make([]*gitindex.Entry, len(paths)), at: make([]indexEdit, len(paths))}
	j := 0
	scan, err := scanIndex(r, size, func(e rawIndexEntry) error {
		// Index order is byte order of the whole path, as Go compares strings.
		name := e.name()
		for j < len(paths) && paths[j] < string(name) {
			p.at[j].off = e.off // absent: inserted before this entry
			j++
		}
		if j < len(paths) && paths[j] == string(name) {
			ie := &gitindex.Entry{Name: paths[j]}
			decodeEntryFixed(e.b, ie)
			p.entries[j], p.at[j] = ie, indexEdit{off: e.off, old: e.len}
			j++
		}
		return nil
	})
	for ; j < len(paths); j++ {
		p.at[j].off = scan.entriesEnd
	}
	p.scan = scan
	return p, err
}

// edits are the changes that turn the scanned index into one where each
// path has staged's entry (none when staged has none).
func (p pathsInIndex) edits(staged map[string]*gitindex.Entry) []indexEdit {
	var out []indexEdit
	for i, path := range p.paths {
		ed := p.at[i]
		ed.e = staged[path]
		if ed.old == 0 && ed.e == nil {
			continue
		}
		out = append(out, ed)
	}
	return out
}

// writeSplicedIndex writes to w the index src (scanned as scan) with
// edits applied (in order of offset), tree as its cache tree's root
// unless zero, and its checksum. The old index's extensions are dropped,
// as saveIndex drops them.
func writeSplicedIndex(w io.Writer, src io.ReaderAt, scan indexScan, edits []indexEdit, tree plumbing.Hash) error {
	count := scan.count
	for _, ed := range edits {
		if ed.old > 0 {
			count--
		}
		if ed.e != nil {
			count++
		}
	}
	sum := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 256<<10)
	hdr := append(slices.Clone(indexSignature), 0, 0, 0, 2)
	bw.Write(binary.BigEndian.AppendUint32(hdr, uint32(count)))
	cur := int64(indexHeaderLen)
	buf := make([]byte, 0, 4096)
	for _, ed := range edits {
		if _, err := io.Copy(bw, io.NewSectionReader(src, cur, ed.off-cur)); err != nil {
			return fmt.Errorf("copy git index: %w", err)
		}
		if ed.e != nil {
			b, err := appendEntry(buf[:0], ed.e)
			if err != nil {
				return err
			}
			bw.Write(b)
		}
		cur = ed.off + ed.old
	}
	if _, err := io.Copy(bw, io.NewSectionReader(src, cur, scan.entriesEnd-cur)); err != nil {
		return fmt.Errorf("copy git index: %w", err)
	}
	bw.Write(appendTreeExt(nil, count, tree))
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// commitFew commits paths on top of HEAD by editing the index in place
// (see the top of this file). done is false when the index is not fit
// for that: missing, of a shape only go-git reads, torn, with a conflict
// stage, or not HEAD's tree (the git CLI staged into it, a sync was
// killed between its index and its ref); the caller then commits as
// before, from the decoded index.
func (g *Repo) commitFew(ctx context.Context, paths []string, msg string) (h plumbing.Hash, committed, done bool, err error) {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	f, fi, err := g.openIndex()
	if err != nil {
		return plumbing.ZeroHash, false, false, nil
	}
	defer f.Close()
	found, err := findPaths(f, fi.Size(), paths)
	if err != nil || found.scan.tree.IsZero() {
		return plumbing.ZeroHash, false, false, nil
	}
	head, headTree, err := g.headAndTree()
	if err != nil {
		return plumbing.ZeroHash, false, false, err
	}
	if found.scan.tree != headTree {
		return plumbing.ZeroHash, false, false, nil
	}
	few := &gitindex.Index{Version: 2}
	known := make(map[string]*gitindex.Entry, len(paths))
	for i, e := range found.entries {
		if e != nil {
			few.Entries = append(few.Entries, e)
			known[paths[i]] = e
		}
	}
	changed, touched, err := g.stageTouched(ctx, few, paths, known)
	if err != nil {
		return plumbing.ZeroHash, false, true, err
	}
	tree, err := g.updateTree(headTree, changesOf(changed, known))
	if err != nil {
		return plumbing.ZeroHash, false, true, err
	}
	save := func(tree plumbing.Hash) error { return g.replaceIndexSpliced(f, found, known, tree) }
	h, committed, err = g.record(head, headTree, tree, headTree, touched, msg, save)
	return h, committed, true, err
}

// replaceIndexSpliced replaces .git/index by the index open in f (scanned
// as found) with the found paths given staged's entries (none where
// staged has none) and tree as its cache tree's root.
func (g *Repo) replaceIndexSpliced(f *os.File, found pathsInIndex, staged map[string]*gitindex.Entry, tree plumbing.Hash) error {
	return g.replaceIndex(func(w io.Writer) error {
		err := writeSplicedIndex(w, f, found.scan, found.edits(staged), tree)
		f.Close() // before the rename: Windows renames over no open file
		return err
	})
}

// replaceIndex writes .git/index with write through a temporary file and
// a rename (see saveIndex for why it is not fsynced).
func (g *Repo) replaceIndex(write func(io.Writer) error) error {
	f, err := os.CreateTemp(g.gitDir, "index.anamnesis-tmp-*")
	if err != nil {
		return fmt.Errorf("write git index: %w", err)
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write git index: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write git index: %w", err)
	}
	if err := platform.Rename(tmp, filepath.Join(g.gitDir, "index")); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace git index: %w", err)
	}
	return nil
}
