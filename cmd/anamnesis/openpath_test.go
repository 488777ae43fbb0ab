package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// Opening a store never reconciles it with the note files; the callers
// that want files changed behind the index's back picked up ask for it.
// A Claude Code hook does not (a reconcile stats every file, more than a
// prompt may spend): a note added by hand reaches it once git's hook (or
// `reindex`) has reconciled.
func TestOnlyCallersThatAskReconcile(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron migration notes", "--body", "the heron flies south in autumn"))
	byHand := note.New(note.TypeSemantic, "Kestrel hovering", "the kestrel hovers over the verge", time.Now())
	if err := os.WriteFile(filepath.Join(home, "memory", "semantic", byHand.ID+".md"), note.Marshal(byHand), 0o644); err != nil {
		t.Fatal(err)
	}
	const prompt = `{"session_id":"s1","cwd":"/tmp","prompt":"why does the kestrel hover"}`

	if r := mustOK(t, anm(t, home, "", "search", "--json", "kestrel")); strings.Contains(r.stdout, byHand.ID) {
		t.Errorf("search found a note added by hand before anything reconciled: opening reconciled\n%s", r.stdout)
	}
	if r := mustOK(t, anm(t, home, prompt, "hook", "prompt")); strings.Contains(r.stdout, "Kestrel hovering") {
		t.Errorf("the prompt hook reconciled:\n%s", r.stdout)
	}

	mustOK(t, anm(t, home, "", "hook", "post-commit")) // git's hook asks for a reconcile
	if r := mustOK(t, anm(t, home, "", "search", "--json", "kestrel")); !strings.Contains(r.stdout, byHand.ID) {
		t.Errorf("search after git's hook reconciled: %s", r.stdout)
	}
	if r := mustOK(t, anm(t, home, prompt, "hook", "prompt")); !strings.Contains(r.stdout, "Kestrel hovering") {
		t.Errorf("the prompt hook after git's hook reconciled: stdout %q stderr %q", r.stdout, r.stderr)
	}
}
