package anamnesis

import (
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
