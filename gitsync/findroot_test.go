package gitsync

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestFindRoot: the work tree root git itself would name (`git rev-parse
// --show-toplevel`) from a subdirectory, a linked worktree (a .git file),
// a submodule (a .git file into the parent's .git/modules) and a
// repository nested in another's work tree (the inner one wins); and the
// origin of a linked worktree, which lives in the main repository's
// config.
func TestFindRoot(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(base, "main")
	testutil.Git(t, base, "init", "-q", "-b", "main", main)
	testutil.Git(t, main, "remote", "add", "origin", "git@example.test:me/main.git")
	testutil.Git(t, main, "commit", "-q", "--allow-empty", "-m", "one")
	sub := filepath.Join(main, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	wt := filepath.Join(base, "wt")
	testutil.Git(t, main, "worktree", "add", "-q", wt)

	lib := filepath.Join(base, "lib")
	testutil.Git(t, base, "init", "-q", "-b", "main", lib)
	testutil.Git(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	testutil.Git(t, main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")

	nested := filepath.Join(main, "nested")
	testutil.Git(t, main, "init", "-q", "-b", "main", nested)

	outside := filepath.Join(base, "plain", "dir")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dir, root, origin string
	}{
		{main, main, "git@example.test:me/main.git"},
		{sub, main, "git@example.test:me/main.git"},
		{wt, wt, "git@example.test:me/main.git"},
		{filepath.Join(main, "vendor", "lib"), filepath.Join(main, "vendor", "lib"), lib},
		{nested, nested, ""},
	} {
		if _, err := os.Stat(c.dir); err != nil {
			t.Fatal(err)
		}
		want := testutil.Git(t, c.dir, "rev-parse", "--show-toplevel")
		if filepath.Clean(want[:len(want)-1]) != c.root {
			t.Fatalf("git says %s is in %q; the test expects %s", c.dir, want, c.root)
		}
		root, origin, ok := FindRoot(c.dir)
		if !ok || root != c.root || origin != c.origin {
			t.Errorf("FindRoot(%s) = %q, %q, %v; want %q, %q", c.dir, root, origin, ok, c.root, c.origin)
		}
		if top, ok := Toplevel(c.dir); !ok || top != c.root {
			t.Errorf("Toplevel(%s) = %q, %v; want %q", c.dir, top, ok, c.root)
		}
	}
	if root, _, ok := FindRoot(outside); ok {
		t.Errorf("FindRoot(%s) outside any repository = %q", outside, root)
	}
	if top, ok := Toplevel(outside); ok {
		t.Errorf("Toplevel(%s) outside any repository = %q", outside, top)
	}
}
