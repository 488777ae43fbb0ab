package gitsync

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// heapPeak samples the heap in use until the returned function is
// called, and returns the peak over the baseline.
func heapPeak() func() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
					peak.Store(ms.HeapInuse - base)
				}
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// TestServeParallelFetchesInBoundedMemory: 30 machines fetching a
// 5,000-note memory at once from `anamnesis serve` (git CLI clients, in
// processes of their own, so the heap measured is the server's) all get
// it, and the server's heap stays bounded: pack building is limited to
// MaxConcurrentPacks at a time, the others wait their turn.
func TestServeParallelFetchesInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("16 clones of a 5,000-note store")
	}
	repo := filepath.Join(t.TempDir(), "memory")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", "main", repo)
	g := synth.NewGen(synth.NewVocab(20000, 1), 5000)
	if _, err := synth.Fill(note.Tree{Root: repo, Scope: note.ScopePortable}, g, 5000, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-q", "-m", "5000 notes")
	srv := httptest.NewServer(&Handler{GitDir: filepath.Join(repo, ".git"), Auth: allowAll{}})
	t.Cleanup(srv.Close)

	// 16 clones: unbounded, they take the server's heap to about 215 MB
	// (30 took it past 700 MB before each fetch's object cache was
	// bounded); four at a time stay near 70 MB.
	// More clones only wait longer for their turn, which on a loaded
	// machine ran into the turn's time limit (503).
	const clients = 16
	stop := heapPeak()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dst := filepath.Join(t.TempDir(), fmt.Sprint("clone", i))
			cmd := exec.Command("git", "clone", "-q", "--bare", srv.URL+"/memory", dst)
			cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("clone %d: %v: %s", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	peak := stop()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d parallel fetches of 5,000 notes: %v, server heap peak %d MB", clients, time.Since(start).Round(time.Millisecond), peak>>20)
	if peak > 150<<20 {
		t.Errorf("server heap peak %d MB, want under 150 MB", peak>>20)
	}
}

// TestServeLetsASlowFetchFinish: the serve timeout bounds silence, not
// length: a peer behind a link that moves 64 KB every 50 ms fetches
// about 6 MB (more than loopback buffers; 5 s and more) from a server
// whose timeout is 2 s. (Not less: the kernel wakes a blocked write once
// a third of a send buffer of up to 4 MB drained, a second at this
// pace.)
func TestServeLetsASlowFetchFinish(t *testing.T) {
	if testing.Short() {
		t.Skip("slow link: a few seconds")
	}
	// Most of its time is a slow link's waiting: it runs beside the
	// package's other waiting tests.
	t.Parallel()
	a := newMachine(t, "a", "")
	writeRandomNotes(a, 1500, 4<<10)
	if _, _, err := a.repo.CommitAll(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Handler{GitDir: filepath.Join(a.repo.Dir(), ".git"), Auth: allowAll{}, Timeout: 2 * time.Second})
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	slow := startTrickle(t, host, 64<<10, 50*time.Millisecond, 0).via(srv.URL+"/memory", host)
	b := newMachine(t, "b", "")
	start := time.Now()
	rep, err := b.repo.Sync(ctx, Options{Peers: []string{slow}, Timeout: 5 * time.Second})
	took := time.Since(start)
	if err != nil || len(rep.Peers) != 1 || rep.Peers[0].Error != "" || !rep.Fetched {
		t.Fatalf("slow fetch from serve (after %v): %+v, %v", took.Round(time.Millisecond), rep.Peers, err)
	}
	if took < 4*time.Second {
		t.Fatalf("took %v: too fast to show anything about a 2 s timeout", took)
	}
	sameTrees(t, a, b)
	t.Logf("slow fetch took %v", took.Round(time.Millisecond))
}
