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
