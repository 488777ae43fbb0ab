package gitsync

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// packIdx is a pack's index (version 2, what git and packindex.go
// write) read whole and searched where it lies. go-git's decoder copied
// it into a slice per first byte of the names and checked nothing else:
// 20–30 ms for the 100,000 objects of a first sync's pack, paid by each
// reader that opened it, three times in a pull. Reading it is one read
// of the file and a check of its layout; a lookup is a binary search in
// the names the fan-out table points at.
type packIdx struct {
	n      int
	fanout []byte // 256 big-endian counts, each of names up to that first byte
	names  []byte // n × 20, sorted
	crcs   []byte // n × 4: each entry's CRC-32
	offs   []byte // n × 4; the high bit set: an index into large
	large  []byte // 8 bytes each
	pack   []byte // the pack's checksum
}

// readPackIdx reads and checks the index at path. An index whose layout
// does not add up (a truncated write, another version) is an error, not
// a source of offsets.
func readPackIdx(path string) (*packIdx, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	x, err := parsePackIdx(data)
	if err != nil {
		return nil, fmt.Errorf("pack index %s: %w", path, err)
	}
	return x, nil
}

func parsePackIdx(data []byte) (*packIdx, error) {
	const head = 8 + 256*4
	if len(data) < head+40 || !bytes.Equal(data[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return nil, fmt.Errorf("not a version 2 index")
	}
	x := &packIdx{fanout: data[8:head]}
	prev := uint32(0)
	for i := 0; i < 256; i++ {
		v := binary.BigEndian.Uint32(x.fanout[4*i:])
		if v < prev {
			return nil, fmt.Errorf("its fan-out table goes down")
		}
		prev = v
	}
	n := int(prev)
	rest := len(data) - head - 40
	if n > rest/28 {
		return nil, fmt.Errorf("it claims %d objects in %d bytes", n, len(data))
	}
	largeBytes := rest - 28*n
	if largeBytes%8 != 0 {
		return nil, fmt.Errorf("its size does not match its %d objects", n)
	}
	x.n = n
	x.names = data[head : head+20*n]
	x.crcs = data[head+20*n : head+24*n]
	x.offs = data[head+24*n : head+28*n]
	x.large = data[head+28*n : head+28*n+largeBytes]
	x.pack = data[len(data)-40 : len(data)-20]
	return x, nil
}

// find is the offset of object h in the pack.
func (x *packIdx) find(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(x.fanout[4*(int(h[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(x.fanout[4*int(h[0]):]))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(x.names[20*mid:20*mid+20], h[:]); {
		case c == 0:
			return x.offset(mid)
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// offset is the i-th object's offset; false when it points outside the
// large-offset table.
func (x *packIdx) offset(i int) (int64, bool) {
	off := binary.BigEndian.Uint32(x.offs[4*i:])
	if off&(1<<31) == 0 {
		return int64(off), true
	}
	j := int(off &^ (1 << 31))
	if 8*j+8 > len(x.large) {
		return 0, false
	}
	v := binary.BigEndian.Uint64(x.large[8*j:])
	if v > 1<<62 {
		return 0, false
	}
	return int64(v), true
}
