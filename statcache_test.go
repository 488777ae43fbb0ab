package anamnesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReconcileWithStatCache: a reconcile that finds nothing to do saves
// the stat cache, and the next one answers from it; every kind of change
// is still seen through it (an edit in place of the same size, a new
// file, a deleted one), and a change the index applied itself (a write)
// makes it stale rather than wrong.
func TestReconcileWithStatCache(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	var paths []string
	for _, title := range []string{"Alpha fact", "Beta fact", "Gamma fact"} {
		_, p, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: title, Body: "body " + title})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(s.Home(), p))
	}
	cached := func() bool {
		t.Helper()
		c, err := s.idx().LoadStatCache(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c != nil
	}
	reconcile := func() ReconcileReport {
		t.Helper()
		rep, err := s.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if cached() {
		t.Fatal("a stat cache before any reconcile")
	}
	if rep := reconcile(); rep.Added+rep.Updated+rep.Deleted != 0 || !cached() {
		t.Fatalf("a reconcile with nothing to do: %+v, cache saved: %v", rep, cached())
	}
	// Same size, new mtime: an editor writing in place.
	data, _ := os.ReadFile(paths[0])
	if err := os.WriteFile(paths[0], []byte(strings.Replace(string(data), "body Alpha", "body alpHA", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(paths[0], later, later); err != nil {
		t.Fatal(err)
	}
	if rep := reconcile(); rep.Updated != 1 {
		t.Fatalf("an edit of the same size through the cache: %+v", rep)
	}
	if hits, _ := s.Search(ctx, "alpHA", Filter{}); len(hits) != 1 {
		t.Fatalf("the edit is not indexed: %v", hitIDs(hits))
	}
	reconcile() // saves the cache again
	if !cached() {
		t.Fatal("no cache after a reconcile with nothing to do")
	}
	if err := os.Remove(paths[1]); err != nil {
		t.Fatal(err)
	}
	if rep := reconcile(); rep.Deleted != 1 {
		t.Fatalf("a deleted file through the cache: %+v", rep)
	}
	reconcile()
	copyPath := filepath.Join(filepath.Dir(paths[2]), "01ZZZZZZZZZZZZZZZZZZZZZZZZ.md")
	data, _ = os.ReadFile(paths[2])
	if err := os.WriteFile(copyPath, []byte(strings.Replace(string(data), filepath.Base(strings.TrimSuffix(paths[2], ".md")), "01ZZZZZZZZZZZZZZZZZZZZZZZZ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := reconcile(); rep.Added != 1 {
		t.Fatalf("a new file through the cache: %+v", rep)
	}
	reconcile()
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Delta fact", Body: "body"}); err != nil {
		t.Fatal(err)
	}
	if cached() {
		t.Fatal("the stat cache outlived a write to the index")
	}
	// A rebuild saves the cache of what it read, in its transaction.
	if _, err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if !cached() {
		t.Fatal("no stat cache after a rebuild")
	}
	if rep := reconcile(); rep.Added+rep.Updated+rep.Deleted != 0 || rep.Indexed != 4 {
		t.Fatalf("a reconcile after a rebuild: %+v", rep)
	}
	if err := os.Chtimes(paths[0], later.Add(time.Second), later.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(paths[0]); err != nil {
		t.Fatal(err)
	}
	if rep := reconcile(); rep.Deleted != 1 || rep.Indexed != 3 {
		t.Fatalf("a file deleted after a rebuild: %+v", rep)
	}
}
