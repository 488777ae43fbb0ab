package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// Commit messages say what happened (issue 25) under the subject the
// Python tool's dashboard parses: a write, a capture, a sync of an edit
// made on disk.
func TestCommitMessagesSayWhatHappened(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	awaitDetached(t, home)
	mem := filepath.Join(home, "memory")
	last := func() string { return testutil.Git(t, mem, "log", "-1", "--format=%B") }
	id := strings.TrimSpace(mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "Widget deploys with Render", "--body", "b")).stdout)
	if m := last(); !strings.HasPrefix(m, "anamnesis: sync from desk at ") || !strings.Contains(m, "write semantic "+id+": Widget deploys with Render") {
		t.Errorf("write's commit: %q", m)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"c1","message":{"role":"user","content":"fix the heron build"}}`+"\n"+
		`{"type":"assistant","sessionId":"c1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/tmp/x.go"}}]}}`+"\n"), 0o644)
	mustOK(t, anm(t, home, `{"session_id":"c1","transcript_path":"`+tr+`","cwd":"/tmp"}`, "hook", "session-end"))
	if m := last(); !strings.Contains(m, "capture session (write) episodic ") {
		t.Errorf("capture's commit: %q", m)
	}
	detachedDone(home, 15e9)
	p := filepath.Join(mem, "semantic", id+".md")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "\nb\n", "\nedited by hand\n", 1)), 0o644)
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
	if m := testutil.Git(t, mem, "log", "--format=%B"); !strings.Contains(m, "sync: commit what changed on disk") {
		t.Errorf("sync's commit of a hand edit:\n%s", m)
	}
}
