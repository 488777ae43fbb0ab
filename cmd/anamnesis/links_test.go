package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkOut replaces dir inside a home by a symlink to a new directory
// outside it, as a hostile hub (git stores symlinks) or a stray tool
// could, and returns that directory.
func linkOut(t *testing.T, dir string) string {
	t.Helper()
	outside := t.TempDir()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	return outside
}

func assertEmpty(t *testing.T, what, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("%s left %v where the link points", what, names)
	}
}

// TestWriteThroughALinkedTypeDirectoryIsRefused: memory/episodic is a
// link to a directory outside the store. `write` fails with one line
// naming the link and the remedy; SessionEnd's capture fails open (exit
// 0, one line); nothing appears where the link points. `doctor` names
// the link and exits 1; `doctor --fix` removes it (never its target) and
// recreates the directory, after which both land inside memory/.
func TestWriteThroughALinkedTypeDirectoryIsRefused(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	initHome(t, home)
	mustOK(t, anm(t, home, "", "write", "--type", "episodic", "--title", "first", "--body", "b"))
	typeDir := filepath.Join(home, "memory", "episodic")
	outside := linkOut(t, typeDir)

	r := anm(t, home, "", "write", "--type", "episodic", "--title", "session", "--body", "captured")
	if r.code == 0 || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 ||
		!strings.Contains(r.stderr, typeDir+" is a symlink (to "+outside+")") || !strings.Contains(r.stderr, "run `anamnesis doctor --fix`") {
		t.Errorf("write through the link: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertEmpty(t, "write", outside)

	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"s9","message":{"role":"user","content":"remember that the build needs make 4.3 and decided to pin it"}}`+"\n"), 0o644)
	r = anm(t, home, `{"session_id":"s9","transcript_path":"`+tr+`","cwd":"/tmp"}`, "hook", "session-end")
	awaitDetached(t, home)
	assertFailOpen(t, "session-end through the link", r)
	if !strings.Contains(r.stderr, "symlink") {
		t.Errorf("session-end: stderr %q does not say why", r.stderr)
	}
	assertEmpty(t, "session-end", outside)

	r = anm(t, home, "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "problem: links in the store") || !strings.Contains(r.stdout, "memory/episodic -> "+outside) {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = anm(t, home, "", "doctor", "--fix")
	if !strings.Contains(r.stdout, "removed link memory/episodic -> "+outside) || !strings.Contains(r.stdout, "recreated directory memory/episodic") ||
		!strings.Contains(r.stdout, "ok:     links in the store") {
		t.Errorf("doctor --fix: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Lstat(outside); err != nil || !fi.IsDir() {
		t.Errorf("doctor --fix removed what the link pointed to: %v", err)
	}
	out := mustOK(t, anm(t, home, "", "write", "--type", "episodic", "--title", "after the fix", "--body", "b"))
	id := strings.TrimSpace(out.stdout)
	if _, err := os.Stat(filepath.Join(typeDir, id+".md")); err != nil {
		t.Errorf("write after doctor --fix: %v", err)
	}
	assertEmpty(t, "write after the fix", outside)
}

// TestLinkedStateDirectoryIsRefused: state/ is a link to a directory
// outside the store: the prompt hook, which saves what the session was
// shown there, fails open with one line and writes nothing there; doctor
// --fix makes state/ a real directory again.
func TestLinkedStateDirectoryIsRefused(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	initHome(t, home)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "User prefers tabs", "--body", "gofmt style"))
	state := filepath.Join(home, "state")
	outside := linkOut(t, state)
	r := anm(t, home, `{"session_id":"s1","cwd":"/tmp","prompt":"tabs or spaces?"}`, "hook", "prompt")
	if r.code != 0 || !strings.Contains(r.stderr, state+" is a symlink") || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
		t.Errorf("prompt with a linked state/: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertEmpty(t, "prompt", outside)
	mustOK(t, anm(t, home, "", "doctor", "--fix"))
	if fi, err := os.Lstat(state); err != nil || !fi.IsDir() {
		t.Errorf("state/ after doctor --fix: %v", err)
	}
	mustOK(t, anm(t, home, `{"session_id":"s1","cwd":"/tmp","prompt":"tabs or spaces?"}`, "hook", "prompt"))
	if m, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json")); len(m) != 1 {
		t.Errorf("session state after the fix: %v", m)
	}
}
