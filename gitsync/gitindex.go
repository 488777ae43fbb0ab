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

// indexScan is what one pass over an index found besides its entries.
type indexScan struct {
	count      int           // entries
	entriesEnd int64         // offset just after the last entry
	tree       plumbing.Hash // the cache tree's root when it vouches for every entry; zero with a conflict stage
	stages     bool          // some entry is a conflict stage
}

// rawIndexEntry is one entry as scanIndex hands it over: entry i of count
// (the header's, checked against the file's size), its offset and padded
// length in the file, and its bytes (the fixed part, then the name),
// valid only during the call.
type rawIndexEntry struct {
	i, count int
	off, len int64
	b        []byte
}

func (r rawIndexEntry) name() []byte { return r.b[entryFixedLen:] }

// scanIndex reads a version 2 index without extended entries from r
// (size bytes) in one streamed pass, handing each entry to fn in order,
// and verifies the checksum over the whole file before it returns: fn
// may have seen entries of a torn file, so a caller acts on what fn
// collected only when scanIndex succeeds. Any other shape is errNotFast.
// Nothing is allocated by a count or a size the file claims: it may be
// a torn file (see saveIndex).
func scanIndex(r io.Reader, size int64, fn func(rawIndexEntry) error) (indexScan, error) {
	var scan indexScan
	body := size - sha1.Size
	if body < indexHeaderLen {
		return scan, errNotFast
	}
	// Hashed as it is read, in the reader's large pieces (per entry, the
	// calls cost a third more), up to the checksum.
	sum := sha1.New()
	sr := &indexReader{r: bufio.NewReaderSize(io.TeeReader(r, &prefixWriter{w: sum, n: body}), 256<<10)}
	hdr, err := sr.take(indexHeaderLen)
	if err != nil {
		return scan, fmt.Errorf("git index: %w", err)
	}
	if !bytes.Equal(hdr[:4], indexSignature) || binary.BigEndian.Uint32(hdr[4:8]) != 2 {
		return scan, errNotFast
	}
	scan.count = int(binary.BigEndian.Uint32(hdr[8:12]))
	// Each entry takes at least 64 bytes: a count the file cannot hold is
	// refused before a caller allocates by it.
	if int64(scan.count) > (body-indexHeaderLen)/64 {
		return scan, fmt.Errorf("git index: %d entries do not fit in %d bytes", scan.count, size)
	}
	for i := 0; i < scan.count; i++ {
		e, err := sr.entry(body)
		if err != nil {
			return scan, fmt.Errorf("git index: entry %d: %w", i, err)
		}
		e.i, e.count = i, scan.count
		scan.stages = scan.stages || binary.BigEndian.Uint16(e.b[60:62])>>12&0x3 != 0
		if err := fn(e); err != nil {
			return scan, err
		}
	}
	scan.entriesEnd = sr.off
	if scan.tree, err = sr.extensions(body, scan.count); err != nil {
		return scan, err
	}
	got, err := sr.take(sha1.Size)
	if err != nil || !bytes.Equal(got, sum.Sum(nil)) { // every byte before it read and hashed
		return scan, fmt.Errorf("git index: checksum mismatch")
	}
	if scan.stages {
		scan.tree = plumbing.ZeroHash // a conflict: no one tree
	}
	return scan, nil
}

// indexReader reads an index in order, counting what it took.
type indexReader struct {
	r   *bufio.Reader
	off int64
}

// prefixWriter passes on the first n bytes written to it and drops the
// rest.
type prefixWriter struct {
	w io.Writer
	n int64
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if k := min(int64(len(b)), p.n); k > 0 {
		p.w.Write(b[:k]) // a hash.Hash never fails
		p.n -= k
	}
	return len(b), nil
}

// peek returns the next n bytes without taking them.
func (s *indexReader) peek(n int) ([]byte, error) {
	b, err := s.r.Peek(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// take returns the next n bytes (at most the buffer's size).
func (s *indexReader) take(n int) ([]byte, error) {
	b, err := s.peek(n)
	if err != nil {
		return nil, err
	}
	s.r.Discard(n)
	s.off += int64(n)
	return b, nil
}

// skip drops the next n bytes, however many.
func (s *indexReader) skip(n int64) error {
	m, err := io.CopyN(io.Discard, s.r, n)
	s.off += m
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// entry takes the next entry, which must end before body.
func (s *indexReader) entry(body int64) (rawIndexEntry, error) {
	if s.off+entryFixedLen > body {
		return rawIndexEntry{}, errors.New("truncated")
	}
	fixed, err := s.peek(entryFixedLen)
	if err != nil {
		return rawIndexEntry{}, err
	}
	flags := binary.BigEndian.Uint16(fixed[60:62])
	nameLen := int(flags & nameMask)
	if flags&extendedFlag != 0 || nameLen == nameMask {
		return rawIndexEntry{}, errNotFast // a name of 4095 bytes or more is not a note
	}
	n := (entryFixedLen + nameLen + 8) &^ 7 // NUL-padded to a multiple of 8
	if s.off+int64(n) > body {
		return rawIndexEntry{}, errors.New("truncated")
	}
	e := rawIndexEntry{off: s.off}
	b, err := s.take(n)
	if err != nil {
		return rawIndexEntry{}, err
	}
	e.len, e.b = int64(n), b[:entryFixedLen+nameLen]
	return e, nil
}

// extensions reads the extensions up to body and returns the cache
// tree's root when it vouches for all n entries. An optional extension
// (the untracked cache the git CLI may write) is skipped, and dropped by
// the next save; a required one is errNotFast: go-git's decoder says
// what it makes of it.
func (s *indexReader) extensions(body int64, n int) (plumbing.Hash, error) {
	var tree plumbing.Hash
	for s.off+8 <= body {
		h, err := s.take(8)
		if err != nil {
			return tree, fmt.Errorf("git index: %w", err)
		}
		sig, size := string(h[:4]), int64(binary.BigEndian.Uint32(h[4:8]))
		if size > body-s.off {
			return tree, fmt.Errorf("git index: extension %q truncated", sig)
		}
		if sig[0] < 'A' || sig[0] > 'Z' {
			return tree, errNotFast
		}
		if sig == string(treeExtSig) {
			// The root node comes first and is short: "" NUL, two
			// counts and a hash.
			head, err := s.peek(int(min(size, 128)))
			if err != nil {
				return tree, fmt.Errorf("git index: %w", err)
			}
			if h, ok := cacheTreeRoot(head, n); ok {
				tree = h
			}
		}
		if err := s.skip(size); err != nil {
			return tree, fmt.Errorf("git index: extension %q: %w", sig, err)
		}
	}
	if s.off != body {
		return tree, fmt.Errorf("git index: %d stray bytes after the entries", body-s.off)
	}
	return tree, nil
}

// decodeIndexFast decodes a version 2 index without extended entries
// (size bytes from r) and returns the tree its cache tree's root names
// (zero without one, or with a conflict stage). Entries are allocated in
// one slice and their names share one string.
func decodeIndexFast(r io.Reader, size int64) (*gitindex.Index, plumbing.Hash, error) {
	var entries []gitindex.Entry
	var nameEnds []int
	// Names share one string holding only the names (4 MB at 100,000
	// notes, where a copy of the whole file would be 10 MB).
	var nb strings.Builder
	scan, err := scanIndex(r, size, func(e rawIndexEntry) error {
		if e.i == 0 {
			entries, nameEnds = make([]gitindex.Entry, 0, e.count), make([]int, 0, e.count)
			nb.Grow(int(size) - indexHeaderLen - e.count*entryFixedLen) // names, padding and extensions
		}
		entries = append(entries, gitindex.Entry{})
		decodeEntryFixed(e.b, &entries[len(entries)-1])
		nb.Write(e.name())
		nameEnds = append(nameEnds, nb.Len())
		return nil
	})
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	idx := &gitindex.Index{Version: 2, Entries: make([]*gitindex.Entry, len(entries))}
	names, start := nb.String(), 0
	for i := range entries {
		entries[i].Name, start = names[start:nameEnds[i]], nameEnds[i]
		idx.Entries[i] = &entries[i]
	}
	return idx, scan.tree, nil
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
	buf := make([]byte, 0, 4096)
	b := append(buf[:0], indexSignature...)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint32(b, uint32(len(idx.Entries)))
	bw.Write(b)
	for _, e := range idx.Entries {
		var err error
		if b, err = appendEntry(buf[:0], e); err != nil {
			return err
		}
		bw.Write(b)
	}
	bw.Write(appendTreeExt(nil, len(idx.Entries), tree))
	if err := bw.Flush(); err != nil { // a bufio.Writer keeps its first error
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// decodeEntryFixed fills e from the fixed part of a raw entry (b holds
// at least entryFixedLen bytes): stat data, mode, size, hash and stage.
func decodeEntryFixed(b []byte, e *gitindex.Entry) {
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
	e.Stage = gitindex.Stage(binary.BigEndian.Uint16(b[60:62])>>12) & 0x3
}

// appendEntry appends e as a version 2 entry: the fixed part, the name
// and the NUL padding to a multiple of 8.
func appendEntry(b []byte, e *gitindex.Entry) ([]byte, error) {
	for _, t := range []time.Time{e.CreatedAt, e.ModifiedAt} {
		var s, ns uint32
		if !t.IsZero() {
			if t.Unix() < 0 || t.Unix() > 1<<32-1 {
				return b, fmt.Errorf("git index: %s: time %v out of range", e.Name, t)
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
	b = append(b, e.Name...)
	var zero [8]byte
	return append(b, zero[:8-(entryFixedLen+len(e.Name))%8]...), nil // NUL-padded to a multiple of 8
}

// appendTreeExt appends the cache-tree extension naming tree as the tree
// of all n entries: the root node alone, with no subtrees (see the top
// of this file). A zero tree appends nothing.
func appendTreeExt(b []byte, n int, tree plumbing.Hash) []byte {
	if tree.IsZero() {
		return b
	}
	ext := append([]byte{0}, strconv.Itoa(n)+" 0\n"...)
	ext = append(ext, tree[:]...)
	b = append(b, treeExtSig...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ext)))
	return append(b, ext...)
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
