package anamnesis

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/note"
)

// linkDir replaces dir (made if missing) by a symlink to a new directory
// outside the home, and returns that directory.
func linkDir(t *testing.T, dir string) string {
	t.Helper()
	outside := t.TempDir()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	return outside
}

// entries lists what dir holds (names), failing on a read error.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// assertLinkRefusal checks that err is the one-line refusal naming link
// and the remedy.
func assertLinkRefusal(t *testing.T, what string, err error, link string) {
	t.Helper()
	if !errors.Is(err, platform.ErrLink) {
		t.Fatalf("%s: got %v, want a refusal of the link %s", what, err, link)
	}
	msg := err.Error()
	if !strings.Contains(msg, link) || !strings.Contains(msg, "anamnesis doctor --fix") || strings.Contains(msg, "\n") {
		t.Errorf("%s: error %q should name %s and `anamnesis doctor --fix` on one line", what, msg, link)
	}
}

// TestWriteRefusesALinkedTypeDirectory: memory/episodic (and local/'s)
// replaced by a link to a directory outside: a write of that type fails
// and nothing appears where the link points; a type directory that does
// not exist yet is still created; the home and memory/ themselves may be
// links.
func TestWriteRefusesALinkedTypeDirectory(t *testing.T) {
	base := t.TempDir()
	realHome := filepath.Join(base, "disk", "anamnesis")
	if err := os.MkdirAll(realHome, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	if err := os.Symlink(realHome, home); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	s, _ := openHome(t, home)
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "through a linked home", Body: "fine"}); err != nil {
		t.Fatalf("write in a home that is a link: %v", err)
	}
	for _, scope := range []string{note.ScopePortable, note.ScopeMachineLocal} {
		typeDir := filepath.Join(home, note.TreeDir(scope), "episodic")
		outside := linkDir(t, typeDir)
		_, _, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "session", Body: "captured", Scope: scope})
		assertLinkRefusal(t, "write "+scope, err, typeDir)
		if got := entries(t, outside); len(got) != 0 {
			t.Errorf("write %s left %v where the link points", scope, got)
		}
	}
	if _, path, err := s.Write(ctx, WriteRequest{Type: "procedural", Title: "a first procedural note", Body: "b"}); err != nil || !strings.HasPrefix(path, "memory/procedural/") {
		t.Errorf("write of a type whose directory does not exist yet: %s %v", path, err)
	}
}

// TestLinkedNoteFileIsNeitherIndexedNorOverwritten: a note file that is
// a link to a file outside (note-shaped, so reading it would index it)
// is skipped by reconcile and rebuild and named as a bad file; update of
// a note whose file was replaced by such a link is refused and the
// outside file is untouched.
func TestLinkedNoteFileIsNeitherIndexedNorOverwritten(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, path, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "deploy steps", Body: "run make deploy"})
	if err != nil {
		t.Fatal(err)
	}
	secretNote := note.New("semantic", "private key", "zanzibarsecret", time.Now())
	secret := filepath.Join(t.TempDir(), "id_rsa")
	secretBytes := note.Marshal(secretNote)
	if err := os.WriteFile(secret, secretBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(home, "memory", "semantic", secretNote.ID+".md")
	if err := os.Symlink(secret, planted); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	// The file of the note written above becomes a link to the secret.
	notePath := filepath.Join(home, filepath.FromSlash(path))
	if err := os.Remove(notePath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, notePath); err != nil {
		t.Fatal(err)
	}
	n.Body = "overwritten"
	_, err = s.Update(ctx, n)
	assertLinkRefusal(t, "update", err, notePath)
	if got, _ := os.ReadFile(secret); string(got) != string(secretBytes) {
		t.Errorf("update changed the file the link points to: %q", got)
	}
	for _, op := range []func() error{
		func() error { _, err := s.Reconcile(ctx); return err },
		func() error { _, err := s.Rebuild(ctx); return err },
	} {
		if err := op(); err != nil {
			t.Fatal(err)
		}
		hits, err := s.Search(ctx, "zanzibarsecret", index.Filter{})
		if err != nil || len(hits) != 0 {
			t.Errorf("search finds the linked file's content: %v %v", hitIDs(hits), err)
		}
		if _, _, err := s.Get(ctx, secretNote.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("the linked file is indexed as a note: %v", err)
		}
	}
	if got, _ := os.ReadFile(secret); string(got) != string(secretBytes) {
		t.Errorf("the file the link points to changed: %q", got)
	}
}

// TestResolveRefusesALinkedTypeDirectory: a conflict copy and its note
// sit in memory/semantic, which is then replaced by a link to a copy of
// it outside: resolve refuses, and neither writes the kept version
// through the link nor deletes the copy where the link points.
func TestResolveRefusesALinkedTypeDirectory(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Canary duration", Body: "30 minutes"})
	if err != nil {
		t.Fatal(err)
	}
	cp := note.New("semantic", "Canary duration", "45 minutes", time.Now())
	cp.MachineID = "laptop"
	cp.SetExtra("conflict_of", n.ID)
	dir := filepath.Join(home, "memory", "semantic")
	if err := os.WriteFile(filepath.Join(dir, n.ID+".conflict-0123abcd.md"), note.Marshal(cp), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Conflicts(ctx); err != nil || len(c) != 1 {
		t.Fatalf("conflicts: %v %v", c, err)
	}
	saved := t.TempDir()
	copyTree(t, dir, saved)
	outside := linkDir(t, dir)
	copyTree(t, saved, outside)
	before := map[string]string{}
	for _, name := range entries(t, outside) {
		b, _ := os.ReadFile(filepath.Join(outside, name))
		before[name] = string(b)
	}
	_, err = s.Resolve(ctx, n.ID, Resolution{Keep: cp.ID})
	if !errors.Is(err, platform.ErrLink) && !strings.Contains(fmtErr(err), "symlink") {
		t.Fatalf("resolve through a linked directory: %v", err)
	}
	after := entries(t, outside)
	if !slices.Equal(after, mapsKeys(before)) {
		t.Errorf("files where the link points: %v, were %v", after, mapsKeys(before))
	}
	for name, b := range before {
		if got, _ := os.ReadFile(filepath.Join(outside, name)); string(got) != b {
			t.Errorf("resolve rewrote %s where the link points", name)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func mapsKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
