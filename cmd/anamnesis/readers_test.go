package main

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

// TestStatusWhileALargePullRuns is the report of issue 12 with real
// processes: `anamnesis status` in a loop while a second machine pulls
// thousands of notes. A status that removed the checkout's temporary
// files made the sync fail ("rename ... no such file or directory"), and
// the next sync committed the other machine's notes as a local commit.
func TestStatusWhileALargePullRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("pulls thousands of notes")
	}
	hub := bareHub(t)
	a, b := t.TempDir(), t.TempDir()
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync")) // b's repository exists, empty
	mem := note.Tree{Root: filepath.Join(a, "memory"), Scope: note.ScopePortable}
	const n = 1500
	if _, err := synth.Fill(mem, synth.NewGen(synth.NewVocab(2000, 1), 1), n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))

	var done atomic.Bool
	var wg sync.WaitGroup
	var statuses atomic.Int64
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if r := anmRemote(t, b, "laptop", hub, "", "status", "--json"); r.code != 0 {
					t.Errorf("status during the pull: exit %d: %s", r.code, r.stderr)
				}
				statuses.Add(1)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the readers are running
	pull := anmRemote(t, b, "laptop", hub, "", "sync", "--json")
	done.Store(true)
	wg.Wait()
	t.Logf("%d status runs alongside the pull", statuses.Load())
	if pull.code != 0 {
		t.Errorf("the pull failed while status ran: %s", pull.stderr)
	}
	next := mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync", "--json"))
	if strings.Contains(next.stdout, `"committed": true`) {
		t.Errorf("the next sync committed pulled notes as local changes: %s", next.stdout)
	}
	memB := filepath.Join(b, "memory")
	if head, hubHead := gitIn(t, memB, "rev-parse", "main"), gitIn(t, hub, "rev-parse", "main"); head != hubHead {
		t.Errorf("b's head %s is not the hub's %s", head, hubHead)
	}
	if st := gitIn(t, memB, "status", "--porcelain"); st != "" {
		t.Errorf("b's worktree differs from its head:\n%s", st)
	}
	if got := strings.Count(gitIn(t, memB, "ls-files"), ".md"); got != n {
		t.Errorf("b has %d notes, want %d", got, n)
	}
}
