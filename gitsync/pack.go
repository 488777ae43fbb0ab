package gitsync

import (
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage"
)

// A hub or a peer is not trusted: what it sends is checked against these
// bounds while it arrives, before go-git sees any of it. go-git sizes
// its index writer by the object count a pack header claims
// (idxfile.Writer.OnHeader: make(objects, 0, count), 8 bytes per claimed
// object, 32 GB for a header claiming 4e9), and its parser inflates each
// object whole into memory (Parser.resolveDeltas, Parser.get), so a blob
// that inflates to gigabytes from a few MB on the wire is gigabytes of
// heap. The pack scanner refuses both from the headers alone.
const (
	// MaxPackObjects bounds the objects one fetch may bring. A first
	// sync of a 100,000-note store is about 100,000 objects plus a few
	// per commit of its history; twenty times that leaves room for years
	// of history and keeps go-git's per-object bookkeeping (a few hundred
	// bytes each) under a gigabyte.
	MaxPackObjects = 2_000_000

	// MaxPackBytes bounds the pack of one fetch on the wire (and the
	// spool file it is checked in). A 100,000-note store of
	// internal/synth notes (1.3 KB average, 134 MB of files) packs to
	// 84 MB; twelve times that covers larger notes and a long history.
	MaxPackBytes = 1 << 30

	// MaxBlobBytes bounds a blob: a note file over note.MaxFileSize is
	// never read as a note, so a bigger one can only be an attack (or a
	// file that does not belong in memory/). It is refused from its
	// header, before anything is inflated.
	MaxBlobBytes = note.MaxFileSize

	// MaxTreeBytes bounds a tree: a directory of 100,000 notes is a
	// tree of about 6 MB (57 bytes an entry). It is also the bound for a
	// delta whose base is unknown while the pack streams (a ref-delta to
	// an object that is neither local nor earlier in the pack), since
	// what it makes could be a tree.
	MaxTreeBytes = 64 << 20

	// MaxCommitBytes bounds a commit or a tag: ours are a few hundred
	// bytes, a merge listing its conflict copies a few KB.
	MaxCommitBytes = 1 << 20

	// MaxPackInflatedBytes bounds the sum of the objects' sizes in one
	// pack: each object within its bound, a pack of a million 1 MiB
	// blobs of zeros is still a terabyte to inflate (twice over, in
	// go-git). The 100,000-note store is 140 MB inflated.
	MaxPackInflatedBytes = 4 << 30

	// ProgressOnlyTimeout is how long a remote's progress messages
	// ("Counting objects", "Compressing objects") may keep a transfer
	// alive with no pack data: they show the server working, but a server
	// that sends nothing else would hold the sync and its lock forever.
	// git prepares the pack of a 100,000-note store in seconds; two
	// minutes leaves a busy hub room.
	ProgressOnlyTimeout = 2 * time.Minute
)

// Bounds tunes the bounds on what a remote may send (tests shrink them);
// zero fields take the defaults above.
type Bounds struct {
	PackBytes    int64         // default MaxPackBytes
	PackObjects  uint32        // default MaxPackObjects
	ProgressOnly time.Duration // default ProgressOnlyTimeout
}

func (b Bounds) withDefaults() Bounds {
	if b.PackBytes <= 0 {
		b.PackBytes = MaxPackBytes
	}
	if b.PackObjects == 0 {
		b.PackObjects = MaxPackObjects
	}
	if b.ProgressOnly <= 0 {
		b.ProgressOnly = ProgressOnlyTimeout
	}
	return b
}

// BoundError is a remote that sent more than a bound allows, or a pack
// that is not one; the text says which bound, in one line.
type BoundError struct{ msg string }

func (e *BoundError) Error() string { return e.msg }

func boundErrorf(format string, args ...any) error {
	return &BoundError{msg: fmt.Sprintf(format, args...)}
}

// errMalformedPack is a pack the scanner could not read as one.
var errMalformedPack = errors.New("malformed pack")

// packLimits are the bounds one scan checks.
type packLimits struct {
	bytes    int64
	objects  uint32
	blob     int64
	tree     int64
	commit   int64
	inflated int64
}

func defaultPackLimits(b Bounds) packLimits {
	b = b.withDefaults()
	return packLimits{bytes: b.PackBytes, objects: b.PackObjects, blob: MaxBlobBytes,
		tree: MaxTreeBytes, commit: MaxCommitBytes, inflated: MaxPackInflatedBytes}
}

// forType is the bound for an object of type t; an unknown type (a delta
// whose base is not known yet) gets the largest.
func (l packLimits) forType(t plumbing.ObjectType) (int64, string) {
	switch t {
	case plumbing.BlobObject:
		return l.blob, "limit for a note file"
	case plumbing.TreeObject:
		return l.tree, "limit for a tree"
	case plumbing.CommitObject, plumbing.TagObject:
		return l.commit, "limit for a " + t.String()
	}
	return max(l.blob, l.tree, l.commit), "limit for any object"
}

// packReader is the scanner's input: it reads the remote's pack data in
// blocks, copies every block to the spool as it is read, counts the
// total against the byte bound and serves bytes one at a time
// (compress/flate given an io.ByteReader reads exactly the bytes of one
// zlib stream, so the next object header is where the scanner expects
// it).
type packReader struct {
	src   io.Reader
	spool io.Writer
	buf   []byte
	r, w  int
	total int64 // bytes read from src
	max   int64
	off   int64 // bytes consumed by the scanner: the offset in the pack
	err   error
}

func (p *packReader) fill() error {
	if p.err != nil {
		return p.err
	}
	for {
		n, err := p.src.Read(p.buf)
		if n > 0 {
			p.total += int64(n)
			if p.total > p.max {
				p.err = boundErrorf("the pack is over %s (the bound for one fetch) and still coming", size(p.max))
				return p.err
			}
			if _, werr := p.spool.Write(p.buf[:n]); werr != nil {
				p.err = fmt.Errorf("spool the pack: %w", werr)
				return p.err
			}
			p.r, p.w = 0, n
			return nil
		}
		if err != nil {
			p.err = err
			return err
		}
	}
}

func (p *packReader) ReadByte() (byte, error) {
	if p.r == p.w {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	b := p.buf[p.r]
	p.r++
	p.off++
	return b, nil
}

func (p *packReader) Read(b []byte) (int, error) {
	if p.r == p.w {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.buf[p.r:p.w])
	p.r += n
	p.off += int64(n)
	return n, nil
}

// objectErr is why inflating object i failed: the stream's own error
// (a bound, the connection) when reading it failed, else a malformed
// pack.
func (p *packReader) objectErr(i uint32, err error) error {
	if p.err != nil && !errors.Is(p.err, io.EOF) {
		return p.err
	}
	return fmt.Errorf("%w: object %d: %v", errMalformedPack, i, unexpected(err))
}

// full reads exactly len(b) bytes; a pack that ends early is malformed.
func (p *packReader) full(b []byte) error {
	if _, err := io.ReadFull(p, b); err != nil {
		return unexpected(err)
	}
	return nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: it ends early", errMalformedPack)
	}
	return err
}

// packScan is what a scan found.
type packScan struct {
	objects  uint32
	bytes    int64
	inflated int64
}

// scanPack reads a pack from src, writes every byte it reads to spool,
// and checks it against lim from the headers as they come: the object
// count, each object's size by its type (a delta by the size of what it
// makes, from the delta's own header), the inflated total and the bytes
// on the wire. Memory is a few blocks plus 9 bytes per object (the types
// of earlier objects, which ofs-deltas name by offset); nothing is
// allocated by a size or count the pack claims. baseType finds the type
// of a ref-delta's base outside the pack (nil: none known).
func scanPack(src io.Reader, spool io.Writer, lim packLimits, baseType func(plumbing.Hash) (plumbing.ObjectType, bool)) (packScan, error) {
	s := &packScanner{pr: &packReader{src: src, spool: spool, buf: make([]byte, 64<<10), max: lim.bytes},
		lim: lim, baseType: baseType, scratch: make([]byte, 32<<10)}
	count, err := s.header()
	if err != nil {
		return s.res, err
	}
	for i := uint32(1); i <= count; i++ {
		if err := s.object(i); err != nil {
			return s.res, err
		}
	}
	err = s.trailer()
	return s.res, err
}

// packScanner is one scan's state.
type packScanner struct {
	pr       *packReader
	lim      packLimits
	baseType func(plumbing.Hash) (plumbing.ObjectType, bool)
	res      packScan
	// Offsets only grow, so the types of earlier objects are two sorted
	// slices, grown by append as objects arrive (never by the count).
	offsets []int64
	types   []plumbing.ObjectType
	zr      io.ReadCloser
	scratch []byte
}

// header reads the pack header and returns the object count it claims,
// refused over the bound.
func (s *packScanner) header() (uint32, error) {
	var hdr [12]byte
	if err := s.pr.full(hdr[:]); err != nil {
		return 0, err
	}
	if string(hdr[:4]) != "PACK" {
		return 0, fmt.Errorf("%w: no PACK signature", errMalformedPack)
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != 2 && v != 3 {
		return 0, fmt.Errorf("%w: version %d", errMalformedPack, v)
	}
	count := binary.BigEndian.Uint32(hdr[8:12])
	if count > s.lim.objects {
		return 0, boundErrorf("the pack claims %d objects, over the %d one fetch may bring", count, s.lim.objects)
	}
	return count, nil
}

func (s *packScanner) typeAt(off int64) (plumbing.ObjectType, bool) {
	i := sort.Search(len(s.offsets), func(i int) bool { return s.offsets[i] >= off })
	if i < len(s.offsets) && s.offsets[i] == off {
		return s.types[i], true
	}
	return plumbing.InvalidObject, false
}

// object checks object i (from 1): its header, then its data inflated
// in pieces.
func (s *packScanner) object(i uint32) error {
	start := s.pr.off
	typ, sz, err := readObjectHeader(s.pr)
	if err != nil {
		return err
	}
	made, err := s.madeType(i, typ, start)
	if err != nil {
		return err
	}
	limit, what := s.lim.forType(made)
	if !typ.IsDelta() && sz > limit {
		return boundErrorf("object %d of the pack is a %s of %s, over the %s %s", i, typ, size(sz), size(limit), what)
	}
	if typ.IsDelta() && sz > 2*limit+1024 {
		// An insert-only delta is its target plus a byte per 127.
		return boundErrorf("object %d of the pack is a delta of %s, over what the %s %s can need", i, size(sz), size(limit), what)
	}
	s.res.inflated += sz
	if s.res.inflated > s.lim.inflated {
		return boundErrorf("the pack's objects add up to over %s inflated, the bound for one fetch", size(s.lim.inflated))
	}
	if err := s.inflate(i, typ, sz, made, limit, what); err != nil {
		return err
	}
	s.offsets = append(s.offsets, start)
	s.types = append(s.types, made)
	s.res.objects++
	return nil
}

// madeType is the type of what object i makes: its own, or a delta's
// base's (AnyObject when the base is outside the pack and unknown).
func (s *packScanner) madeType(i uint32, typ plumbing.ObjectType, start int64) (plumbing.ObjectType, error) {
	switch typ {
	case plumbing.OFSDeltaObject:
		rel, err := readOffset(s.pr)
		if err != nil {
			return 0, err
		}
		if rel <= 0 || rel > start {
			return 0, fmt.Errorf("%w: object %d points outside the pack", errMalformedPack, i)
		}
		t, ok := s.typeAt(start - rel)
		if !ok {
			return 0, fmt.Errorf("%w: object %d's base is not an object", errMalformedPack, i)
		}
		return t, nil
	case plumbing.REFDeltaObject:
		var h plumbing.Hash
		if err := s.pr.full(h[:]); err != nil {
			return 0, err
		}
		if s.baseType != nil {
			if t, ok := s.baseType(h); ok {
				return t, nil
			}
		}
		return plumbing.AnyObject, nil
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		return typ, nil
	}
	return 0, fmt.Errorf("%w: object %d has type %d", errMalformedPack, i, typ)
}

// inflate reads object i's zlib stream of sz bytes in pieces; a delta's
// first bytes (the sizes of its base and target) are checked before the
// rest is inflated.
func (s *packScanner) inflate(i uint32, typ plumbing.ObjectType, sz int64, made plumbing.ObjectType, limit int64, what string) error {
	var err error
	if s.zr == nil {
		s.zr, err = zlib.NewReader(s.pr)
	} else {
		err = s.zr.(zlib.Resetter).Reset(s.pr, nil)
	}
	if err != nil {
		return s.pr.objectErr(i, err)
	}
	first := s.scratch[:min(sz, int64(len(s.scratch)))]
	if _, err := io.ReadFull(s.zr, first); err != nil {
		return s.pr.objectErr(i, err)
	}
	if typ.IsDelta() {
		target, err := deltaTargetSize(first)
		if err != nil {
			return fmt.Errorf("%w: object %d: %v", errMalformedPack, i, err)
		}
		if target > limit {
			return boundErrorf("object %d of the pack is a delta that makes a %s of %s, over the %s %s", i, madeName(made), size(target), size(limit), what)
		}
	}
	got := int64(len(first))
	for {
		n, err := s.zr.Read(s.scratch)
		got += int64(n)
		if got > sz {
			return boundErrorf("object %d of the pack inflates past the %s its header gives", i, size(sz))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.pr.objectErr(i, err)
		}
	}
	if got != sz {
		return fmt.Errorf("%w: object %d is %d bytes, its header says %d", errMalformedPack, i, got, sz)
	}
	return nil
}

// trailer reads the pack's checksum and refuses anything after it: a
// remote that keeps sending is cut here rather than when the byte bound
// is reached.
func (s *packScanner) trailer() error {
	var sum [20]byte
	if err := s.pr.full(sum[:]); err != nil {
		return err
	}
	s.res.bytes = s.pr.off
	if s.pr.r != s.pr.w {
		return boundErrorf("the remote sent more data after the pack's end")
	}
	switch err := s.pr.fill(); {
	case err == nil:
		return boundErrorf("the remote sent more data after the pack's end")
	case errors.Is(err, io.EOF):
		return nil
	default:
		return err
	}
}

func madeName(t plumbing.ObjectType) string {
	if t == plumbing.AnyObject {
		return "object"
	}
	return t.String()
}

// readObjectHeader reads an object's type and inflated size (for a
// delta, the size of the delta data): of an incoming pack as it is
// scanned, or of one on disk (objects.go).
func readObjectHeader(pr io.ByteReader) (plumbing.ObjectType, int64, error) {
	b, err := pr.ReadByte()
	if err != nil {
		return 0, 0, unexpected(err)
	}
	typ := plumbing.ObjectType((b >> 4) & 7)
	sz := int64(b & 15)
	shift := uint(4)
	for b&0x80 != 0 {
		if shift > 56 {
			return 0, 0, fmt.Errorf("%w: an object size over 64 bits", errMalformedPack)
		}
		if b, err = pr.ReadByte(); err != nil {
			return 0, 0, unexpected(err)
		}
		sz |= int64(b&0x7f) << shift
		shift += 7
	}
	if sz < 0 {
		return 0, 0, fmt.Errorf("%w: a negative object size", errMalformedPack)
	}
	return typ, sz, nil
}

// readOffset reads an ofs-delta's distance back to its base (git's
// encoding: each continuation adds one before shifting).
func readOffset(pr *packReader) (int64, error) {
	b, err := pr.ReadByte()
	if err != nil {
		return 0, unexpected(err)
	}
	off := int64(b & 0x7f)
	for n := 0; b&0x80 != 0; n++ {
		if n >= 8 {
			return 0, fmt.Errorf("%w: a delta offset over 64 bits", errMalformedPack)
		}
		if b, err = pr.ReadByte(); err != nil {
			return 0, unexpected(err)
		}
		off = ((off + 1) << 7) | int64(b&0x7f)
	}
	return off, nil
}

// deltaTargetSize reads the target size from the start of a delta (two
// little-endian base-128 numbers: base size, target size).
func deltaTargetSize(b []byte) (int64, error) {
	_, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errors.New("bad delta header")
	}
	t, m := binary.Uvarint(b[n:])
	if m <= 0 || t > 1<<62 {
		return 0, errors.New("bad delta header")
	}
	return int64(t), nil
}

// size is n bytes for a message: "1 MiB", "1.5 GiB", "512 bytes".
func size(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	f, u := float64(n)/1024, 0
	for f >= 1024 && u < len(units)-1 {
		f, u = f/1024, u+1
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[u])
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// storePack checks the pack in r against lim while spooling it to a
// file next to the repository's packs, and hands it to go-git only once
// all of it has passed: go-git's pack writer leaves its temporary pack
// behind when the stream breaks off, and a pack cut at a bound would
// otherwise leave one per attempt. data is told of each block read from
// r (pack data, what the progress-only bound watches).
func storePack(st storage.Storer, r io.Reader, lim packLimits, data func()) error {
	f, remove, err := spoolFile(st)
	if err != nil {
		return fmt.Errorf("spool the pack: %w", err)
	}
	defer remove()
	src := touchReader{r, data}
	if _, err := scanPack(src, f, lim, func(h plumbing.Hash) (plumbing.ObjectType, bool) {
		o, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.InvalidObject, false
		}
		return o.Type(), true
	}); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool the pack: %w", err)
	}
	return packfile.UpdateObjectStorage(st, touchReader{f, data})
}

// touchReader tells fn of each read that brought data.
type touchReader struct {
	r  io.Reader
	fn func()
}

func (t touchReader) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if n > 0 && t.fn != nil {
		t.fn()
	}
	return n, err
}

// spoolFile is a temporary file in the repository's objects/pack when st
// is a repository on disk (the pack ends up there anyway, and /tmp may be
// memory), in the system's temporary directory otherwise.
func spoolFile(st storage.Storer) (io.ReadWriteSeeker, func(), error) {
	if fs, ok := st.(interface{ Filesystem() billy.Filesystem }); ok {
		dir := fs.Filesystem().Join("objects", "pack")
		if err := fs.Filesystem().MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		f, err := fs.Filesystem().TempFile(dir, "tmp_spool_")
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close(); fs.Filesystem().Remove(f.Name()) }, nil
	}
	f, err := os.CreateTemp("", "anamnesis-pack-")
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close(); os.Remove(f.Name()) }, nil
}
