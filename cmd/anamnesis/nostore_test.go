package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mistyped --home must not become a new, empty store: every command but
// init (and a first write or sync into an existing, empty directory)
// says there is no store, and nothing is created.
func TestNoStoreByAccident(t *testing.T) {
	parallel(t)
	typo := filepath.Join(t.TempDir(), "typo")
	notAStore := t.TempDir()
	os.WriteFile(filepath.Join(notAStore, "README"), []byte("my project\n"), 0o644)
	for _, home := range []string{typo, notAStore} {
		for _, args := range [][]string{
			{"status"}, {"list"}, {"search", "x"}, {"show", "01M8096W5Y5VJW7T5A4YN4196Z"}, {"doctor"},
			{"reindex"}, {"reindex", "--full"}, {"hooks", "install"}, {"mcp"}, {"eval", "--self"}, {"sync"},
			{"write", "--type", "semantic", "--title", "t", "--body", "b"},
		} {
			r := anm(t, home, "", args...)
			want := "anamnesis: no store at " + home + "; run `anamnesis init`\n"
			if r.code != 1 || r.stderr != want || r.stdout != "" {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", filepath.Base(home), args, r.code, r.stdout, r.stderr, want)
			}
		}
	}
	if _, err := os.Stat(typo); err == nil {
		t.Errorf("%s was created", typo)
	}
	if entries, _ := os.ReadDir(notAStore); len(entries) != 1 {
		t.Errorf("%s now holds %d entries", notAStore, len(entries))
	}

	// A Claude Code hook on a machine without a store fails open and
	// writes nothing, even into an existing, empty directory.
	empty := t.TempDir()
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"s1","message":{"role":"user","content":"remember the heron deploy window"}}`+"\n"), 0o644)
	for _, hook := range []string{"session-start", "prompt", "session-end", "pre-compact"} {
		r := anm(t, empty, `{"session_id":"s1","transcript_path":"`+tr+`","cwd":"/tmp","prompt":"heron deploy"}`, "hook", hook)
		assertFailOpen(t, hook, r)
		if !strings.Contains(r.stderr, "no store at "+empty) {
			t.Errorf("%s: stderr %q", hook, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("hooks created %d entries in %s", len(entries), empty)
	}

	// A first write into that empty directory sets up the store.
	mustOK(t, anm(t, empty, "", "write", "--type", "semantic", "--title", "t", "--body", "b"))
	mustOK(t, anm(t, empty, "", "status"))
}
