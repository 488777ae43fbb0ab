package gitsync

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"
)

// The git index in the one shape this package writes (version 2, no
// extended flags), decoded and encoded here because go-git's codec goes
// through reflection field by field: at 100,000 notes reading the index
// was 18% of a one-note commit and writing it 17%. Anything else (an index
// the git CLI wrote with extensions, version 3 or 4) goes through go-git's
// decoder as before.
//
// Beside the entries, the index carries the tree they make, in git's own
// cache-tree extension ("TREE"), as its root node only: git reads a valid
// root as "this index is that tree" (git commit and git status use it; a
// git add invalidates it and git rebuilds the nodes it needs). The
// checksum over the whole file ties that tree to exactly these entries, so
// a commit that finds it equal to HEAD's tree knows the index is HEAD's
// and builds only the directories on its changed paths' way from HEAD's
// tree. An own extension was tried first: git prints "ignoring ANMT
// extension" on every command.

var (
	indexSignature = []byte("DIRC")
	treeExtSig     = []byte("TREE")
)

const (
	indexHeaderLen = 12
	entryFixedLen  = 62 // stat data, mode, sizes, hash and flags before the name
	nameMask       = 0xfff
	extendedFlag   = 0x4000
)

// errNotFast is an index this codec leaves to go-git's.
var errNotFast = errors.New("index shape left to go-git's decoder")

// decodeIndexFast decodes a version 2 index without extended entries and
// returns the tree its ANMT extension names (zero without one). Entries
// are allocated in one slice and their names share one string.
func decodeIndexFast(data []byte) (*gitindex.Index, plumbing.Hash, error) {
	var tree plumbing.Hash
	if len(data) < indexHeaderLen+sha1.Size || !bytes.Equal(data[:4], indexSignature) {
		return nil, tree, errNotFast
	}
	if binary.BigEndian.Uint32(data[4:8]) != 2 {
		return nil, tree, errNotFast
	}
	body := data[:len(data)-sha1.Size]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], data[len(body):]) {
		return nil, tree, fmt.Errorf("git index: checksum mismatch")
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	// Each entry takes at least 64 bytes: a count the file cannot hold is
	// refused before anything is allocated by it.
	if n > (len(body)-indexHeaderLen)/64 {
		return nil, tree, fmt.Errorf("git index: %d entries do not fit in %d bytes", n, len(data))
	}
	// Names share one string holding only the names (4 MB at 100,000
	// notes, where a copy of the whole file would be 10 MB): a first pass
	// sizes it.
	total := 0
	for i, off := 0, indexHeaderLen; i < n && off+entryFixedLen <= len(body); i++ {
		l := int(binary.BigEndian.Uint16(body[off+60:off+62]) & nameMask)
		total += l
		off += (entryFixedLen + l + 8) &^ 7
	}
	var nb strings.Builder
	nb.Grow(total)
	nameEnds := make([]int, n)
	entries := make([]gitindex.Entry, n)
	idx := &gitindex.Index{Version: 2, Entries: make([]*gitindex.Entry, n)}
	off := indexHeaderLen
	for i := range entries {
		if off+entryFixedLen > len(body) {
			return nil, tree, fmt.Errorf("git index: entry %d truncated", i)
		}
		b := body[off:]
		flags := binary.BigEndian.Uint16(b[60:62])
		if flags&extendedFlag != 0 {
			return nil, tree, errNotFast
		}
		nameLen := int(flags & nameMask)
		if nameLen == nameMask {
			return nil, tree, errNotFast // a name of 4095 bytes or more: not a note
		}
		if off+entryFixedLen+nameLen > len(body) {
			return nil, tree, fmt.Errorf("git index: entry %d truncated", i)
		}
		e := &entries[i]
		if s, ns := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8]); s != 0 || ns != 0 {
			e.CreatedAt = time.Unix(int64(s), int64(ns))
		}
		if s, ns := binary.BigEndian.Uint32(b[8:12]), binary.BigEndian.Uint32(b[12:16]); s != 0 || ns != 0 {
			e.ModifiedAt = time.Unix(int64(s), int64(ns))
		}
		e.Dev = binary.BigEndian.Uint32(b[16:20])
		e.Inode = binary.BigEndian.Uint32(b[20:24])
		e.Mode = filemode.FileMode(binary.BigEndian.Uint32(b[24:28]))
		e.UID = binary.BigEndian.Uint32(b[28:32])
		e.GID = binary.BigEndian.Uint32(b[32:36])
		e.Size = binary.BigEndian.Uint32(b[36:40])
		copy(e.Hash[:], b[40:60])
		e.Stage = gitindex.Stage(flags>>12) & 0x3
		nb.Write(b[entryFixedLen : entryFixedLen+nameLen])
		nameEnds[i] = nb.Len()
		idx.Entries[i] = e
		off += (entryFixedLen + nameLen + 8) &^ 7 // NUL-padded to a multiple of 8
	}
	names, start := nb.String(), 0
	for i := range entries {
		entries[i].Name, start = names[start:nameEnds[i]], nameEnds[i]
	}
	for off+8 <= len(body) {
		sig, size := body[off:off+4], int(binary.BigEndian.Uint32(body[off+4:off+8]))
		off += 8
		if size > len(body)-off {
			return nil, tree, fmt.Errorf("git index: extension %q truncated", sig)
		}
		switch {
		case bytes.Equal(sig, treeExtSig):
			if h, ok := cacheTreeRoot(body[off:off+size], n); ok {
				tree = h
			}
		case sig[0] < 'A' || sig[0] > 'Z':
			return nil, tree, errNotFast // a required extension: go-git's decoder says what it makes of it
		default:
			// An optional extension (the untracked cache the git CLI may
			// write): skipped, and dropped by the next save.
		}
		off += size
	}
	if off != len(body) {
		return nil, tree, fmt.Errorf("git index: %d stray bytes after the entries", len(body)-off)
	}
	for _, e := range idx.Entries {
		if e.Stage != 0 {
			return idx, plumbing.ZeroHash, nil // a conflict: no one tree
		}
	}
	return idx, tree, nil
}

// cacheTreeRoot reads the root node of a cache-tree extension: "" NUL,
// the entry count, a space, the subtree count, a newline, and the tree's
// hash when the count is not -1 (invalidated). The root vouches for the
// index only when it covers all n entries.
func cacheTreeRoot(ext []byte, n int) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(ext) == 0 || ext[0] != 0 {
		return h, false
	}
	line, rest, ok := bytes.Cut(ext[1:], []byte("\n"))
	if !ok {
		return h, false
	}
	count, _, ok := bytes.Cut(line, []byte(" "))
	if !ok || string(count) != strconv.Itoa(n) || len(rest) < len(h) {
		return h, false
	}
	copy(h[:], rest)
	return h, !h.IsZero()
}

// fastEncodable reports whether encodeIndexFast can write idx.
func fastEncodable(idx *gitindex.Index) bool {
	if idx.Version != 2 {
		return false
	}
	for _, e := range idx.Entries {
		if e.IntentToAdd || e.SkipWorktree || len(e.Name) >= nameMask {
			return false
		}
	}
	return true
}

// encodeIndexFast writes idx (sorted, version 2) to w with tree as its
// cache tree's root unless tree is zero, and the checksum git expects.
// It streams: a 10 MB buffer of the whole index was a sixth of a write's
// peak memory at 100,000 notes. The caller checked fastEncodable.
func encodeIndexFast(w io.Writer, idx *gitindex.Index, tree plumbing.Hash) error {
	sum := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 256<<10)
	var buf [entryFixedLen + 8]byte
	b := append(buf[:0], indexSignature...)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint32(b, uint32(len(idx.Entries)))
	bw.Write(b)
	for _, e := range idx.Entries {
		b = buf[:0]
		for _, t := range []time.Time{e.CreatedAt, e.ModifiedAt} {
			var s, ns uint32
			if !t.IsZero() {
				if t.Unix() < 0 || t.Unix() > 1<<32-1 {
					return fmt.Errorf("git index: %s: time %v out of range", e.Name, t)
				}
				s, ns = uint32(t.Unix()), uint32(t.Nanosecond())
			}
			b = binary.BigEndian.AppendUint32(b, s)
			b = binary.BigEndian.AppendUint32(b, ns)
		}
		for _, v := range []uint32{e.Dev, e.Inode, uint32(e.Mode), e.UID, e.GID, e.Size} {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		b = append(b, e.Hash[:]...)
		b = binary.BigEndian.AppendUint16(b, uint16(e.Stage&0x3)<<12|uint16(len(e.Name)))
		bw.Write(b)
		bw.WriteString(e.Name)
		var zero [8]byte
		bw.Write(zero[:8-(entryFixedLen+len(e.Name))%8]) // NUL-padded to a multiple of 8
	}
	if !tree.IsZero() {
		// The root node alone, with no subtrees: see the top of this file.
		ext := append([]byte{0}, strconv.Itoa(len(idx.Entries))+" 0\n"...)
		ext = append(ext, tree[:]...)
		bw.Write(treeExtSig)
		bw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(ext))))
		bw.Write(ext)
	}
	if err := bw.Flush(); err != nil { // a bufio.Writer keeps its first error
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// sortIndex puts entries in git's order (name, then stage). An index read
// from disk is in order already and one commit adds a few entries at the
// end: checking first saves sorting 100,000 entries every time.
func sortIndex(idx *gitindex.Index) {
	less := func(a, b *gitindex.Entry) bool {
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Stage < b.Stage
	}
	sorted := sort.SliceIsSorted(idx.Entries, func(i, j int) bool { return less(idx.Entries[i], idx.Entries[j]) })
	if !sorted {
		sort.SliceStable(idx.Entries, func(i, j int) bool { return less(idx.Entries[i], idx.Entries[j]) })
	}
}

// lookupEntries finds the given paths' entries (lowest stage) in a sorted
// index by binary search, without a map of every entry.
func lookupEntries(idx *gitindex.Index, paths []string) map[string]*gitindex.Entry {
	m := make(map[string]*gitindex.Entry, len(paths))
	for _, p := range paths {
		i := sort.Search(len(idx.Entries), func(i int) bool { return idx.Entries[i].Name >= p })
		if i < len(idx.Entries) && idx.Entries[i].Name == p {
			m[p] = idx.Entries[i]
		}
	}
	return m
}

// hasStages reports whether any entry is a conflict stage (left by a git
// CLI merge).
func hasStages(idx *gitindex.Index) bool {
	for _, e := range idx.Entries {
		if e.Stage != 0 {
			return true
		}
	}
	return false
}

// rawTreeEntry is one entry of a tree object's content, its name still in
// the object's bytes.
type rawTreeEntry struct {
	mode filemode.FileMode
	name []byte
	hash plumbing.Hash
	next int // offset of the entry after it
}

// parseRawTreeEntry parses the entry at off of a tree object's content.
func parseRawTreeEntry(raw []byte, off int) (rawTreeEntry, error) {
	var e rawTreeEntry
	sp := bytes.IndexByte(raw[off:], ' ')
	if sp < 0 {
		return e, errors.New("malformed tree entry")
	}
	nul := bytes.IndexByte(raw[off+sp:], 0)
	if nul < 0 || off+sp+nul+1+20 > len(raw) {
		return e, errors.New("malformed tree entry")
	}
	m, err := strconv.ParseUint(string(raw[off:off+sp]), 8, 32)
	if err != nil {
		return e, fmt.Errorf("malformed tree entry mode: %w", err)
	}
	e.mode, e.name = filemode.FileMode(m), raw[off+sp+1:off+sp+nul]
	e.next = off + sp + nul + 1 + 20
	copy(e.hash[:], raw[e.next-20:e.next])
	return e, nil
}

// compareTreeKeys orders two entries as git sorts a tree: by name, a
// directory as its name followed by "/" (so "a.b" < "a/" < "a0"). The
// one comparison behind tree building, merging, the git index and the
// checks of incoming trees; names as strings or raw bytes, compared
// without converting (no allocation in a sort).
func compareTreeKeys[A, B ~string | ~[]byte](a A, aDir bool, b B, bDir bool) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	ca, cb := -1, -1 // the end of a file's name
	if len(a) > n {
		ca = int(a[n])
	} else if aDir {
		ca = '/'
	}
	if len(b) > n {
		cb = int(b[n])
	} else if bDir {
		cb = '/'
	}
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}
