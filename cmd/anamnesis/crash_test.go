package main

import (
	"context"
	"encoding/json"
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

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
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
	hub := testutil.BareHub(t)
	victim, other := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the other machine writes and syncs all the time
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			anmRemoteProcess(t, other, "other", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("other %d", i), "--body", fmt.Sprintf("from the other machine %d", i))
			anmRemoteProcess(t, other, "other", hub, "", "sync")
		}
	}()
	r := rand.New(rand.NewSource(7))
	var committed []string
	runs := crashRuns()
	for i := 0; i < runs; i++ {
		out := mustOK(t, anmRemoteProcess(t, victim, "victim", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("victim %d", i), "--body", fmt.Sprintf("victim note %d", i)))
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
		if res := anmRemoteProcess(t, victim, "victim", hub, "", "sync"); res.code != 0 {
			t.Fatalf("sync after %d kills failed: %s", runs, res.stderr)
		}
	}
	testutil.Git(t, filepath.Join(victim, "memory"), "fsck", "--strict")
	testutil.Git(t, hub, "fsck", "--strict")
	mustOK(t, anmProcess(t, victim, "", "reindex"))
	again := mustOK(t, anmRemoteProcess(t, victim, "victim", hub, "", "reindex", "--json"))
	if !strings.Contains(again.stdout, `"added": 0`) || !strings.Contains(again.stdout, `"updated": 0`) || !strings.Contains(again.stdout, `"deleted": 0`) {
		t.Errorf("index and files disagree after a reconcile: %s", again.stdout)
	}
	hubFiles := testutil.Git(t, hub, "ls-tree", "-r", "--name-only", "main")
	for _, id := range committed {
		if _, err := os.Stat(filepath.Join(victim, "memory", "semantic", id+".md")); err != nil {
			t.Errorf("note %s committed before a kill is gone from the victim", id)
		}
		if !strings.Contains(hubFiles, id) {
			t.Errorf("note %s never reached the hub", id)
		}
		if r := anmRemoteProcess(t, victim, "victim", hub, "", "show", id); r.code != 0 {
			t.Errorf("note %s not indexed: %s", id, r.stderr)
		}
	}
	t.Logf("%d syncs killed; %d victim notes, all present", runs, len(committed))
}

// TestKilledWritesAndCapturesLeaveNoHalfNotes kills `anamnesis write` and
// the session-end hook at random moments. No note file is ever partial
// (every *.md parses), and after one reconcile the index and the files
// agree: nothing indexed that is not on disk, nothing on disk unindexed.
func TestKilledWritesAndCapturesLeaveNoHalfNotes(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anmProcess(t, home, "", "write", "--type", "semantic", "--title", "seed", "--body", "x"))
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","sessionId":"crash-%d","message":{"role":"user","content":"remember question %d"}}`+"\n", i, i%5, i)
	}
	os.WriteFile(tr, []byte(b.String()), 0o644)
	big := strings.Repeat("a long body line that takes a while to write and index\n", 8000) // ~450 KB
	r := rand.New(rand.NewSource(3))
	runs := crashRuns() * 2
	for i := 0; i < runs; i++ {
		var cmd *exec.Cmd
		if i%2 == 0 {
			cmd = exec.Command(binary, "write", "--type", "semantic", "--title", fmt.Sprintf("big %d", i), "--body-file", "-")
			cmd.Stdin = strings.NewReader(big)
		} else {
			cmd = exec.Command(binary, "hook", "session-end")
			cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"crash-%d","transcript_path":%q,"cwd":"/tmp"}`, i, tr))
		}
		cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=box")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.Intn(60000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	var notes int
	filepath.WalkDir(filepath.Join(home, "memory"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || strings.HasPrefix(d.Name(), ".") {
			if d != nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		notes++
		if r := anmProcess(t, home, "", "show", strings.TrimSuffix(d.Name(), ".md")); r.code != 0 && !strings.Contains(r.stderr, "no note") {
			t.Errorf("%s: %s", p, r.stderr)
		}
		return nil
	})
	first := mustOK(t, anmProcess(t, home, "", "reindex", "--json"))
	if strings.Contains(first.stdout, `"skipped": [
    {`) {
		t.Errorf("a partial note file exists: %s", first.stdout)
	}
	second := mustOK(t, anmProcess(t, home, "", "reindex", "--json"))
	if !strings.Contains(second.stdout, `"added": 0`) || !strings.Contains(second.stdout, `"deleted": 0`) || !strings.Contains(second.stdout, `"updated": 0`) {
		t.Errorf("index and files still disagree after a reconcile: %s", second.stdout)
	}
	var st struct{ Notes struct{ Total int } }
	json.Unmarshal([]byte(mustOK(t, anmProcess(t, home, "", "status", "--json")).stdout), &st)
	if st.Notes.Total != notes {
		t.Errorf("index has %d notes, the tree %d", st.Notes.Total, notes)
	}
	if r := anmProcess(t, home, "", "doctor"); !strings.Contains(r.stdout, "ok:     search postings: agree with FTS5") {
		t.Errorf("search postings after killed writes:\n%s", r.stdout)
	}
	t.Logf("%d processes killed; %d whole notes on disk, all indexed", runs, notes)
}
