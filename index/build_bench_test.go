//go:build unix

package index

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
)

// BenchmarkRebuild10k rebuilds an index of 10,000 synthetic notes from
// changes already read and parsed: the index's share of a full reindex.
func BenchmarkRebuild10k(b *testing.B) {
	changes := synthChanges(synth.NewGen(synth.NewVocab(20000, 1), 10000), 0, 10000)
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ix, _, err := Open(ctx, filepath.Join(b.TempDir(), "index.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := processCPU()
		if _, err := ix.Rebuild(ctx, changes); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - before
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// processCPU is the CPU time (user and system) this process used so far:
// on a machine shared with other work it varies less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// synthChanges is n synthetic notes from g as changes, the i-th written
// at the i-th second after first seconds past 2025-01-01.
func synthChanges(g *synth.Gen, first, n int) []Change {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	changes := make([]Change, n)
	for i := range changes {
		changes[i] = changeFor(g.Note(start.Add(time.Duration(first+i) * time.Second)))
	}
	return changes
}
