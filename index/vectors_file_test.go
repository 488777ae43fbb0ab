package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anamnesis-memory/anamnesis/note"
)

// rankedNote is a note's id and its float64 cosine to a query.
type rankedNote struct {
	id  string
	cos float64
}

// exactCosines is notes ranked by float64 cosine to q, best first, the
// vector of notes[i] being unitVec(i, d).
func exactCosines(notes []*note.Note, q []float32, d int) []rankedNote {
	var all []rankedNote
	for i, n := range notes {
		v := unitVec(int64(i), d)
		var s float64
		for j := range v {
			s += float64(v[j]) * float64(q[j])
		}
		all = append(all, rankedNote{n.ID, s})
	}
	slices.SortFunc(all, func(a, b rankedNote) int { return cmp.Compare(b.cos, a.cos) })
	return all
}

// exactRanking is the ids of the k notes nearest q by float64 cosine, the
// vector of notes[i] being unitVec(i, d).
func exactRanking(notes []*note.Note, q []float32, d, k int) []string {
	out := []string{}
	for _, p := range exactCosines(notes, q, d)[:k] {
		out = append(out, p.id)
	}
	return out
}

// reopen opens the index at ix's path as another process would: nothing
// in memory.
func reopen(t *testing.T, ix *Index) *Index {
	t.Helper()
	o, _, err := Open(ctx, ix.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// fileHeader reads and checks the header of model's vector file.
func fileHeader(t *testing.T, ix *Index, model string) vfHeader {
	t.Helper()
	b, err := os.ReadFile(vectorFilePath(ix.Path(), model))
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeVFHeader(b, model, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func dbGen(t *testing.T, ix *Index, model string) int64 {
	t.Helper()
	var g int64
	if err := ix.db.QueryRow(`SELECT gen FROM vector_models WHERE model = ?`, model).Scan(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// Vectors put in batches are appended to the one file, which a new
// process then maps (no read of the table) and ranks exactly by.
func TestVectorFileFollowsPuts(t *testing.T) {
	ix := openTemp(t)
	const d = 32
	notes := numberedNotes(203)
	applyNotes(t, ix, notes)
	var first os.FileInfo
	for start := 0; start < len(notes); start += 13 { // batches that leave blocks part full
		vecs := map[string][]float32{}
		for i := start; i < min(start+13, len(notes)); i++ {
			n := notes[i]
			vecs[EmbedHash(n.Title, n.Body, n.Tags)] = unitVec(int64(i), d)
		}
		if err := ix.PutVectors(ctx, "m", vecs); err != nil {
			t.Fatal(err)
		}
		h := fileHeader(t, ix, "m")
		if h.gen != dbGen(t, ix, "m") || h.count != min(start+13, len(notes)) || h.dims != d {
			t.Fatalf("after %d vectors: header %+v, index.db generation %d", min(start+13, len(notes)), h, dbGen(t, ix, "m"))
		}
		fi, err := os.Stat(vectorFilePath(ix.Path(), "m"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = fi
		} else if !os.SameFile(first, fi) {
			t.Fatalf("batch at %d rewrote the file instead of appending to it", start)
		}
	}
	other := reopen(t, ix)
	q := unitVec(4242, d)
	hits, cos, err := other.NearestVectors(ctx, "m", q, Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := exactRanking(notes, q, d, 10); !slices.Equal(ids(hits), want) {
		t.Fatalf("ranking from the file:\n got %v\nwant %v", ids(hits), want)
	}
	if set := other.vsets["m"]; set == nil || !set.fromFile {
		t.Fatal("the new process did not use the file")
	}
	for i := 1; i < len(cos); i++ {
		if cos[i] > cos[i-1] {
			t.Fatalf("cosines not best first: %v", cos)
		}
	}
}

// A file that does not check, names another generation or a vector the
// table lacks is never used: the table answers, exactly, and the file is
// written anew.
func TestVectorFileDamagedIsRebuilt(t *testing.T) {
	const d = 24
	notes := numberedNotes(100)
	q := unitVec(777, d)
	want := exactRanking(notes, q, d, 10)
	bs := vfBlockSize(d)
	damages := map[string]func(b []byte) []byte{
		"empty":                  func([]byte) []byte { return nil },
		"header only":            func(b []byte) []byte { return b[:vfHeaderSize] },
		"cut in a block":         func(b []byte) []byte { return b[:len(b)-bs/2] },
		"a byte of a vector":     func(b []byte) []byte { b[vfHeaderSize+bs+vfHeadSize+vfLanes*vfMetaSize+40]++; return b },
		"a byte of a hash":       func(b []byte) []byte { b[vfHeaderSize+vfHeadSize+3]++; return b },
		"a block of zeros":       func(b []byte) []byte { clear(b[vfHeaderSize+2*bs : vfHeaderSize+3*bs]); return b },
		"header checksum":        func(b []byte) []byte { b[20]++; return b },
		"another generation":     func(b []byte) []byte { return rehead(b, func(h *vfHeader) { h.gen-- }) },
		"more blocks than bytes": func(b []byte) []byte { return rehead(b, func(h *vfHeader) { h.blocks += 3; h.count += 24 }) },
		"fewer vectors":          func(b []byte) []byte { return rehead(b, func(h *vfHeader) { h.count-- }) },
		"huge dims":              func(b []byte) []byte { return rehead(b, func(h *vfHeader) { h.dims = 1 << 30 }) },
		"another model":          func(b []byte) []byte { return rehead(b, func(h *vfHeader) { h.model[0]++ }) },
		"a scale not a number": func(b []byte) []byte {
			blk := b[vfHeaderSize : vfHeaderSize+bs]
			binary.LittleEndian.PutUint32(blk[vfHeadSize+16:], math.Float32bits(float32(math.NaN())))
			s1, s2 := fletcher(blk[vfHeadSize:])
			binary.LittleEndian.PutUint64(blk[8:], s1)
			binary.LittleEndian.PutUint64(blk[16:], s2)
			return b
		},
		"a vector the table lacks": func(b []byte) []byte {
			blk := b[vfHeaderSize : vfHeaderSize+bs]
			copy(blk[vfHeadSize:], make([]byte, 16)) // a hash of zeros, checksummed
			s1, s2 := fletcher(blk[vfHeadSize:])
			binary.LittleEndian.PutUint64(blk[8:], s1)
			binary.LittleEndian.PutUint64(blk[16:], s2)
			return b
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			ix := openTemp(t)
			putNotes(t, ix, "m", notes, d)
			p := vectorFilePath(ix.Path(), "m")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			orig := slices.Clone(b)
			if err := os.WriteFile(p, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			other := reopen(t, ix)
			qq := q
			w := want
			if name == "a vector the table lacks" {
				// Ask for the damaged vector's neighbourhood: its lane is
				// among the candidates looked up.
				qq, w = unitVec(firstHashIndex(t, ix, notes, d), d), nil
			}
			hits, _, err := other.NearestVectors(ctx, "m", qq, Filter{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if w == nil {
				w = exactRanking(notes, qq, d, 10)
			}
			if !slices.Equal(ids(hits), w) {
				t.Fatalf("ranking with a damaged file:\n got %v\nwant %v", ids(hits), w)
			}
			if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, orig) {
				t.Fatalf("the file was not written anew (%d bytes, had %d): %v", len(now), len(orig), err)
			}
			// The rebuilt file is good: a third process uses it.
			third := reopen(t, ix)
			if hits, _, err := third.NearestVectors(ctx, "m", q, Filter{}, 10); err != nil || !slices.Equal(ids(hits), want) || !third.vsets["m"].fromFile {
				t.Fatalf("after the rebuild: %v %v", ids(hits), err)
			}
		})
	}
}

// firstHashIndex is the position in notes of the vector the file keeps
// first (lane 0 of block 0).
func firstHashIndex(t *testing.T, ix *Index, notes []*note.Note, d int) int64 {
	t.Helper()
	set, err := ix.vectorSetNow("m")
	if err != nil {
		t.Fatal(err)
	}
	h := set.hashAt(0)
	for i, n := range notes {
		if EmbedHash(n.Title, n.Body, n.Tags) == h {
			return int64(i)
		}
	}
	t.Fatal("first vector not found")
	return 0
}

// vectorSetNow is the model's set as of now.
func (ix *Index) vectorSetNow(model string) (*vecSet, error) {
	tx, err := ix.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	return ix.vectorSet(ctx, tx, model)
}

// rehead rewrites b's header (with a checksum that holds) after change.
func rehead(b []byte, change func(*vfHeader)) []byte {
	h := vfHeader{
		dims:   int(binary.LittleEndian.Uint32(b[8:])),
		blocks: int(binary.LittleEndian.Uint64(b[16:])),
		count:  int(binary.LittleEndian.Uint64(b[24:])),
		gen:    int64(binary.LittleEndian.Uint64(b[32:])),
	}
	copy(h.model[:], b[40:56])
	change(&h)
	copy(b, h.encode())
	return b
}

// A vector put again for a text it already had replaces the old one in
// the file too: the file is rewritten, not appended to.
func TestVectorFileReplacedVector(t *testing.T) {
	ix := openTemp(t)
	const d = 16
	notes := []*note.Note{mk("semantic", "a", "one"), mk("semantic", "b", "two"), mk("semantic", "c", "three")}
	putNotes(t, ix, "m", notes, d)
	q := unitVec(99, d)
	h := EmbedHash(notes[2].Title, notes[2].Body, notes[2].Tags)
	if err := ix.PutVectors(ctx, "m", map[string][]float32{h: q}); err != nil {
		t.Fatal(err)
	}
	if fh := fileHeader(t, ix, "m"); fh.count != 3 || fh.gen != dbGen(t, ix, "m") {
		t.Fatalf("header after a replacement: %+v", fh)
	}
	hits, cos, err := reopen(t, ix).NearestVectors(ctx, "m", q, Filter{}, 3)
	if err != nil || len(hits) != 3 || hits[0].ID != notes[2].ID || math.Abs(cos[0]-1) > 1e-6 {
		t.Fatalf("after the replacement: %v %v %v", ids(hits), cos, err)
	}
}

// Keys that are not content hashes are refused: the file could not keep
// them.
func TestPutVectorsRefusesOtherKeys(t *testing.T) {
	ix := openTemp(t)
	for _, k := range []string{"", "abc", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcdeg"} {
		if err := ix.PutVectors(ctx, "m", map[string][]float32{k: {1}}); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
}

// The 8-bit scan's score of each lane is the product of the quantized
// vectors, whatever the values (the extremes too) and the block's fill.
func TestScanBlockIsTheQuantizedProduct(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for trial := 0; trial < 300; trial++ {
		d := 1 + r.Intn(100)
		lanes := 1 + r.Intn(vfLanes)
		w := newBlockWriter(d, lanes)
		var vs [][]float32
		for l := 0; l < lanes; l++ {
			v := make([]float32, d)
			for i := range v {
				switch r.Intn(4) {
				case 0:
					v[i] = 1
				case 1:
					v[i] = -1
				default:
					v[i] = float32(r.NormFloat64())
				}
			}
			vs = append(vs, v)
			w.add([16]byte{byte(l)}, v)
		}
		qv := make([]float32, d)
		for i := range qv {
			qv[i] = float32(r.NormFloat64())
		}
		if trial%7 == 0 {
			clear(qv)
			qv[0] = -1
		}
		q := newQuery8(qv)
		out := make([]float32, vfLanes)
		n, err := scanBlock(q, w.blocks(), out, make([]uint64, d))
		if err != nil || n != lanes {
			t.Fatalf("lanes %d, err %v", n, err)
		}
		q8 := make([]int8, d)
		qs, _ := quantize(qv, q8)
		for l := 0; l < vfLanes; l++ {
			if l >= lanes {
				if !math.IsInf(float64(out[l]), -1) {
					t.Fatalf("unused lane %d scored %v", l, out[l])
				}
				continue
			}
			v8 := make([]int8, d)
			vsc, _ := quantize(vs[l], v8)
			var dot int64
			for i := range v8 {
				dot += int64(v8[i]) * int64(q8[i])
			}
			want := float32(dot) * qs * vsc
			if math.Abs(float64(out[l]-want)) > 1e-4*math.Max(1, math.Abs(float64(want))) {
				t.Fatalf("trial %d lane %d: %v, want %v", trial, l, out[l], want)
			}
		}
	}
}

// FuzzVectorFile: whatever bytes the file holds, a search neither panics
// nor reads past them; the set is used only if every check holds.
func FuzzVectorFile(f *testing.F) {
	w := newBlockWriter(4, 9)
	for i := 0; i < 9; i++ {
		w.add([16]byte{byte(i)}, []float32{float32(i), 1, -1, 0.5})
	}
	blocks := w.blocks()
	good := append(vfHeader{dims: 4, blocks: 2, count: 9, gen: 7, model: modelSum("m")}.encode(), blocks...)
	f.Add(good)
	f.Add(good[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "index.db")
		if err := os.WriteFile(vectorFilePath(p, "m"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := openVectorFile(p, "m", 7)
		if err != nil {
			return
		}
		if len(set.blocks) != set.nblocks*vfBlockSize(set.dims) {
			t.Fatalf("%d bytes for %d blocks", len(set.blocks), set.nblocks)
		}
		q := make([]float32, set.dims)
		q[0] = 1
		scores, err := scanSet(newQuery8(q), set.blocks, set.nblocks, set.count)
		if err == nil && len(scores) != set.nblocks*vfLanes {
			t.Fatalf("%d scores", len(scores))
		}
	})
}

// Where the file cannot be written (here a directory in its place), the
// vectors are read from the table and searched in memory, and no
// temporary file is left behind.
func TestVectorFileUnwritable(t *testing.T) {
	ix := openTemp(t)
	if err := os.Mkdir(vectorFilePath(ix.Path(), "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	const d = 16
	notes := numberedNotes(40)
	putNotes(t, ix, "m", notes[:20], d)
	vecs := map[string][]float32{}
	var changes []Change
	for i, n := range notes[20:] {
		changes = append(changes, Change{File: File{Path: note.TreeDir(n.Scope) + "/" + n.RelPath(), Size: 1, MtimeNS: 1, Hash: "h"}, Note: n})
		vecs[EmbedHash(n.Title, n.Body, n.Tags)] = unitVec(int64(20+i), d)
	}
	if _, err := ix.Apply(ctx, changes); err != nil {
		t.Fatal(err)
	}
	if err := ix.PutVectors(ctx, "m", vecs); err != nil {
		t.Fatal(err)
	}
	q := unitVec(31337, d)
	for _, x := range []*Index{ix, reopen(t, ix)} {
		hits, _, err := x.NearestVectors(ctx, "m", q, Filter{}, 10)
		if err != nil || !slices.Equal(ids(hits), exactRanking(notes, q, d, 10)) {
			t.Fatalf("without a file: %v %v", ids(hits), err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(ix.Path()), "*.tmp-*"))
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// Vectors put one at a time (each append starts a block) do not leave
// the file mostly empty lanes: it is written anew, dense, when it would.
func TestVectorFileStaysDense(t *testing.T) {
	ix := openTemp(t)
	const d = 8
	var notes []*note.Note
	for i := 0; i < 200; i++ {
		n := mk("semantic", fmt.Sprintf("note %d", i), fmt.Sprintf("body %d", i))
		notes = append(notes, n)
		upsert(t, ix, n)
		if err := ix.PutVectors(ctx, "m", map[string][]float32{EmbedHash(n.Title, n.Body, n.Tags): unitVec(int64(i), d)}); err != nil {
			t.Fatal(err)
		}
		if h := fileHeader(t, ix, "m"); h.count != i+1 || sparse(h.blocks, h.count) {
			t.Fatalf("after %d puts: %d vectors in %d blocks", i+1, h.count, h.blocks)
		}
	}
	q := unitVec(5, d)
	hits, _, err := reopen(t, ix).NearestVectors(ctx, "m", q, Filter{}, 10)
	if err != nil || !slices.Equal(ids(hits), exactRanking(notes, q, d, 10)) {
		t.Fatalf("%v %v", ids(hits), err)
	}
}
