//go:build unix

package index

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
)

// BenchmarkApply1000To10k applies 1,000 new notes in one batch to an index
// of 10,000: the index's share of a sync that pulls them (issue #29).
// Every iteration starts from a copy of the same 10,000-note file.
func BenchmarkApply1000To10k(b *testing.B) {
	g := synth.NewGen(synth.NewVocab(20000, 1), 10000)
	base := synthChanges(g, 0, 10000)
	pulled := synthChanges(g, len(base), 1000)
	template := filepath.Join(b.TempDir(), "index.db")
	ix, _, err := Open(ctx, template, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.Rebuild(ctx, base); err != nil {
		b.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(template)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	var routes [4]int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := filepath.Join(b.TempDir(), "index.db")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			b.Fatal(err)
		}
		ix, _, err := Open(ctx, p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := processCPU()
		post := newPostingEdits()
		if _, err := ix.inTx(ctx, pulled, post); err != nil {
			b.Fatal(err)
		}
		for i, n := range post.routes {
			routes[i] += n
		}
		cpu += processCPU() - before
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	for i, name := range []string{"appended", "new", "merged", "tail"} {
		b.ReportMetric(float64(routes[i])/float64(b.N), name+"-tokens/op")
	}
}
