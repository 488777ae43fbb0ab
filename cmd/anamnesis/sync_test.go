package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// anmRemote runs the CLI for one machine: its own home and machine id, the hub as remote.
func anmRemote(t *testing.T, home, machine, hub, stdin string, args ...string) result {
	t.Helper()
	return runCmd(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID="+machine, "ANAMNESIS_GIT_REMOTE="+hub), stdin, args...)
}

// anmRemoteProcess is anmRemote in a process of the built binary (see
// anmProcess).
func anmRemoteProcess(t *testing.T, home, machine, hub, stdin string, args ...string) result {
	t.Helper()
	return runProcess(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID="+machine, "ANAMNESIS_GIT_REMOTE="+hub), stdin, args...)
}

func TestSyncBetweenTwoMachines(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	a, b := t.TempDir(), t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "procedural", "--title", "Use WAL mode for SQLite",
		"--body", "Set busy_timeout on every connection to avoid lock errors.")).stdout)
	// The write is committed at once, before any sync.
	if log := testutil.Git(t, filepath.Join(a, "memory"), "log", "--format=%ae %s"); !strings.Contains(log, "anamnesis@desk anamnesis: sync from desk at ") {
		t.Fatalf("write not committed: %q", log)
	}
	r := mustOK(t, anmRemote(t, a, "desk", hub, "", "sync", "--json"))
	var rep struct {
		Pushed, Committed, Fetched, Merged bool
		Head                               string
		ConflictCopies                     []string `json:"conflict_copies"`
		Reindexed                          map[string]int
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.Pushed || rep.ConflictCopies == nil || rep.Reindexed == nil {
		t.Fatalf("sync --json: %v\n%s", err, r.stdout)
	}
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Reindexed["added"] != 1 {
		t.Fatalf("b's first sync should index the pulled note: %s", r.stdout)
	}
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "search", "--json", seedQuery))
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("b cannot find a's note: %s", r.stdout)
	}
	// status reports the git state.
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "status", "--json"))
	var st struct {
		Index struct {
			LastIndexedCommit string `json:"last_indexed_commit"`
		}
		Sync struct {
			Remote, Head string
			Dirty        bool
		}
	}
	json.Unmarshal([]byte(r.stdout), &st)
	if st.Sync.Remote != hub || st.Sync.Head == "" || st.Sync.Dirty || st.Index.LastIndexedCommit != st.Sync.Head {
		t.Errorf("status: %s", r.stdout)
	}
	for _, h := range []string{a, b} {
		testutil.Git(t, filepath.Join(h, "memory"), "fsck", "--strict")
	}
}

func TestConflictCopyIsListedAndSearchable(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	a, b := t.TempDir(), t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", "answer", "--body", "the answer is 41")).stdout)
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync"))
	path := "memory/semantic/" + id + ".md"
	edit := func(home, body string) {
		data, _ := os.ReadFile(filepath.Join(home, path))
		os.WriteFile(filepath.Join(home, path), []byte(strings.Replace(string(data), "the answer is 41", body, 1)), 0o644)
	}
	edit(a, "the answer is 42 walrus")
	edit(b, "the answer is 43 pelican")
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	r := mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync"))
	if !strings.Contains(r.stdout, "conflict copy memory/semantic/"+id+".conflict-") {
		t.Fatalf("sync does not report the conflict copy:\n%s", r.stdout)
	}
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	for _, home := range []string{a, b} {
		st := mustOK(t, anmRemote(t, home, "x", hub, "", "status", "--json")).stdout
		if !strings.Contains(st, ".conflict-") {
			t.Errorf("status does not list the conflict copy: %s", st)
		}
		for _, word := range []string{"walrus", "pelican"} {
			if r := mustOK(t, anmRemote(t, home, "x", hub, "", "search", word)); !strings.Contains(r.stdout, "answer") {
				t.Errorf("%s not found after the conflict on %s", word, home)
			}
		}
	}
	// The copy is shown next to its note, marked, wherever it is found.
	js := mustOK(t, anmRemote(t, b, "laptop", hub, "", "search", "--json", "pelican")).stdout
	if !strings.Contains(js, `"conflict_of": "`+id+`"`) || strings.Count(js, `"title": "answer"`) != 2 {
		t.Errorf("search for the copy's word does not bring the note and the marked copy:\n%s", js)
	}
	// resolve keeps the merged text under the note's id, removes the copy
	// and syncs; the other machine gets it with its next sync.
	if r := anmRemote(t, b, "laptop", hub, "", "resolve", id); r.code != 2 {
		t.Errorf("resolve without a choice: exit %d, %s", r.code, r.stderr)
	}
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "resolve", id, "--body", "the answer is 42 walrus pelican"))
	if !strings.Contains(r.stdout, "removed conflict copy") {
		t.Errorf("resolve output: %s", r.stdout)
	}
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	for _, home := range []string{a, b} {
		st := mustOK(t, anmRemote(t, home, "x", hub, "", "status", "--json")).stdout
		if strings.Contains(st, ".conflict-") || !strings.Contains(st, `"conflicts": []`) {
			t.Errorf("conflict still listed after resolve on %s: %s", home, st)
		}
		if show := mustOK(t, anmRemote(t, home, "x", hub, "", "show", id)).stdout; !strings.Contains(show, "42 walrus pelican") {
			t.Errorf("merged text missing on %s: %s", home, show)
		}
	}
}

func TestHandGitPullFiresHookAndKeepsUserHook(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	a, b := t.TempDir(), t.TempDir()
	mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", "first", "--body", "first note"))
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync"))
	mem := filepath.Join(b, "memory")
	// A hook the user had before anamnesis.
	marker := filepath.Join(t.TempDir(), "user-hook-ran")
	os.MkdirAll(filepath.Join(mem, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(mem, ".git", "hooks", "post-merge"), []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755)
	r := mustOK(t, anmRemote(t, b, "laptop", hub, "", "hooks", "install"))
	if !strings.Contains(r.stdout, "post-merge") || !strings.Contains(r.stdout, "anamnesis-prev") {
		t.Fatalf("install output:\n%s", r.stdout)
	}
	again := mustOK(t, anmRemote(t, b, "laptop", hub, "", "hooks", "install"))
	if again.stdout != r.stdout {
		t.Errorf("second install differs:\n%s\nvs\n%s", again.stdout, r.stdout)
	}
	// A new note arrives at the hub; the user pulls by hand.
	mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", "pulled by hand", "--body", "the flamingo protocol"))
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	testutil.Git(t, mem, "pull", "--no-rebase", "origin", "main")
	if _, err := os.Stat(marker); err != nil {
		t.Error("the user's own post-merge hook did not run")
	}
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "search", "flamingo"))
	if !strings.Contains(r.stdout, "pulled by hand") {
		t.Fatalf("hook did not reindex the pulled note: %s", r.stdout)
	}
	// Uninstall restores the user's hook exactly.
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "hooks", "uninstall"))
	data, _ := os.ReadFile(filepath.Join(mem, ".git", "hooks", "post-merge"))
	if !strings.Contains(string(data), "touch") || strings.Contains(string(data), "anamnesis-hook") {
		t.Errorf("user hook not restored: %s", data)
	}
	if _, err := os.Stat(filepath.Join(mem, ".git", "hooks", "post-commit")); err == nil {
		t.Error("our post-commit hook left behind")
	}
}

func TestConcurrentSyncProcesses(t *testing.T) {
	hub := testutil.BareHub(t)
	a := t.TempDir()
	for i := 0; i < 3; i++ {
		mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", fmt.Sprintf("n%d", i), "--body", "b"))
	}
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Add(1)
		go func(i int) { defer wg.Done(); results[i] = anmRemoteProcess(t, a, "desk", hub, "", "sync") }(i)
	}
	wg.Wait()
	for _, r := range results {
		if r.code != 0 {
			t.Errorf("concurrent sync failed: %s", r.stderr)
		}
	}
	testutil.Git(t, filepath.Join(a, "memory"), "fsck", "--strict")
	if n := strings.Count(testutil.Git(t, hub, "ls-tree", "-r", "--name-only", "main"), ".md"); n != 3 {
		t.Errorf("hub has %d notes", n)
	}
}

func TestUnreachableRemoteIsOneClearLine(t *testing.T) {
	parallel(t)
	a := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no-such-hub.git")
	mustOK(t, anmRemote(t, a, "desk", missing, "", "write", "--type", "semantic", "--title", "kept", "--body", "safe"))
	r := anmRemote(t, a, "desk", missing, "", "sync")
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "local notes are committed") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if log := testutil.Git(t, filepath.Join(a, "memory"), "log", "--oneline"); strings.Count(log, "\n") != 1 {
		t.Errorf("note not committed: %q", log)
	}
}

func TestDoctorNamesConflictCopies(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	a, b := t.TempDir(), t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", "answer", "--body", "41")).stdout)
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync"))
	for home, body := range map[string]string{a: "42", b: "43"} {
		p := filepath.Join(home, "memory", "semantic", id+".md")
		data, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(data), "\n41\n", "\n"+body+"\n", 1)), 0o644)
	}
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync"))
	r := anmRemote(t, b, "laptop", hub, "", "doctor")
	if !strings.Contains(r.stdout, "conflict copies") || !strings.Contains(r.stdout, ".conflict-") || !strings.Contains(r.stdout, "conflict_of") {
		t.Errorf("doctor does not explain the conflict copy:\n%s", r.stdout)
	}
}

// TestDoctorFixesStaleGitLocks leaves the lock files a killed git leaves
// (index.lock, a ref lock): a hand git commit fails on them, doctor names
// them, `doctor --fix` removes the old ones and keeps a fresh one, and the
// hand git works again.
func TestDoctorFixesStaleGitLocks(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	home := t.TempDir()
	mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "locks", "--body", "stale locks"))
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
	gitDir := filepath.Join(home, "memory", ".git")
	old := time.Now().Add(-10 * time.Minute)
	stale := []string{filepath.Join(gitDir, "index.lock"), filepath.Join(gitDir, "refs", "heads", "main.lock")}
	for _, p := range stale {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	fresh := filepath.Join(gitDir, "packed-refs.lock")
	os.WriteFile(fresh, nil, 0o644)

	hand := exec.Command("git", "-C", filepath.Join(home, "memory"), "commit", "--allow-empty", "-m", "by hand")
	if out, err := hand.CombinedOutput(); err == nil {
		t.Fatalf("git commit succeeded despite index.lock: %s", out)
	}
	r := anmRemote(t, home, "desk", hub, "", "doctor")
	if !strings.Contains(r.stdout, "git lock files") || !strings.Contains(r.stdout, "index.lock") || !strings.Contains(r.stdout, "main.lock") || strings.Contains(r.stdout, "packed-refs.lock") {
		t.Errorf("doctor does not name exactly the stale locks:\n%s", r.stdout)
	}
	fix := mustOK(t, anmRemote(t, home, "desk", hub, "", "doctor", "--fix", "--json"))
	if !strings.Contains(fix.stdout, `"removed"`) || !strings.Contains(fix.stdout, "index.lock") {
		t.Errorf("doctor --fix does not report what it removed:\n%s", fix.stdout)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived doctor --fix", p)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("doctor --fix removed a fresh lock a running git may hold: %v", err)
	}
	os.Remove(fresh)
	testutil.Git(t, filepath.Join(home, "memory"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--allow-empty", "-m", "by hand")
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
}

// TestForegroundSyncIsLogged: a sync run in a terminal appends its
// outcome to state/sync.log as the background syncs do, so the web UI's
// header and doctor see it; a failed one says why.
func TestForegroundSyncIsLogged(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "logged", "--body", "kept"))
	mustOK(t, anm(t, home, "", "sync"))
	data, err := os.ReadFile(filepath.Join(home, "state", "sync.log"))
	if err != nil || !strings.Contains(string(data), "(in a terminal)") || !strings.Contains(string(data), "exit 0 after ") {
		t.Fatalf("sync.log after a foreground sync: %v\n%s", err, data)
	}
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "ANAMNESIS_GIT_REMOTE="+filepath.Join(t.TempDir(), "missing.git"))
	if r := runCmd(t, env, "", "sync"); r.code == 0 {
		t.Fatalf("a sync to a missing hub succeeded: %s", r.stdout)
	}
	data, _ = os.ReadFile(filepath.Join(home, "state", "sync.log"))
	if !strings.Contains(string(data), "exit 1 after ") || !strings.Contains(string(data), "missing.git") {
		t.Errorf("a failed foreground sync is not in sync.log:\n%s", data)
	}
}
