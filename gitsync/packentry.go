package gitsync

import (
	"bufio"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// packEntries reads the entries of a pack (a pack file of the
// repository, or a fetch's spooled pack) at given offsets: an entry's
// header, then its data inflated. The buffer and the zlib reader are
// reused from one entry to the next (a zlib reader is 40 KB to make).
type packEntries struct {
	bufSize int // bytes read at a time: small for headers, large for data
	br      *bufio.Reader
	zr      io.ReadCloser
}

// packEntry is an entry's header: its type and the size of its data
// (for a delta, of the delta) and, for a delta, where its base is: at
// offset base of the same pack (an ofs-delta) or named ref.
type packEntry struct {
	typ  plumbing.ObjectType
	size int64
	base int64
	ref  plumbing.Hash
}

// header reads the header of the entry at off of r and leaves the reader
// at its data.
func (e *packEntries) header(r io.ReaderAt, off int64) (packEntry, error) {
	src := io.NewSectionReader(r, off, 1<<62)
	if e.br == nil {
		e.br = bufio.NewReaderSize(src, e.bufSize)
	} else {
		e.br.Reset(src)
	}
	typ, size, err := readObjectHeader(e.br)
	if err != nil {
		return packEntry{}, err
	}
	h := packEntry{typ: typ, size: size}
	switch typ {
	case plumbing.OFSDeltaObject:
		rel, err := readOffset(e.br)
		if err != nil {
			return packEntry{}, err
		}
		if rel <= 0 || rel > off {
			return packEntry{}, fmt.Errorf("%w: a delta's base outside its pack", errMalformedPack)
		}
		h.base = off - rel
	case plumbing.REFDeltaObject:
		if _, err := io.ReadFull(e.br, h.ref[:]); err != nil {
			return packEntry{}, unexpected(err)
		}
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return packEntry{}, fmt.Errorf("%w: object type %d", errMalformedPack, typ)
	}
	return h, nil
}

// inflater points the zlib reader at the entry's data.
func (e *packEntries) inflater() (io.Reader, error) {
	if e.zr == nil {
		zr, err := zlib.NewReader(e.br)
		e.zr = zr
		return zr, err
	}
	return e.zr, e.zr.(zlib.Resetter).Reset(e.br, nil)
}

// data inflates the data of the entry whose header was just read: it
// must be exactly size bytes.
func (e *packEntries) data(size int64) ([]byte, error) {
	zr, err := e.inflater()
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, unexpected(err)
	}
	var one [1]byte
	if n, _ := zr.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("its data is longer than its header says")
	}
	return data, nil
}

// first inflates up to len(b) bytes of the entry's data (a delta's two
// sizes) and returns how many.
func (e *packEntries) first(b []byte) (int, error) {
	zr, err := e.inflater()
	if err != nil {
		return 0, err
	}
	return io.ReadFull(zr, b)
}
