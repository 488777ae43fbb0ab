//go:build unix

package gitsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/revlist"
)

// benchStore is a committed store to benchmark commits in: the
// repository at ANAMNESIS_BENCH_REPO, used in place (a scratch copy: the
// benchmarks commit into it), or ANAMNESIS_BENCH_NOTES notes (default
// 10,000) in three type directories, generated and committed first.
func benchStore(b *testing.B) *Repo {
	b.Helper()
	dir := os.Getenv("ANAMNESIS_BENCH_REPO")
	if dir == "" {
		n := 10000
		if v, err := strconv.Atoi(os.Getenv("ANAMNESIS_BENCH_NOTES")); err == nil {
			n = v
		}
		dir = filepath.Join(b.TempDir(), "memory")
		types := []string{"episodic", "semantic", "procedural"}
		for _, t := range types {
			if err := os.MkdirAll(filepath.Join(dir, t), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for i := range n {
			p := filepath.Join(dir, types[i%3], fmt.Sprintf("2026-01-01-note-%07d-a-title-of-some-length.md", i))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("---\nid: %d\n---\nnote %d\n", i, i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	r, err := Open(ctx, dir, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := r.CommitAll(ctx); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the index's instant: no file is racily clean
	if _, _, err := r.CommitAll(ctx); err != nil {
		b.Fatal(err)
	}
	return r
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU time per operation since start: on a loaded
// machine a steadier figure than the wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkCommitOneNote is a write's commit: one new note into a
// directory of a third of the store (go test -bench CommitOneNote
// -benchmem; ANAMNESIS_BENCH_NOTES=100000 for the scale target).
func BenchmarkCommitOneNote(b *testing.B) {
	r := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for i := range b.N {
		rel := fmt.Sprintf("semantic/bench-%d-%d.md", time.Now().UnixNano(), i)
		if err := os.WriteFile(filepath.Join(r.Dir(), filepath.FromSlash(rel)), []byte(fmt.Sprintf("bench note %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := r.CommitPaths(ctx, []string{rel}); err != nil || !ok {
			b.Fatalf("commit: %v %v", ok, err)
		}
	}
}

// BenchmarkCommitAllNothingToDo is a sync's commit step when no file
// changed: a stat of every file against the git index.
func BenchmarkCommitAllNothingToDo(b *testing.B) {
	r := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for range b.N {
		if _, ok, err := r.CommitAll(ctx); err != nil || ok {
			b.Fatalf("commit: %v %v", ok, err)
		}
	}
}

// BenchmarkPushOneNote is a push's listing of the objects to send after
// a write: one new note committed on top of the store and of a history of
// ANAMNESIS_BENCH_HISTORY commits of one note each (default 20), the hub
// at the commit before (go test -bench PushOneNote -benchmem; with
// ANAMNESIS_BENCH_REPO at a 100,000-note store for the scale target).
// revlist is go-git's listing, which sendPack used before: it walks every
// commit the hub's tip reaches and every tree of each, so it grows with
// the store and with its history; changed is objectsToPush.
func BenchmarkPushOneNote(b *testing.B) {
	r := benchStore(b)
	history := 20
	if v, err := strconv.Atoi(os.Getenv("ANAMNESIS_BENCH_HISTORY")); err == nil {
		history = v
	}
	types := []string{"episodic", "semantic", "procedural"}
	commitNote := func(dir string) plumbing.Hash {
		rel := fmt.Sprintf("%s/bench-push-%d.md", dir, time.Now().UnixNano())
		if err := os.WriteFile(filepath.Join(r.Dir(), filepath.FromSlash(rel)), []byte("bench note "+rel+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		h, ok, err := r.CommitPaths(ctx, []string{rel})
		if err != nil || !ok {
			b.Fatalf("commit: %v %v", ok, err)
		}
		return plumbing.Hash(h)
	}
	var base plumbing.Hash
	for i := range history {
		base = commitNote(types[i%3])
	}
	if history == 0 {
		var err error
		if base, err = r.head(); err != nil {
			b.Fatal(err)
		}
	}
	local := commitNote("semantic")
	known := []plumbing.Hash{base}
	list := map[string]func() ([]plumbing.Hash, error){
		"revlist": func() ([]plumbing.Hash, error) {
			return revlist.Objects(r.r.Storer, []plumbing.Hash{local}, known)
		},
		"changed": func() ([]plumbing.Hash, error) {
			return objectsToPush(ctx, r.r.Storer, local, known)
		},
	}
	for _, name := range []string{"revlist", "changed"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b, cpuTime())
			for range b.N {
				hashes, err := list[name]()
				if err != nil || len(hashes) != 4 { // the commit, the root tree, semantic/, the note
					b.Fatalf("listed %d objects: %v", len(hashes), err)
				}
			}
		})
	}
}
