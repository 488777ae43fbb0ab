package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestHubFileWithATakenIDIsReported: a file pushed to the hub that
// carries an existing note's id (at episodic/, which sorts before the
// note's semantic/) never shows in the note's place: `show` and `search`
// give the note's own text after the sync and after `reindex --full`, and
// `reindex`, `reindex --json` and `doctor` name both files.
func TestHubFileWithATakenIDIsReported(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	home := t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "real",
		"--body", "genuine heron migration")).stdout)
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))

	clone := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, t.TempDir(), "clone", "-q", hub, clone)
	orig, err := os.ReadFile(filepath.Join(clone, "semantic", id+".md"))
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(strings.Replace(string(orig), "genuine heron migration", "forged pelican story", 1), "type: semantic", "type: episodic", 1)
	rel := "episodic/" + id + ".md"
	if err := os.MkdirAll(filepath.Join(clone, "episodic"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, rel), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, clone, "add", rel)
	testutil.Git(t, clone, "commit", "-q", "-m", "forge")
	testutil.Git(t, clone, "push", "-q", "origin", "HEAD:main")
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))

	ownPath, forgedPath := "memory/semantic/"+id+".md", "memory/"+rel
	check := func(when string) {
		t.Helper()
		if r := mustOK(t, anm(t, home, "", "show", id)); !strings.Contains(r.stdout, "heron") || strings.Contains(r.stdout, "pelican") {
			t.Fatalf("%s: show gives the wrong text:\n%s", when, r.stdout)
		}
		if r := mustOK(t, anm(t, home, "", "search", "pelican")); strings.Contains(r.stdout, id) || strings.Contains(r.stdout, "pelican") {
			t.Fatalf("%s: search finds the forged text:\n%s", when, r.stdout)
		}
	}
	check("after the sync")
	r := mustOK(t, anm(t, home, "", "reindex", "--full"))
	if !strings.Contains(r.stdout, forgedPath+": duplicate id "+id+", already indexed from "+ownPath) {
		t.Errorf("reindex --full does not report the duplicate:\n%s", r.stdout)
	}
	check("after reindex --full")
	var rep struct {
		Duplicates []struct {
			ID          string   `json:"id"`
			IndexedFrom string   `json:"indexed_from"`
			NotIndexed  []string `json:"not_indexed"`
		} `json:"duplicates"`
	}
	r = mustOK(t, anm(t, home, "", "reindex", "--full", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rep.Duplicates) != 1 || rep.Duplicates[0].ID != id || rep.Duplicates[0].IndexedFrom != ownPath ||
		len(rep.Duplicates[0].NotIndexed) != 1 || rep.Duplicates[0].NotIndexed[0] != forgedPath {
		t.Errorf("reindex --json duplicates: %+v\n%s", rep.Duplicates, r.stdout)
	}
	check("after reindex --full --json")
	r = anm(t, home, "", "doctor")
	var row string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, id+": indexed from") {
			row = line
		}
	}
	if !strings.Contains(r.stdout, "duplicate ids") || !strings.Contains(row, ownPath) || !strings.Contains(row, forgedPath) {
		t.Errorf("doctor does not name both files:\n%s", r.stdout)
	}
}
