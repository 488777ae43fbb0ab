package index

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
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
	if !ok || gen != 7 || c.count != len(files) {
		t.Fatalf("decoded ok=%v gen=%d entries=%d", ok, gen, c.count)
	}
	for _, f := range files {
		if c.Same([]byte(f.Path), f.Size+1, f.MtimeNS) || !c.Same([]byte(f.Path), f.Size, f.MtimeNS) {
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
		if ok != boundary || ok && c.count != want {
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

// TestStatCacheInAndOutOfOrder: compared in path order, the order it is
// saved in, the cache answers entry after entry without a map; any other
// order gives the same answers through the map, the entries matched in
// order before it counted as seen; a path it lacks, a changed size or
// mtime, and an entry never matched are seen in either mode.
func TestStatCacheInAndOutOfOrder(t *testing.T) {
	files := map[string]File{}
	for i := range 200 {
		p := fmt.Sprintf("memory/semantic/N%03d.md", (i*7)%200)
		files[p] = File{Path: p, Size: int64(i), MtimeNS: int64(i) * 3}
	}
	files["local/episodic/L1.md"] = File{Path: "local/episodic/L1.md", Size: 5, MtimeNS: 6}
	b := binary.AppendVarint(nil, 1)
	b = append(b, sortStats(func() (enc []byte) {
		for _, f := range files { // map order: sortStats puts it right
			enc = appendStat(enc, f)
		}
		return enc
	}())...)
	load := func() *StatCache {
		c, _, ok := decodeStatCache(string(b))
		if !ok {
			t.Fatal("does not decode")
		}
		return c
	}
	var sorted []File
	eachStat(string(b), 1, func(p string, size, mtime int64) { sorted = append(sorted, File{Path: p, Size: size, MtimeNS: mtime}) })
	if len(sorted) != len(files) || sorted[0].Path != "local/episodic/L1.md" || sorted[1].Path != "memory/semantic/N000.md" {
		t.Fatalf("not saved in path order: %d entries, %v", len(sorted), sorted[:2])
	}
	same := func(c *StatCache, f File) bool { return c.Same([]byte(f.Path), f.Size, f.MtimeNS) }

	c := load()
	for _, f := range sorted {
		if !same(c, f) {
			t.Fatalf("in order: %s not the same", f.Path)
		}
	}
	if !c.AllSeen() || c.at != nil {
		t.Fatalf("in order: all seen %v, map built %v", c.AllSeen(), c.at != nil)
	}

	for _, cut := range []int{0, 1, 57, len(sorted) - 1} {
		c := load()
		for _, f := range sorted[:cut] {
			same(c, f)
		}
		rest := append([]File(nil), sorted[cut:]...)
		rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		if len(rest) > 1 && rest[0] == sorted[cut] {
			rest[0], rest[1] = rest[1], rest[0]
		}
		for i, f := range rest {
			if !same(c, f) {
				t.Fatalf("out of order after %d: %s not the same", cut, f.Path)
			}
			if done := i == len(rest)-1; c.AllSeen() != done {
				t.Fatalf("out of order after %d, %d more: all seen %v", cut, i+1, c.AllSeen())
			}
			if !same(c, f) { // again: still the same, seen once
				t.Fatalf("%s not the same a second time", f.Path)
			}
		}
		if cut < len(sorted)-1 && c.at == nil {
			t.Fatalf("out of order after %d: answered without the map", cut)
		}
	}

	for _, mode := range []string{"in order", "out of order"} {
		c := load()
		if mode == "out of order" {
			same(c, sorted[5])
		}
		f := sorted[3]
		if c.Same([]byte(f.Path), f.Size, f.MtimeNS+1) || c.Same([]byte("memory/semantic/new.md"), 1, 1) {
			t.Fatalf("%s: a changed mtime or an unknown path is the same", mode)
		}
		c = load()
		if mode == "out of order" {
			same(c, sorted[5])
		}
		for _, f := range sorted[:len(sorted)-1] {
			same(c, f)
		}
		if c.AllSeen() || (mode == "out of order") != (c.at != nil) {
			t.Fatalf("%s: all seen with one entry never matched", mode)
		}
	}
}

// TestStatCacheLeavesIndexMetaSmall: the stat cache of 20,000 files
// (1 MB) is saved and read back, and no row of index_meta overflows its
// page. index_meta is a WITHOUT ROWID table, whose b-tree reads a whole
// overflowing row to compare a key with it: with the cache among its
// rows, every update of the note or token count read the cache (2.9 ms
// a statement at 100,000 notes, 18 µs without it).
func TestStatCacheLeavesIndexMetaSmall(t *testing.T) {
	ix := openTemp(t)
	files := map[string]File{}
	for i := range 20000 {
		p := fmt.Sprintf("memory/episodic/01JGFJ%020d.md", i)
		files[p] = File{Path: p, Size: int64(i), MtimeNS: int64(i) * 1e9}
	}
	gen, err := ix.FilesGen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.SaveStatCache(ctx, gen, files); err != nil {
		t.Fatal(err)
	}
	c, err := ix.LoadStatCache(ctx)
	if err != nil || c == nil || c.count != len(files) {
		t.Fatalf("stat cache read back: %v, %v", c, err)
	}
	var most int
	if err := ix.db.QueryRowContext(ctx, `SELECT max(length(key) + length(value)) FROM index_meta`).Scan(&most); err != nil {
		t.Fatal(err)
	}
	if most > 1000 {
		t.Fatalf("a row of index_meta holds %d bytes: it leaves its page", most)
	}
}
