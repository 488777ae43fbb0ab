package index

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// TestDecodeStatCache: a cache decodes to what was encoded; one cut
// short inside an entry is refused, one cut between entries holds the
// entries before the cut (the files generation is what keeps such a
// cache from being used).
func TestDecodeStatCache(t *testing.T) {
	b := binary.AppendVarint(nil, 7)
	var files []File
	ends := map[int]int{len(b): 0} // offset -> entries before it
	for i := range 300 {
		f := File{Path: fmt.Sprintf("memory/semantic/N%03d.md", i), Size: int64(i * 13), MtimeNS: int64(i) * 1e9}
		files = append(files, f)
		b = appendStat(b, f)
		ends[len(b)] = len(files)
	}
	c, gen, ok := decodeStatCache(string(b))
	if !ok || gen != 7 || len(c.at) != len(files) {
		t.Fatalf("decoded ok=%v gen=%d entries=%d", ok, gen, len(c.size))
	}
	for _, f := range files {
		if !c.Same([]byte(f.Path), f.Size, f.MtimeNS) || c.Same([]byte(f.Path), f.Size+1, f.MtimeNS) {
			t.Fatalf("%s: not as encoded", f.Path)
		}
	}
	if !c.AllSeen() {
		t.Fatal("every entry matched, not all seen")
	}
	full := len(b)
	for cut := 1; cut < full; cut++ {
		c, _, ok := decodeStatCache(string(b[:cut]))
		want, boundary := ends[cut]
		if ok != boundary || ok && (len(c.size) != want || len(c.at) != want) {
			t.Fatalf("cut at %d of %d: ok=%v, want ok=%v with %d entries", cut, full, ok, boundary, want)
		}
	}
}

// TestVarintIn: the string readers give what binary's give on the same
// bytes: values of every length, inputs cut short, and overflows.
func TestVarintIn(t *testing.T) {
	var inputs [][]byte
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 35), 1<<62 + 12345, -1 << 63, 1<<63 - 1} {
		b := binary.AppendVarint(nil, v)
		for cut := 0; cut <= len(b); cut++ {
			inputs = append(inputs, b[:cut])
		}
		inputs = append(inputs, binary.AppendUvarint(nil, uint64(v)))
	}
	inputs = append(inputs,
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},       // past 64 bits in the 10th byte
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x01}, // 11 bytes
		[]byte{0x80, 0x80, 0x80})
	for _, b := range inputs {
		wu, wn := binary.Uvarint(b)
		gu, gn := uvarintIn(string(b))
		wv, wvn := binary.Varint(b)
		gv, gvn := varintIn(string(b))
		if gu != wu || gn != wn || gv != wv || gvn != wvn {
			t.Errorf("% x: uvarintIn %d,%d varintIn %d,%d; binary gives %d,%d and %d,%d", b, gu, gn, gv, gvn, wu, wn, wv, wvn)
		}
	}
}
