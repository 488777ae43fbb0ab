package anamnesis

import (
	"context"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

var (
	benchOnce sync.Once
	benchHome string
)

// benchStore returns a home with 10,000 synthetic notes, generated once
// per test binary run.
func benchStore(b *testing.B) string {
	benchOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			b.Fatal(err)
		}
		benchHome = dir
		g := synth.NewGen(synth.NewVocab(20000, 1), 10000)
		tree := note.Tree{Root: filepath.Join(dir, note.PortableDir), Scope: note.ScopePortable}
		if _, err := synth.Fill(tree, g, 10000, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			b.Fatal(err)
		}
	})
	return benchHome
}

// openBench opens the shared 10,000-note bench store.
func openBench(b *testing.B) *Store {
	s, err := Open(ctx, benchStore(b), Options{MachineID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkRebuild10k(b *testing.B) {
	s := openBench(b)
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearch10k(b *testing.B) {
	s := openBench(b)
	defer s.Close()
	g := synth.NewGen(synth.NewVocab(20000, 1), 5)
	qs := make([]string, 256)
	for i := range qs {
		qs[i] = g.Query()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Search(ctx, qs[i%len(qs)], index.Filter{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReconcileNoChange10k(b *testing.B) {
	s := openBench(b)
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "anamnesis-bench-") }

// randomEmbedder gives every text a random 768-dimension vector (seeded
// by the text): the cost of the vector leg does not depend on meaning.
type randomEmbedder struct{}

func (randomEmbedder) Model() string { return "random-768" }

func (randomEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewSource(int64(h.Sum64())))
		v := make([]float32, 768)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkVectorLeg10k is the exact cosine scan over 10,000 notes of 768
// dimensions (the bound: 5 ms) in a process that has searched
// before (the MCP server, the web UI), BenchmarkVectorLegCold10k the first
// search of a process (a CLI search, a prompt hook), which reads the
// vectors from index.db first, and BenchmarkHybrid10k the whole hybrid
// search (both legs and fusion), the query already embedded.
func BenchmarkVectorLeg10k(b *testing.B) {
	s, q := vectorBench(b)
	defer s.Close()
	leg := func() {
		if _, _, err := s.idx().NearestVectors(ctx, "random-768", q, index.Filter{}, legK); err != nil {
			b.Fatal(err)
		}
	}
	leg()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leg()
	}
}

func BenchmarkVectorLegCold10k(b *testing.B) {
	s, q := vectorBench(b)
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.idx().DropVectorCache()
		if _, _, err := s.idx().NearestVectors(ctx, "random-768", q, index.Filter{}, legK); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHybrid10k(b *testing.B) {
	s, q := vectorBench(b)
	defer s.Close()
	search := func() {
		if _, err := s.searchWithVector(ctx, "configure the ingest pipeline", q, index.Filter{}, ModeHybrid); err != nil {
			b.Fatal(err)
		}
	}
	search()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		search()
	}
}

func vectorBench(b *testing.B) (*Store, []float32) {
	s, err := Open(ctx, benchStore(b), Options{MachineID: "bench", Embedder: randomEmbedder{}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.EmbedPending(ctx); err != nil {
		b.Fatal(err)
	}
	q, _ := randomEmbedder{}.Embed(ctx, []string{"query"})
	return s, unit(q[0])
}

// BenchmarkInject10k is SessionStart's read: a project's notes (500 of
// the 10,000) and the global ones, within the budget.
func BenchmarkInject10k(b *testing.B) {
	s := openBench(b)
	defer s.Close()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := s.Inject(ctx, "github.com/example/project07", 8); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRebuildStore opens the home named by ANAMNESIS_BENCH_HOME (a
// copy of a generated store, e.g. the harness's store-100000) without an
// index, which builds it from every note file: for a CPU profile of a
// full reindex at that size. It is skipped without the variable.
func BenchmarkRebuildStore(b *testing.B) {
	home := os.Getenv("ANAMNESIS_BENCH_HOME")
	if home == "" {
		b.Skip("ANAMNESIS_BENCH_HOME is not set")
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, f := range indexFiles(filepath.Join(home, IndexFile)) {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		s, err := Open(ctx, home, Options{MachineID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkReconcileStore reconciles the home named by
// ANAMNESIS_BENCH_HOME, whose index is current: the cost of `reindex`
// with nothing to do at that size. It is skipped without the variable.
func BenchmarkReconcileStore(b *testing.B) {
	home := os.Getenv("ANAMNESIS_BENCH_HOME")
	if home == "" {
		b.Skip("ANAMNESIS_BENCH_HOME is not set")
	}
	s, err := Open(ctx, home, Options{MachineID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
