package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashRuns is how many syncs are killed: ANAMNESIS_CRASH_RUNS (make
// stress sets 60), 12 by default to keep make test short.
func crashRuns() int {
	if n, err := strconv.Atoi(os.Getenv("ANAMNESIS_CRASH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 12
}

// TestKilledSyncsLoseNothing kills `anamnesis sync` with SIGKILL at many
// different moments while another machine keeps writing and syncing.
// Afterwards: the next sync succeeds, git fsck is clean on both sides, the
// index agrees with the files after one reconcile, and every note that was
// committed before a kill still exists, on the victim and on the hub.
func TestKilledSyncsLoseNothing(t *testing.T) {
	hub := bareHub(t)
	victim, other := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the other machine writes and syncs all the time
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			anmRemote(t, other, "other", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("other %d", i), "--body", fmt.Sprintf("from the other machine %d", i))
			anmRemote(t, other, "other", hub, "", "sync")
		}
	}()
	r := rand.New(rand.NewSource(7))
	var committed []string
	runs := crashRuns()
	for i := 0; i < runs; i++ {
		out := mustOK(t, anmRemote(t, victim, "victim", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("victim %d", i), "--body", fmt.Sprintf("victim note %d", i)))
		committed = append(committed, strings.TrimSpace(out.stdout))
		cmd := exec.Command(binary, "sync")
		cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+victim, "ANAMNESIS_MACHINE_ID=victim", "ANAMNESIS_GIT_REMOTE="+hub)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.Intn(250)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cancel()
	wg.Wait()
	// Recovery: the next sync works (twice, to take the other side's last push too).
	for j := 0; j < 2; j++ {
		if res := anmRemote(t, victim, "victim", hub, "", "sync"); res.code != 0 {
			t.Fatalf("sync after %d kills failed: %s", runs, res.stderr)
		}
	}
	gitIn(t, filepath.Join(victim, "memory"), "fsck", "--strict")
	gitIn(t, hub, "fsck", "--strict")
	mustOK(t, anm(t, victim, "", "reindex"))
	again := mustOK(t, anmRemote(t, victim, "victim", hub, "", "reindex", "--json"))
	if !strings.Contains(again.stdout, `"added": 0`) || !strings.Contains(again.stdout, `"updated": 0`) || !strings.Contains(again.stdout, `"deleted": 0`) {
		t.Errorf("index and files disagree after a reconcile: %s", again.stdout)
	}
	hubFiles := gitIn(t, hub, "ls-tree", "-r", "--name-only", "main")
	for _, id := range committed {
		if _, err := os.Stat(filepath.Join(victim, "memory", "semantic", id+".md")); err != nil {
			t.Errorf("note %s committed before a kill is gone from the victim", id)
		}
		if !strings.Contains(hubFiles, id) {
			t.Errorf("note %s never reached the hub", id)
		}
		if r := anmRemote(t, victim, "victim", hub, "", "show", id); r.code != 0 {
			t.Errorf("note %s not indexed: %s", id, r.stderr)
		}
	}
	t.Logf("%d syncs killed; %d victim notes, all present", runs, len(committed))
}
