package index

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tearRootPages overwrites the root page of every table and index but
// index_meta with garbage, as a torn write would; the file still opens.
func tearRootPages(t *testing.T, p string) {
	t.Helper()
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int64
	rows, err := db.Query(`SELECT rootpage FROM sqlite_master WHERE rootpage > 1 AND tbl_name <> 'index_meta'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pg int64
		rows.Scan(&pg)
		pages = append(pages, pg)
	}
	rows.Close()
	db.Close()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, pg := range pages {
		f.WriteAt(bytes.Repeat([]byte("torn"), 1024), (pg-1)*4096)
	}
}

func indexed(t *testing.T, p string, notes ...string) {
	t.Helper()
	ix, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var changes []Change
	for _, title := range notes {
		changes = append(changes, changeFor(mk("semantic", title, "the heron waits")))
	}
	if _, err := ix.Rebuild(ctx, changes); err != nil {
		t.Fatal(err)
	}
}

// Damage met long after a clean open is classified at each query, found
// by quick_check, and repaired in place by Replace: a connection opened
// on the damaged file reads the new content without reopening.
func TestTornPagesAreFoundAndReplaced(t *testing.T) {
	dir := t.TempDir()
	p, fresh := filepath.Join(dir, "index.db"), filepath.Join(dir, "fresh.db")
	indexed(t, p, "one", "two", "three")
	tearRootPages(t, p)
	indexed(t, fresh, "rebuilt")

	ix, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatalf("the header and index_meta are intact, so the file opens: %v", err)
	}
	defer ix.Close()
	for name, q := range map[string]func() error{
		"stats": func() error { _, err := ix.Stats(ctx); return err },
		"list":  func() error { _, err := ix.List(ctx, Filter{}); return err },
		"files": func() error { _, err := ix.Files(ctx); return err },
		"apply": func() error { _, err := ix.Apply(ctx, []Change{changeFor(mk("semantic", "new", "x"))}); return err },
	} {
		if err := q(); !IsCorrupt(err) || strings.Contains(err.Error(), "(11)") {
			t.Errorf("%s over torn pages: %v", name, err)
		}
	}
	if problems, err := ix.IntegrityCheck(ctx); err == nil && len(problems) == 0 {
		t.Error("quick_check found nothing")
	}

	if err := Replace(ctx, p, fresh, 0); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.List(ctx, Filter{})
	if err != nil || len(hits) != 1 || hits[0].Title != "rebuilt" {
		t.Fatalf("the open connection after Replace: %v %v", hits, err)
	}
	if problems, err := ix.IntegrityCheck(ctx); err != nil || len(problems) != 0 {
		t.Errorf("quick_check after Replace: %v %v", problems, err)
	}

	// A file that is not a database cannot be replaced page by page.
	os.WriteFile(p, bytes.Repeat([]byte("garbage "), 2000), 0o644)
	os.Remove(p + "-wal")
	os.Remove(p + "-shm")
	if err := Replace(ctx, p, fresh, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Replace over garbage: %v", err)
	}
}
