//go:build unix

package gitsync

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// What a pull and a first sync cost (issue 29): a hub of n notes the
// size of real ones, made with git fast-import, and machines that take
// them with Sync.

var scaleTypes = []string{"semantic", "episodic", "procedural"}

// scaleNote is a note of about 3 KB: frontmatter and lines of words from
// a small vocabulary, different per seed, so blobs compress as notes do.
func scaleNote(rng *rand.Rand, id string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "---\nid: %s\ntitle: note %s\ntype: semantic\nmachine_id: bench-a\nupdated_at: '2026-01-01T00:00:00Z'\n---\n", id, id)
	for l := 0; l < 40; l++ {
		for w := 0; w < 12; w++ {
			fmt.Fprintf(&b, "w%d ", rng.Intn(20000))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// hubCommit adds k notes (ids from first on) to hub's main in one
// commit, on top of main when it exists, through git fast-import.
func hubCommit(tb testing.TB, hub string, first, k int, seed int64) {
	tb.Helper()
	rng := rand.New(rand.NewSource(seed))
	var in bytes.Buffer
	fmt.Fprintf(&in, "commit refs/heads/main\nauthor a <anamnesis@bench-a> 1767225600 +0000\ncommitter a <anamnesis@bench-a> 1767225600 +0000\ndata 3\nadd\n")
	if out, err := testutil.TryGit(hub, "rev-parse", "--verify", "-q", "main"); err == nil {
		fmt.Fprintf(&in, "from %s\n", strings.TrimSpace(out))
	}
	for i := first; i < first+k; i++ {
		id := fmt.Sprintf("01JG%022d", i)
		data := scaleNote(rng, id)
		fmt.Fprintf(&in, "M 100644 inline %s/%s.md\ndata %d\n", scaleTypes[i%len(scaleTypes)], id, len(data))
		in.Write(data)
		in.WriteByte('\n')
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = hub, &in
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
}

// scaleHub is a bare hub holding n notes in one commit.
func scaleHub(tb testing.TB, n int) string {
	hub := testutil.BareHub(tb)
	hubCommit(tb, hub, 0, n, 1)
	return hub
}

// cpuClock measures this process's CPU time (user and system) over the
// timed parts of a benchmark: wall time on the shared machine says more
// about the other processes than about ours.
type cpuClock struct {
	start, total time.Duration
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuClock) run()  { c.start = cpuNow() }
func (c *cpuClock) stop() { c.total += cpuNow() - c.start }
func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Milliseconds())/float64(b.N), "cpu-ms/op")
}

func openBench(tb testing.TB, dir string) *Repo {
	tb.Helper()
	r, err := Open(ctx, dir, "bench-b", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkCloneCheckout10k is a first sync of an empty machine from a
// hub of 10,000 notes: fetch, check every object, check out.
func BenchmarkCloneCheckout10k(b *testing.B) {
	hub := scaleHub(b, 10000)
	var cpu cpuClock
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu.run()
		r := openBench(b, filepath.Join(b.TempDir(), "memory"))
		rep, err := r.Sync(ctx, Options{Remote: hub})
		cpu.stop()
		if err != nil {
			b.Fatal(err)
		}
		if !rep.FastForward {
			b.Fatalf("not a fast-forward: %+v", rep)
		}
	}
	cpu.report(b)
}

// benchPull measures a sync bringing k new notes into a machine that
// holds n.
func benchPull(b *testing.B, n, k int) {
	hub := scaleHub(b, n)
	tmpl := filepath.Join(b.TempDir(), "memory")
	if _, err := openBench(b, tmpl).Sync(ctx, Options{Remote: hub}); err != nil {
		b.Fatal(err)
	}
	hubCommit(b, hub, n, k, 2)
	var cpu cpuClock
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "memory")
		if out, err := exec.Command("cp", "-a", tmpl, dir).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
		r := openBench(b, dir)
		// The copy has new inodes: a commit-only sync settles the git
		// index's stat data, as the machine's own would be.
		if _, err := r.Sync(ctx, Options{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu.run()
		rep, err := r.Sync(ctx, Options{Remote: hub})
		cpu.stop()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if !rep.FastForward {
			b.Fatalf("not a fast-forward: %+v", rep)
		}
		os.RemoveAll(dir)
		b.StartTimer()
	}
	cpu.report(b)
}

func BenchmarkPull1000Into10k(b *testing.B) { benchPull(b, 10000, 1000) }
func BenchmarkPull100Into10k(b *testing.B)  { benchPull(b, 10000, 100) }
