package index

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// BenchmarkNearestVectors is the vector leg's exact scan (k = 50, the
// fusion's candidates) over 10,000 and 100,000 notes of 768 dimensions,
// the bounds being 5 and 50 ms: warm, in a process that searched
// before (the MCP server, the web UI), and cold, its first search, which
// reads the vectors from index.db first (a CLI search, a prompt hook).
func BenchmarkNearestVectors(b *testing.B) {
	for _, n := range benchSizes() {
		ix := vectorIndex(b, n, 768)
		q := unitVec(-1, 768)
		leg := func() {
			if _, _, err := ix.NearestVectors(ctx, "bench", q, Filter{}, 50); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("warm/%d", n), func(b *testing.B) {
			leg()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				leg()
			}
		})
		b.Run(fmt.Sprintf("cold/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ix.DropVectorCache()
				leg()
			}
		})
		ix.DropVectorCache()
	}
}

// vectorIndex is an index of n notes, each with a random unit vector of
// d dimensions.
func vectorIndex(b *testing.B, n, d int) *Index {
	b.Helper()
	ix, _, err := Open(ctx, filepath.Join(b.TempDir(), "index.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	r := rand.New(rand.NewSource(int64(n)))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 5000
	for start := 0; start < n; start += batch {
		var changes []Change
		vecs := map[string][]float32{}
		for i := start; i < min(start+batch, n); i++ {
			nt := note.New("semantic", fmt.Sprintf("note %d", i), fmt.Sprintf("body %d %d", i, r.Int()), t0.Add(time.Duration(i)*time.Second))
			nt.MachineID = "bench"
			changes = append(changes, Change{File: File{Path: note.TreeDir(nt.Scope) + "/" + nt.RelPath(), Size: 1, MtimeNS: 1, Hash: "h"}, Note: nt})
			vecs[EmbedHash(nt.Title, nt.Body, nt.Tags)] = unitVec(int64(i), d)
		}
		if _, err := ix.Apply(ctx, changes); err != nil {
			b.Fatal(err)
		}
		if err := ix.PutVectors(ctx, "bench", vecs); err != nil {
			b.Fatal(err)
		}
	}
	return ix
}

// benchSizes are the store sizes of BenchmarkNearestVectors;
// ANAMNESIS_VEC_BENCH_MAX=10000 leaves out the 100,000 (a minute to set up).
func benchSizes() []int {
	if os.Getenv("ANAMNESIS_VEC_BENCH_MAX") == "10000" {
		return []int{10000}
	}
	return []int{10000, 100000}
}

// BenchmarkVectorScan is the 8-bit scan alone (vectors_scan.go, its
// checks included) and the choice of the best 100, over 100,000 vectors
// of 768 dimensions held in memory: what a search costs beyond SQLite.
func BenchmarkVectorScan(b *testing.B) {
	const n, d = 100000, 768
	w := newBlockWriter(d, n)
	v := unitVec(1, d)
	for i := 0; i < n; i++ {
		v[i%d], v[(i+1)%d] = v[(i+1)%d], v[i%d]
		w.add([16]byte{byte(i), byte(i >> 8), byte(i >> 16)}, v)
	}
	blocks := w.blocks()
	q := unitVec(-1, d)
	b.ResetTimer()
	for b.Loop() {
		s, err := scanSet(newQuery8(q), blocks, len(blocks)/vfBlockSize(d), n)
		if err != nil {
			b.Fatal(err)
		}
		topIndices(s, 100)
	}
}
