package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

var ctx = context.Background()

func openTemp(t *testing.T) *Index {
	t.Helper()
	ix, fresh, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !fresh {
		t.Fatal("a new index must ask for a rebuild")
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

var clock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mk(typ, title, body string) *note.Note {
	clock = clock.Add(time.Second)
	n := note.New(typ, title, body, clock)
	n.MachineID = "test"
	return n
}

func upsert(t *testing.T, ix *Index, n *note.Note) string {
	t.Helper()
	p := note.TreeDir(n.Scope) + "/" + n.RelPath()
	if _, err := ix.Apply(ctx, []Change{{File: File{Path: p, Size: 1, MtimeNS: 1, Hash: "h"}, Note: n}}); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func TestMatchExpr(t *testing.T) {
	cases := map[string]string{
		`state-of-the-art 16:9 "x" naïve_test`: `"state" OR "of" OR "the" OR "art" OR "16" OR "9" OR "x" OR "naïve_test"`,
		`日本語 text`:                             `"日本語" OR "text"`,
		`*`:                                    ``,
		`-`:                                    ``,
		``:                                     ``,
	}
	for in, want := range cases {
		if got := MatchExpr(in); got != want {
			t.Errorf("MatchExpr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSearchRanksAndToleratesSyntax(t *testing.T) {
	ix := openTemp(t)
	wal := mk(note.TypeProcedural, "Use WAL mode for SQLite", "Set busy_timeout on every connection to avoid lock errors.")
	wal.Tags = []string{"sqlite", "db"}
	upsert(t, ix, wal)
	upsert(t, ix, mk(note.TypeSemantic, "State of the art", "A state-of-the-art screen is 16:9."))
	upsert(t, ix, mk(note.TypeSemantic, "Coffee", "The user drinks coffee black."))

	hits, err := ix.Search(ctx, "how to configure a SQLite connection to avoid lock errors on concurrent writes", Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].ID != wal.ID {
		t.Fatalf("paraphrase query: want %s first, got %v", wal.ID, ids(hits))
	}
	if hits[0].Body != wal.Body || len(hits[0].Tags) != 2 || hits[0].Score <= 0 {
		t.Errorf("hit not filled: %+v", hits[0])
	}
	for _, q := range []string{`state-of-the-art`, `16:9`, `"unbalanced`, `NEAR(a b)`, `*`, `foo AND`, `-`, `OR`, `"`, `a:b`, `^x`, `col:val`} {
		if _, err := ix.Search(ctx, q, Filter{}); err != nil {
			t.Errorf("query %q raised %v", q, err)
		}
	}
	if hits, _ := ix.Search(ctx, "16:9", Filter{}); len(hits) != 1 {
		t.Errorf("16:9 should hit the screen note, got %v", ids(hits))
	}
	if hits, err := ix.Search(ctx, "*** ---", Filter{}); err != nil || hits != nil {
		t.Errorf("no-word query: %v %v", hits, err)
	}
}

func TestSearchTieBreakIsNewestFirst(t *testing.T) {
	ix := openTemp(t)
	older := mk(note.TypeSemantic, "twin", "identical words")
	newer := mk(note.TypeSemantic, "twin", "identical words")
	upsert(t, ix, newer)
	upsert(t, ix, older)
	hits, err := ix.Search(ctx, "identical", Filter{})
	if err != nil || len(hits) != 2 || hits[0].ID != newer.ID {
		t.Fatalf("want newer first, got %v (%v)", ids(hits), err)
	}
}

func TestSupersededHiddenFromSearchShownByList(t *testing.T) {
	ix := openTemp(t)
	old := mk(note.TypeSemantic, "deploy steps", "deploy with make release")
	upsert(t, ix, old)
	repl := mk(note.TypeSemantic, "deploy steps v2", "deploy with make ship")
	repl.Supersedes = []string{old.ID}
	upsert(t, ix, repl)
	hits, _ := ix.Search(ctx, "deploy", Filter{})
	if len(hits) != 1 || hits[0].ID != repl.ID {
		t.Fatalf("search should show only the replacement, got %v", ids(hits))
	}
	all, _ := ix.List(ctx, Filter{})
	if len(all) != 2 {
		t.Fatalf("list should show both, got %v", ids(all))
	}
	if all[0].ID != repl.ID || len(all[0].Supersedes) != 1 {
		t.Errorf("list order or supersedes wrong: %+v", all[0])
	}
}

func TestFilters(t *testing.T) {
	ix := openTemp(t)
	a := mk(note.TypeProcedural, "alpha", "shared word")
	a.Project = "p1"
	b := mk(note.TypeSemantic, "beta", "shared word")
	b.Project = "p2"
	c := mk(note.TypeSemantic, "gamma", "shared word")
	c.Scope = note.ScopeMachineLocal
	for _, n := range []*note.Note{a, b, c} {
		upsert(t, ix, n)
	}
	check := func(f Filter, want int) {
		t.Helper()
		hits, err := ix.Search(ctx, "shared", f)
		if err != nil || len(hits) != want {
			t.Errorf("search %+v: %v %v", f, ids(hits), err)
		}
		list, err := ix.List(ctx, f)
		if err != nil || len(list) != want {
			t.Errorf("list %+v: %v %v", f, ids(list), err)
		}
	}
	check(Filter{}, 3)
	check(Filter{Project: "p1"}, 1)
	check(Filter{Type: note.TypeSemantic}, 2)
	check(Filter{Scope: note.ScopeMachineLocal}, 1)
	check(Filter{Scope: note.ScopePortable, Type: note.TypeSemantic}, 1)
	check(Filter{Project: "nope"}, 0)
	if hits, _ := ix.Search(ctx, "shared", Filter{Limit: 2}); len(hits) != 2 {
		t.Errorf("k=2 returned %d", len(hits))
	}
	if st, _ := ix.Stats(ctx); st.Total != 3 || st.ByType["semantic"] != 2 || st.ByScope["machine-local"] != 1 || st.ByProject["p2"] != 1 {
		t.Errorf("stats %+v", st)
	}
}

// ftsAligned checks the invariant the fast paths rely on: one FTS row per
// note, with the same rowid and id.
func ftsAligned(t *testing.T, ix *Index) {
	t.Helper()
	var notes, fts, joined int
	ix.db.QueryRow(`SELECT count(*) FROM memories`).Scan(&notes)
	ix.db.QueryRow(`SELECT count(*) FROM memories_fts`).Scan(&fts)
	ix.db.QueryRow(`SELECT count(*) FROM memories m JOIN memories_fts f ON f.rowid = m.rowid AND f.id = m.id`).Scan(&joined)
	if notes != fts || notes != joined {
		t.Fatalf("FTS out of step: %d notes, %d fts rows, %d aligned", notes, fts, joined)
	}
}

func TestUpdateAndDeleteKeepFTSAligned(t *testing.T) {
	ix := openTemp(t)
	var paths []string
	var notes []*note.Note
	for i := 0; i < 20; i++ {
		n := mk(note.TypeSemantic, fmt.Sprintf("note %d", i), fmt.Sprintf("body word%d", i))
		notes = append(notes, n)
		paths = append(paths, upsert(t, ix, n))
	}
	notes[3].Body = "rewritten zebra"
	res, err := ix.Apply(ctx, []Change{
		{File: File{Path: paths[3], Hash: "h2"}, Note: notes[3]},
		{File: File{Path: paths[5]}, Delete: true},
	})
	if err != nil || res.Updated != 1 || res.Deleted != 1 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	ftsAligned(t, ix)
	if hits, _ := ix.Search(ctx, "zebra", Filter{}); len(hits) != 1 || hits[0].ID != notes[3].ID {
		t.Errorf("updated body not searchable: %v", ids(hits))
	}
	if hits, _ := ix.Search(ctx, "word3", Filter{}); len(hits) != 0 {
		t.Errorf("old body still searchable: %v", ids(hits))
	}
	if hits, _ := ix.Search(ctx, "word5", Filter{}); len(hits) != 0 {
		t.Errorf("deleted note still searchable: %v", ids(hits))
	}
	if _, err := ix.Get(ctx, notes[5].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted note still gettable: %v", err)
	}
}

func TestBadFileReplacesItsNote(t *testing.T) {
	ix := openTemp(t)
	n := mk(note.TypeSemantic, "fine", "fine body")
	p := upsert(t, ix, n)
	res, err := ix.Apply(ctx, []Change{{File: File{Path: p, Error: "broken yaml"}}})
	if err != nil || res.Deleted != 1 || res.Skipped != 1 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	bad, _ := ix.BadFiles(ctx)
	if len(bad) != 1 || bad[0].Path != p || bad[0].Error != "broken yaml" {
		t.Fatalf("bad files: %+v", bad)
	}
	ftsAligned(t, ix)
}

func TestDuplicateIDKeepsFirstFile(t *testing.T) {
	ix := openTemp(t)
	n := mk(note.TypeSemantic, "orig", "orig body")
	p := upsert(t, ix, n)
	dup := *n
	dup.Body = "copy body"
	res, err := ix.Apply(ctx, []Change{{File: File{Path: "memory/semantic/copy.md"}, Note: &dup}})
	if err != nil || res.Skipped != 1 {
		t.Fatalf("apply dup: %+v %v", res, err)
	}
	if h, _ := ix.Get(ctx, n.ID); h.Path != p || h.Body != "orig body" {
		t.Fatalf("duplicate replaced the original: %+v", h)
	}
	res, err = ix.Apply(ctx, []Change{{File: File{Path: p}, Delete: true}})
	if err != nil || len(res.Freed) != 1 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	dups, _ := ix.DuplicatesOf(ctx, res.Freed)
	if len(dups) != 1 || dups[0] != "memory/semantic/copy.md" {
		t.Fatalf("duplicates of freed id: %v", dups)
	}
	if _, err := ix.Apply(ctx, []Change{{File: File{Path: dups[0]}, Note: &dup}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := ix.Get(ctx, n.ID); h.Path != "memory/semantic/copy.md" {
		t.Fatalf("duplicate did not take over: %+v", h)
	}
}

func TestSchemaMismatchAsksForRebuild(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	ix, _, err := Open(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix, fresh, err := Open(ctx, p, Options{})
	if err != nil || fresh {
		t.Fatalf("reopen of a current index: fresh=%v err=%v", fresh, err)
	}
	ix.SetMeta(ctx, metaSchema, "go-0")
	ix.Close()
	ix, fresh, err = Open(ctx, p, Options{})
	if err != nil || !fresh {
		t.Fatalf("old schema not rebuilt: fresh=%v err=%v", fresh, err)
	}
	var uv int
	ix.db.QueryRow(`PRAGMA user_version`).Scan(&uv)
	if uv != pythonUserVersion {
		t.Errorf("user_version %d", uv)
	}
	ix.Close()
}

func TestPythonIndexIsReplaced(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	// A Python-era index: its tables, no index_meta.
	for _, s := range schemaStatements[:9] {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Exec(`PRAGMA user_version = 3`)
	db.Close()
	ix, fresh, err := Open(ctx, p, Options{})
	if err != nil || !fresh {
		t.Fatalf("python index: fresh=%v err=%v", fresh, err)
	}
	ix.Close()
}

func TestCorruptFileIsReported(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	os.WriteFile(p, []byte("this is not a database, just some text that is long enough to have a header........"), 0o644)
	_, _, err := Open(ctx, p, Options{})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
}

// Count with Live subtracts the superseded notes the filter selects: a
// note superseded twice counts once, one superseded from another project
// does not count here, and a supersedes naming no note changes nothing.
func TestCountLiveMatchesList(t *testing.T) {
	ix := openTemp(t)
	var all []*note.Note
	add := func(project, typ string, supersedes ...string) *note.Note {
		n := mk(typ, "note "+project, "some words")
		n.Project, n.Supersedes = project, supersedes
		upsert(t, ix, n)
		all = append(all, n)
		return n
	}
	a := add("p1", note.TypeSemantic)
	b := add("p1", note.TypeProcedural)
	add("p1", note.TypeEpisodic)
	c := add("p2", note.TypeSemantic)
	add("p1", note.TypeSemantic, a.ID)
	add("p2", note.TypeSemantic, a.ID, c.ID) // a superseded twice
	add("p1", note.TypeSemantic, b.ID, "01NOSUCHNOTE0000000000000")
	for _, f := range []Filter{
		{Live: true}, {Project: "p1", Live: true}, {Project: "p2", Live: true},
		{Project: "p1", Types: []string{note.TypeProcedural, note.TypeSemantic}, Live: true},
		{Project: "p1", Type: note.TypeEpisodic, Live: true}, {Project: "p3", Live: true}, {Project: "p1"},
	} {
		got, err := ix.Count(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := ix.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got != len(hits) {
			t.Errorf("Count(%+v) = %d, List returns %d", f, got, len(hits))
		}
	}
}
