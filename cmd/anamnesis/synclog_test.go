package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// waitDetached waits for the syncs a hook started detached on home.
func waitDetached(t *testing.T, home string) {
	t.Helper()
	if !detachedDone(home, 60*time.Second) {
		t.Fatal("detached processes still run after 60 s")
	}
}

var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z pid (\d+) (.*)$`)

// TestBackgroundSyncsShareTheirLog: several sessions start at once, each
// session-start hook starts a sync in the background, and all of them
// report to state/sync.log. Each sync's lines must arrive whole and
// together, stamped with time and pid; none may truncate another's
// report; and the log, which may name the remote, is private (0600 in a
// 0700 state directory), even when an older version left it 0644.
func TestBackgroundSyncsShareTheirLog(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	home := t.TempDir()
	awaitDetached(t, home)
	mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "seed", "--body", "b"))
	state := filepath.Join(home, "state")
	os.MkdirAll(state, 0o755)
	old := "an older version's line\n"
	os.WriteFile(filepath.Join(state, "sync.log"), []byte(old), 0o644)

	const sessions = 4
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := anmRemoteProcess(t, home, "desk", hub, `{"session_id":"s","cwd":"/tmp","source":"startup"}`, "hook", "session-start")
			if r.code != 0 {
				t.Errorf("hook: %+v", r)
			}
		}()
	}
	wg.Wait()
	waitDetached(t, home)

	data, err := os.ReadFile(filepath.Join(state, "sync.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !strings.HasPrefix(log, old) {
		t.Errorf("the log of earlier syncs was lost:\n%s", log)
	}
	reports := map[string]int{} // pid -> lines
	var order []string
	for _, l := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(log, old), "\n"), "\n") {
		m := logLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line without time and pid: %q", l)
			continue
		}
		if len(order) == 0 || order[len(order)-1] != m[1] {
			order = append(order, m[1])
		}
		reports[m[1]]++
		if strings.HasPrefix(m[2], "exit ") && !strings.HasPrefix(m[2], "exit 0 after ") {
			t.Errorf("a background sync failed: %q\n%s", m[2], log)
		}
	}
	if len(reports) != sessions || len(order) != sessions {
		t.Errorf("want %d whole sync reports one after another, got %d processes in %d runs:\n%s", sessions, len(reports), len(order), log)
	}
	if strings.Count(log, "sync: committed=") != sessions || strings.Count(log, " exit 0 after ") != sessions {
		t.Errorf("want %d complete reports:\n%s", sessions, log)
	}
	for p, want := range map[string]os.FileMode{state: 0o700, filepath.Join(state, "sync.log"): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, fi.Mode().Perm(), want, err)
		}
	}
}
