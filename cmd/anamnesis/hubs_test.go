package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// userHub makes a bare hub as users create one: `git init --bare` with
// the given default branch and a first commit, pushed from a clone, that
// holds what a new hosted repository comes with (README.md, a docs page,
// an issue template).
func userHub(t *testing.T, branch string) string {
	t.Helper()
	hub := filepath.Join(t.TempDir(), "hub.git")
	testutil.Git(t, t.TempDir(), "init", "-q", "--bare", "-b", branch, hub)
	work := filepath.Join(t.TempDir(), "work")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", branch, work)
	for rel, data := range map[string]string{
		"README.md":                     "# memory\n\nNotes shared by my machines.\n",
		"docs/setup.md":                 "How to set up a machine.\n",
		".github/ISSUE_TEMPLATE/bug.md": "---\nname: Bug report\n---\n",
	} {
		p := filepath.Join(work, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, work, "add", "-A")
	testutil.Git(t, work, "commit", "-q", "-m", "Initial commit")
	testutil.Git(t, work, "push", "-q", hub, branch)
	return hub
}

// TestHubCreatedWithAReadme: the README and the other files a hub came
// with are merged into memory/ and synced, but no command reports them
// as bad notes, on the first sync or any later one; doctor mentions them
// once, as information.
func TestHubCreatedWithAReadme(t *testing.T) {
	parallel(t)
	hub := userHub(t, "main")
	home := t.TempDir()
	mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "hub with a readme", "--body", "wombat"))
	for i := 0; i < 2; i++ {
		r := mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
		if strings.Contains(r.stdout+r.stderr, "README.md") {
			t.Errorf("sync %d mentions the README:\n%s%s", i+1, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "memory", "README.md")); err != nil {
		t.Fatalf("the hub's README is not in memory/: %v", err)
	}
	for _, args := range [][]string{{"status"}, {"reindex"}, {"reindex", "--full"}, {"status"}} {
		r := mustOK(t, anmRemote(t, home, "desk", hub, "", args...))
		if strings.Contains(r.stdout+r.stderr, "README.md") || strings.Contains(r.stdout, "skipped") {
			t.Errorf("%v reports a file that is not a note:\n%s%s", args, r.stdout, r.stderr)
		}
	}
	r := anmRemote(t, home, "desk", hub, "", "doctor")
	if strings.Contains(r.stdout, "skipped by the index") ||
		!strings.Contains(r.stdout, "3 files that are not notes (.github/ISSUE_TEMPLATE/bug.md, README.md, docs/setup.md) are synced but not indexed") {
		t.Errorf("doctor:\n%s%s", r.stdout, r.stderr)
	}
	if got := strings.TrimSpace(testutil.Git(t, hub, "ls-tree", "-r", "--name-only", "main")); !strings.Contains(got, "README.md") || !strings.Contains(got, "semantic/") {
		t.Errorf("hub's main after the sync:\n%s", got)
	}
	if r := mustOK(t, anmRemote(t, home, "desk", hub, "", "search", "wombat")); !strings.Contains(r.stdout, "hub with a readme") {
		t.Errorf("search: %s", r.stdout)
	}
}

// TestHubWhoseDefaultIsMaster: a hub created with master gets no main
// beside it; sync says once which branch it follows, and a second
// machine and a plain git clone see the notes.
func TestHubWhoseDefaultIsMaster(t *testing.T) {
	parallel(t)
	hub := userHub(t, "master")
	a, b := t.TempDir(), t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, a, "desk", hub, "", "write", "--type", "semantic", "--title", "on master", "--body", "numbat")).stdout)
	r := mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))
	if strings.Count(r.stdout, "default branch master") != 1 {
		t.Errorf("sync does not say once which branch it follows:\n%s", r.stdout)
	}
	if got := strings.TrimSpace(testutil.Git(t, hub, "for-each-ref", "--format=%(refname:short)", "refs/heads")); got != "master" {
		t.Fatalf("hub branches %q, want master only", got)
	}
	r = mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync", "--json"))
	if !strings.Contains(r.stdout, `"branch": "master"`) {
		t.Errorf("sync --json: %s", r.stdout)
	}
	if r := mustOK(t, anmRemote(t, b, "laptop", hub, "", "show", id)); !strings.Contains(r.stdout, "numbat") {
		t.Errorf("b: %s", r.stdout)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, t.TempDir(), "clone", "-q", hub, clone)
	if _, err := os.Stat(filepath.Join(clone, "semantic", id+".md")); err != nil {
		t.Errorf("git clone of the hub lacks the note: %v", err)
	}
}
