package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

func stressSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("ANAMNESIS_STRESS_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 4 * time.Second
}

// TestEightProcessesOnOneHome runs 8 workers, each starting anamnesis
// processes (write, search, prompt and session-start hooks, sync) against
// one home for a fixed time. No lock error may reach the user, every
// search must succeed, and every write must end up committed.
func TestEightProcessesOnOneHome(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	awaitDetached(t, home)
	mustOK(t, anmRemoteProcess(t, home, "box", hub, "", "write", "--type", "semantic", "--title", "seed", "--body", "seed heron"))
	deadline := time.Now().Add(stressSeconds())
	var mu sync.Mutex
	var written []string
	var failures []string
	counts := map[string]int{}
	fail := func(what string, r result) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf("%s: exit %d: %s", what, r.code, strings.TrimSpace(r.stderr)))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				var r result
				op := []string{"write", "search", "prompt", "session-start", "sync"}[(w+i)%5]
				switch op {
				case "write":
					r = anmRemoteProcess(t, home, "box", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("w%d n%d", w, i), "--body", "concurrent heron note")
					if r.code == 0 {
						mu.Lock()
						written = append(written, strings.TrimSpace(r.stdout))
						mu.Unlock()
					}
				case "search":
					r = anmRemoteProcess(t, home, "box", hub, "", "search", "--json", "heron")
					if r.code == 0 && !strings.Contains(r.stdout, "heron") {
						fail("search found nothing", r)
					}
				case "prompt":
					r = anmRemoteProcess(t, home, "box", hub, fmt.Sprintf(`{"session_id":"s%d-%d","cwd":"/tmp","prompt":"tell me about the heron"}`, w, i), "hook", "prompt")
				case "session-start":
					r = anmRemoteProcess(t, home, "box", hub, fmt.Sprintf(`{"session_id":"t%d-%d","cwd":"/tmp"}`, w, i), "hook", "session-start")
				case "sync":
					r = anmRemoteProcess(t, home, "box", hub, "", "sync")
				}
				mu.Lock()
				counts[op]++
				mu.Unlock()
				bad := r.code != 0 || strings.Contains(r.stderr, "locked") || strings.Contains(strings.ToLower(r.stderr), "lock held") ||
					strings.Contains(r.stderr, "hook ") && !strings.Contains(r.stderr, "nothing captured")
				if op == "write" && strings.Contains(r.stderr, "saved but not committed: a sync") {
					bad = r.code != 0 // an informational notice, not an error
				}
				if bad {
					fail(op, r)
				}
			}
		}(w)
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	mustOK(t, anmRemoteProcess(t, home, "box", hub, "", "sync"))
	tree := testutil.Git(t, home+"/memory", "ls-tree", "-r", "--name-only", "HEAD")
	for _, id := range written {
		if !strings.Contains(tree, id) {
			t.Errorf("write %s not committed", id)
		}
	}
	if st := testutil.Git(t, home+"/memory", "status", "--porcelain"); st != "" {
		t.Errorf("uncommitted leftovers: %s", st)
	}
	// Writes, reindexes and syncs from eight processes must leave the
	// search postings exactly in step with FTS5.
	if r := anmRemoteProcess(t, home, "box", hub, "", "doctor"); !strings.Contains(r.stdout, "ok:     search postings: agree with FTS5") {
		t.Errorf("search postings after the run:\n%s", r.stdout)
	}
	t.Logf("operations: %v; %d writes, all committed", counts, len(written))
}
