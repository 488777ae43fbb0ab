package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handKept is a note written by hand (or by another tool): keys anamnesis
// does not know, comments, and known keys in no particular order or form.
const handKept = `---
# my own bookkeeping
title: kept by hand
id: 01HANDKEPT0000000000000000
type: semantic
priority: 5
enabled: true
ratio: 0.50
when: 2026-01-01
nothing: null
nested:
  a: 1   # inner
"quoted key": v
created_at: 2026-01-01T00:00:00Z
---
a heron stands in the reeds
`

// TestShowPrintsTheFileAsOnDisk: show prints the note file byte for byte,
// as the README says, and writing a note that supersedes it leaves its
// file untouched.
func TestShowPrintsTheFileAsOnDisk(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "first", "--body", "makes the store"))
	p := filepath.Join(home, "memory", "semantic", "01HANDKEPT0000000000000000.md")
	if err := os.WriteFile(p, []byte(handKept), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, anm(t, home, "", "reindex"))
	if r := mustOK(t, anm(t, home, "", "show", "01HANDKEPT0000000000000000")); r.stdout != handKept {
		t.Fatalf("show does not print the file as it is on disk:\n%s\n---- file ----\n%s", r.stdout, handKept)
	}
	r := mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "replacement", "--body", "the heron left",
		"--supersedes", "01HANDKEPT0000000000000000"))
	newID := strings.TrimSpace(r.stdout)
	if data, err := os.ReadFile(p); err != nil || string(data) != handKept {
		t.Fatalf("superseding changed the old note's file (%v):\n%s", err, data)
	}
	r = mustOK(t, anm(t, home, "", "show", newID))
	if !strings.Contains(r.stdout, "\nsupersedes:\n- 01HANDKEPT0000000000000000\n") {
		t.Errorf("new note does not name the one it supersedes:\n%s", r.stdout)
	}
	if r := mustOK(t, anm(t, home, "", "search", "heron")); strings.Contains(r.stdout, "01HANDKEPT0000000000000000") {
		t.Errorf("superseded note still found:\n%s", r.stdout)
	}
}
