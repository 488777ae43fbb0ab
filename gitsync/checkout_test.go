package gitsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestLargeCheckoutStopsAtTheFirstFailedFile: when one file of a large
// checkout cannot be put in place, the sync says which and stops there,
// main does not move, and the next sync completes the checkout.
func TestLargeCheckoutStopsAtTheFirstFailedFile(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	for i := 0; i < 300; i++ {
		a.write(mkNote(a, fmt.Sprintf("note %d", i), "body"))
	}
	a.sync()
	var calls atomic.Int32
	var blocked string
	var once sync.Once
	b.repo.checkoutTemp = func(tmp string) {
		if calls.Add(1) == 20 {
			once.Do(func() {
				// A directory with something in it where the file goes:
				// the rename fails.
				blocked = strings.TrimSuffix(tmp, ".anamnesis-tmp")
				os.MkdirAll(filepath.Join(blocked, "x"), 0o755)
			})
		}
	}
	_, err := b.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(blocked)) {
		t.Fatalf("sync: %v, want an error naming %s", err, blocked)
	}
	if n := calls.Load(); n != 20 {
		t.Errorf("%d files were written, want the checkout to stop at the 20th", n)
	}
	if head, _ := b.repo.Head(); !head.IsZero() {
		t.Errorf("main moved to %s though the checkout failed", head)
	}
	b.repo.checkoutTemp = nil
	os.RemoveAll(blocked)
	b.sync()
	sameTrees(t, a, b)
	b.fsck()
}

// TestPullEditsTheIndexAroundItsPaths: a pull (new notes, an edit, a
// deletion) records its checkout in the git index without decoding the
// whole index, and so does the sync after a first sync; the index then
// lists exactly HEAD's files (git ls-files against ls-tree), git status
// is clean, and a write's commit still starts from HEAD's tree (the
// cache tree moved with the checkout).
func TestPullEditsTheIndexAroundItsPaths(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	var paths []string
	for i := 0; i < 30; i++ {
		paths = append(paths, a.write(mkNote(a, fmt.Sprintf("note %d", i), "body")))
	}
	a.sync()
	b.sync()
	a.advance()
	for i := 30; i < 40; i++ {
		a.write(mkNote(a, fmt.Sprintf("note %d", i), "body"))
	}
	if err := os.WriteFile(filepath.Join(a.repo.Dir(), paths[3]), []byte("---\ntitle: edited\n---\nnew body\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(a.repo.Dir(), paths[5])); err != nil {
		t.Fatal(err)
	}
	a.sync()
	b.advance()
	b.repo.indexDecodes.Store(0)
	rep := b.sync()
	if !rep.FastForward {
		t.Fatalf("not a fast-forward: %+v", rep)
	}
	if n := b.repo.indexDecodes.Load(); n != 0 {
		t.Errorf("the pull decoded the whole git index %d times", n)
	}
	sameTrees(t, a, b)
	files := testutil.Git(t, b.repo.Dir(), "ls-files", "-s")
	tree := testutil.Git(t, b.repo.Dir(), "ls-tree", "-r", "--format=%(objectmode) %(objectname) 0\t%(path)", "HEAD")
	if files != tree {
		t.Errorf("the index is not HEAD's tree:\n%s\nHEAD:\n%s", files, tree)
	}
	if out := testutil.Git(t, b.repo.Dir(), "status", "--porcelain"); strings.TrimSpace(out) != "" {
		t.Errorf("git status after the pull:\n%s", out)
	}
	rel := b.write(mkNote(b, "after", "the pull"))
	b.repo.indexDecodes.Store(0)
	if _, committed, err := b.repo.CommitPaths(ctx, []string{rel}); err != nil || !committed {
		t.Fatalf("commit after the pull: %v, committed %v", err, committed)
	}
	if n := b.repo.indexDecodes.Load(); n != 0 {
		t.Errorf("the commit after the pull decoded the whole index %d times (its cache tree was not HEAD's)", n)
	}
	b.fsck()
}
