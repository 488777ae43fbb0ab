package note

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// TestTreeRefusesLinkedTypeDirectory: with episodic/ a link to a
// directory outside the tree, a write, a read and a removal of a note
// there are all refused (the read as a malformed file, so the index
// records and names it), nothing is written or removed where the link
// points, and the walk does not list what is there. The tree's root may
// be a link.
func TestTreeRefusesLinkedTypeDirectory(t *testing.T) {
	base := t.TempDir()
	realRoot := filepath.Join(base, "disk", "memory")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{realRoot, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "memory")
	if err := os.Symlink(realRoot, root); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	tr := Tree{Root: root, Scope: ScopePortable}
	if _, err := tr.Write(New(TypeSemantic, "fine", "b", fixedTime)); err != nil {
		t.Fatalf("write in a tree whose root is a link: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(root, TypeEpisodic)); err != nil {
		t.Fatal(err)
	}
	there := New(TypeEpisodic, "already there", "zanzibar", fixedTime)
	if err := os.WriteFile(filepath.Join(outside, there.ID+".md"), Marshal(there), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err := tr.Write(New(TypeEpisodic, "session", "b", fixedTime))
	if !errors.Is(err, platform.ErrLink) || !strings.Contains(err.Error(), filepath.Join(root, TypeEpisodic)) {
		t.Errorf("write through a linked type directory: %v", err)
	}
	rel := TypeEpisodic + "/" + there.ID + ".md"
	if err := tr.WriteFile(rel, []byte("x")); !errors.Is(err, platform.ErrLink) {
		t.Errorf("WriteFile through a linked type directory: %v", err)
	}
	if data, _, err := tr.ReadFile(rel); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "symlink") || data != nil {
		t.Errorf("read through a linked type directory: %q %v", data, err)
	}
	if err := tr.Remove(rel); !errors.Is(err, platform.ErrLink) {
		t.Errorf("remove through a linked type directory: %v", err)
	}
	es, _ := os.ReadDir(outside)
	if len(es) != 1 || es[0].Name() != there.ID+".md" {
		t.Errorf("where the link points: %v", es)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, there.ID+".md")); string(b) != string(Marshal(there)) {
		t.Errorf("the file where the link points changed: %q", b)
	}
	var walked []string
	tr.Walk(context.Background(), func(e Entry) error { walked = append(walked, e.Rel); return nil })
	for _, w := range walked {
		if strings.HasPrefix(w, TypeEpisodic+"/") {
			t.Errorf("walk lists %s behind the link", w)
		}
	}
}

// TestWriteFileAtomicInRefusesALinkedFile: a store file that is itself a
// link is refused, and what it points to is unchanged; the plain
// WriteFileAtomic (files outside a store) still replaces it.
func TestWriteFileAtomicInRefusesALinkedFile(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(target, []byte("mine"), 0o644)
	p := filepath.Join(root, "state", "x.json")
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.Symlink(target, p); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	for name, write := range map[string]func(string, string, []byte) error{
		"WriteFileAtomicIn": WriteFileAtomicIn, "WritePrivateFileAtomicIn": WritePrivateFileAtomicIn, "ReplaceFileIn": ReplaceFileIn,
	} {
		if err := write(root, p, []byte("theirs")); !errors.Is(err, platform.ErrLink) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Errorf("target changed: %q", b)
	}
}
