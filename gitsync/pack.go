package gitsync

import (
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
)

// A hub or a peer is not trusted: what it sends is checked against these
// bounds while it arrives, before any of it is stored, from the headers
// alone: a count or size the pack claims allocates nothing (go-git's pack
// writer, which stored fetched packs before packindex.go, preallocated by
// the claimed count, 32 GB for a header claiming 4e9, and inflated every
// object whole, so a blob that inflates to gigabytes from a few MB on the
// wire was gigabytes of heap).
const (
	// MaxPackObjects bounds the objects one fetch may bring. A first
	// sync of a 100,000-note store is about 100,000 objects plus a few
	// per commit of its history; twenty times that leaves room for years
	// of history and keeps the scan's per-object bookkeeping (45 bytes
	// each: offset, type, CRC-32, name, base) under 100 MB.
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
	// pack (a delta counts its own data and the object it makes): each
	// object within its bound, a pack of a million 1 MiB blobs of zeros,
	// or of deltas copying one, is still a terabyte to inflate. The
	// 100,000-note store is 140 MB inflated. It also bounds the work of
	// making delta bases again while a pack is indexed (packIndexer).
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
	// When a pack is indexed, what the scanner consumed is summed for
	// the pack's checksum and each object's CRC-32, lazily: buf[mark:r]
	// is consumed and not summed yet (a byte at a time would cost more
	// than inflating).
	sum  hash.Hash // nil: not summing
	crc  uint32
	mark int
}

// account adds what was consumed since the last call to the sums.
func (p *packReader) account() {
	if p.sum != nil && p.r > p.mark {
		b := p.buf[p.mark:p.r]
		p.sum.Write(b)
		p.crc = crc32.Update(p.crc, crc32.IEEETable, b)
	}
	p.mark = p.r
}

// startCRC starts the CRC-32 of an object at the next byte.
func (p *packReader) startCRC() {
	p.account()
	p.crc = 0
}

// endCRC is the CRC-32 of what was consumed since startCRC.
func (p *packReader) endCRC() uint32 {
	p.account()
	return p.crc
}

// packSum ends the pack's checksum (before its trailer): nothing read
// after this is summed.
func (p *packReader) packSum() (s plumbing.Hash) {
	p.account()
	if p.sum != nil {
		copy(s[:], p.sum.Sum(nil))
		p.sum = nil
	}
	return s
}

func (p *packReader) fill() error {
	if p.err != nil {
		return p.err
	}
	p.account()
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
			p.r, p.w, p.mark = 0, n, 0
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
// allocated by a size or count the pack claims. A ref-delta is bounded
// as an object of any type. (A fetch indexes as it scans: indexPack.)
func scanPack(src io.Reader, spool io.Writer, lim packLimits) (packScan, error) {
	return newPackScanner(src, spool, lim).scan()
}

// indexPack scans a pack as scanPack does and also names its objects
// for an index (ix): each object is then inflated whole, within its
// bound, and a delta's object made from its base, which must be earlier
// in the pack (we never ask for thin packs, and go-git refused their
// deltas too). It returns the pack's checksum, verified.
func indexPack(src io.Reader, spool io.Writer, lim packLimits, ix *packIndexer) (packScan, plumbing.Hash, error) {
	s := newPackScanner(src, spool, lim)
	s.ix = ix
	s.pr.sum = sha1.New()
	res, err := s.scan()
	return res, s.sum, err
}

func newPackScanner(src io.Reader, spool io.Writer, lim packLimits) *packScanner {
	return &packScanner{pr: &packReader{src: src, spool: spool, buf: make([]byte, 64<<10), max: lim.bytes},
		lim: lim, scratch: make([]byte, 32<<10)}
}

func (s *packScanner) scan() (packScan, error) {
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
	pr  *packReader
	lim packLimits
	ix  *packIndexer // nil: check only
	res packScan
	sum plumbing.Hash // the pack's checksum, when summed
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

// indexAt is the index of the object at offset off.
func (s *packScanner) indexAt(off int64) (int, bool) {
	i := sort.Search(len(s.offsets), func(i int) bool { return s.offsets[i] >= off })
	return i, i < len(s.offsets) && s.offsets[i] == off
}

// object checks object i (from 1): its header, then its data inflated
// in pieces (whole, when it is indexed).
func (s *packScanner) object(i uint32) error {
	s.pr.startCRC()
	start := s.pr.off
	typ, sz, err := readObjectHeader(s.pr)
	if err != nil {
		return err
	}
	base, made, err := s.madeType(i, typ, start)
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
	data, err := s.inflate(i, typ, sz, made, limit, what)
	if err != nil {
		return err
	}
	if s.ix != nil {
		if err := s.ix.add(i, start, s.pr.endCRC(), typ, made, base, data); err != nil {
			return err
		}
	}
	s.offsets = append(s.offsets, start)
	s.types = append(s.types, made)
	s.res.objects++
	return nil
}

// madeType is the type of what object i makes: its own, or a delta's
// base's (AnyObject for a ref-delta when only checking), and the index of
// a delta's base in the pack (-1: none, or not known).
func (s *packScanner) madeType(i uint32, typ plumbing.ObjectType, start int64) (int, plumbing.ObjectType, error) {
	switch typ {
	case plumbing.OFSDeltaObject:
		rel, err := readOffset(s.pr)
		if err != nil {
			return 0, 0, err
		}
		if rel <= 0 || rel > start {
			return 0, 0, fmt.Errorf("%w: object %d points outside the pack", errMalformedPack, i)
		}
		j, ok := s.indexAt(start - rel)
		if !ok {
			return 0, 0, fmt.Errorf("%w: object %d's base is not an object", errMalformedPack, i)
		}
		return j, s.types[j], nil
	case plumbing.REFDeltaObject:
		var h plumbing.Hash
		if err := s.pr.full(h[:]); err != nil {
			return 0, 0, err
		}
		if s.ix != nil {
			j, ok := s.ix.find(h)
			if !ok {
				return 0, 0, fmt.Errorf("%w: object %d is a delta of %s, which is not earlier in the pack", errMalformedPack, i, h)
			}
			return j, s.types[j], nil
		}
		return -1, plumbing.AnyObject, nil
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		return -1, typ, nil
	}
	return 0, 0, fmt.Errorf("%w: object %d has type %d", errMalformedPack, i, typ)
}

// inflate reads object i's zlib stream of sz bytes in pieces; a delta's
// first bytes (the sizes of its base and target) are checked before the
// rest is inflated. When the pack is indexed it returns the data whole
// (grown as it arrives, never past sz).
func (s *packScanner) inflate(i uint32, typ plumbing.ObjectType, sz int64, made plumbing.ObjectType, limit int64, what string) ([]byte, error) {
	var err error
	if s.zr == nil {
		s.zr, err = zlib.NewReader(s.pr)
	} else {
		err = s.zr.(zlib.Resetter).Reset(s.pr, nil)
	}
	if err != nil {
		return nil, s.pr.objectErr(i, err)
	}
	first := s.scratch[:min(sz, int64(len(s.scratch)))]
	if _, err := io.ReadFull(s.zr, first); err != nil {
		return nil, s.pr.objectErr(i, err)
	}
	if typ.IsDelta() {
		target, err := deltaTargetSize(first)
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", errMalformedPack, i, err)
		}
		if target > limit {
			return nil, boundErrorf("object %d of the pack is a delta that makes a %s of %s, over the %s %s", i, madeName(made), size(target), size(limit), what)
		}
		// What a delta makes is inflated too (by the indexer, by
		// go-git): a few bytes of copies make a whole object each.
		s.res.inflated += target
		if s.res.inflated > s.lim.inflated {
			return nil, boundErrorf("the pack's objects add up to over %s inflated, the bound for one fetch", size(s.lim.inflated))
		}
	}
	var data []byte
	if s.ix != nil {
		data = append(make([]byte, 0, min(sz, 1<<20)), first...)
	}
	got := int64(len(first))
	for {
		buf := s.scratch
		if data != nil && got < sz {
			if len(data) == cap(data) {
				data = slices.Grow(data, int(min(sz-got, int64(len(data)))))
			}
			buf = data[len(data):cap(data)]
		}
		n, err := s.zr.Read(buf)
		got += int64(n)
		if got > sz {
			return nil, boundErrorf("object %d of the pack inflates past the %s its header gives", i, size(sz))
		}
		if data != nil {
			data = data[:len(data)+n]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.pr.objectErr(i, err)
		}
	}
	if got != sz {
		return nil, fmt.Errorf("%w: object %d is %d bytes, its header says %d", errMalformedPack, i, got, sz)
	}
	return data, nil
}

// trailer reads the pack's checksum and refuses anything after it: a
// remote that keeps sending is cut here rather than when the byte bound
// is reached.
func (s *packScanner) trailer() error {
	var sum plumbing.Hash
	summed := s.pr.sum != nil
	s.sum = s.pr.packSum()
	if err := s.pr.full(sum[:]); err != nil {
		return err
	}
	if summed && sum != s.sum {
		return fmt.Errorf("%w: its checksum is %s, its content sums to %s", errMalformedPack, sum, s.sum)
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
func readOffset(pr io.ByteReader) (int64, error) {
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
// file in g's objects/pack, names its objects in the same scan, and puts
// it in place beside the index written from those names only once all
// of it has passed (a pack cut at a bound leaves nothing behind but the
// spool, removed); then st (a storage over g's .git) sees it. The pack's
// trees go to g's tree cache, for the merge that follows. data is told of
// each block read from r (pack data, what the progress-only bound
// watches).
func (g *Repo) storePack(st storage.Storer, r io.Reader, lim packLimits, data func()) error {
	dir := filepath.Join(g.gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("spool the pack: %w", err)
	}
	f, err := os.CreateTemp(dir, "tmp_spool_")
	if err != nil {
		return fmt.Errorf("spool the pack: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	ix := newPackIndexer(f, lim, g.trees.put)
	res, sum, err := indexPack(touchReader{r, data}, f, lim, ix)
	if err != nil {
		return err
	}
	if res.objects == 0 {
		return nil
	}
	if err := installPack(dir, f, sum, &ix.idxEntries); err != nil {
		return err
	}
	if r, ok := st.(interface{ Reindex() }); ok {
		r.Reindex()
	}
	return nil
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
