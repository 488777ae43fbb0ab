package note

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestTreeWriteReadWalk(t *testing.T) {
	tr := Tree{Root: t.TempDir(), Scope: ScopeMachineLocal}
	n := New(TypeProcedural, "Use WAL", "body", fixedTime)
	rel, err := tr.Write(n)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "procedural/"+n.ID+".md" || n.Scope != ScopeMachineLocal {
		t.Fatalf("rel %q scope %q", rel, n.Scope)
	}
	data, _, err := tr.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil || back.Title != "Use WAL" || back.Body != "body" {
		t.Fatalf("read back %+v, %v", back, err)
	}
	// noise the walk must skip
	os.MkdirAll(filepath.Join(tr.Root, ".git", "x"), 0o755)
	os.WriteFile(filepath.Join(tr.Root, ".git", "x", "a.md"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(tr.Root, "procedural", ".tmp-anamnesis-1"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(tr.Root, "notes.txt"), []byte("x"), 0o644)
	var got []string
	if err := tr.Walk(context.Background(), func(e Entry) error { got = append(got, e.Rel); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if len(got) != 1 || got[0] != rel {
		t.Fatalf("walk found %q", got)
	}
	if err := (Tree{Root: filepath.Join(tr.Root, "missing")}).Walk(context.Background(), func(Entry) error { return nil }); err != nil {
		t.Fatalf("missing tree: %v", err)
	}
}

func TestTreeReadFileGuards(t *testing.T) {
	dir := t.TempDir()
	tr := Tree{Root: filepath.Join(dir, "memory"), Scope: ScopePortable}
	os.MkdirAll(filepath.Join(tr.Root, "semantic"), 0o755)
	secret := filepath.Join(dir, "secret.md")
	os.WriteFile(secret, []byte("---\nid: X1\ntype: semantic\ntitle: s\n---\n"), 0o644)
	os.Symlink(secret, filepath.Join(tr.Root, "semantic", "link.md"))
	_, _, err := tr.ReadFile("semantic/link.md")
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "outside the tree") {
		t.Fatalf("symlink outside: %v", err)
	}
	big := make([]byte, MaxFileSize+1)
	os.WriteFile(filepath.Join(tr.Root, "semantic", "big.md"), big, 0o644)
	if _, _, err := tr.ReadFile("semantic/big.md"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("big file: %v", err)
	}
}

func TestWriteFileAtomicLeavesNoTempOnFailure(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "sub")
	os.MkdirAll(target, 0o755)
	// Renaming a file over a non-empty directory fails after the temp file is written.
	os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o644)
	if err := WriteFileAtomic(target, []byte("data")); err == nil {
		t.Fatal("expected an error")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-anamnesis-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

// TestWalkListsOnlyNotePaths: a tree holds notes at <type>/<id>.md (and
// conflict copies beside them); whatever else a hub came with (README.md,
// .github/, docs/) or a user dropped in is not a note and not listed.
func TestWalkListsOnlyNotePaths(t *testing.T) {
	tr := Tree{Root: t.TempDir(), Scope: ScopePortable}
	notes := []string{"semantic/01M8096W5QX5ZSS42R50CMGMY1.md", "episodic/hand-written_note.md",
		"procedural/01M8096W5M2EX0FZ888W1Q1M8P.conflict-1a2b3c4d.md", "semantic/X1.conflict-0a0b0c0d.conflict-11223344.md"}
	others := []string{"README.md", "docs/setup.md", ".github/ISSUE_TEMPLATE/bug.md", "semantic/sub/x.md",
		"opinions/01M8096W5QX5ZSS42R50CMGMY1.md", "semantic/has space.md", "semantic/x.conflict-zz.md", "semantic/.hidden.md",
		"semantic/x.md.txt", "Semantic/X1.md"}
	for _, rel := range append(append([]string{}, notes...), others...) {
		p := filepath.Join(tr.Root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := tr.Walk(context.Background(), func(e Entry) error { got = append(got, e.Rel); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := append([]string{}, notes...)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("walk listed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, rel := range notes {
		if !IsNotePath(rel) {
			t.Errorf("IsNotePath(%q) = false", rel)
		}
	}
	for _, rel := range others {
		if IsNotePath(rel) {
			t.Errorf("IsNotePath(%q) = true", rel)
		}
	}
}
