package anamnesis

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
	_ "modernc.org/sqlite"
)

var ctx = context.Background()

const seedQuery = "how to configure a SQLite connection to avoid lock errors on concurrent writes"

type notices struct {
	mu   sync.Mutex
	list []string
}

func (n *notices) add(s string) { n.mu.Lock(); n.list = append(n.list, s); n.mu.Unlock() }

func openHome(t *testing.T, home string) (*Store, *notices) {
	t.Helper()
	ns := &notices{}
	s, err := Open(ctx, home, Options{MachineID: "testbox", Notice: ns.add, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ns
}

func hitIDs(h []index.Hit) []string {
	out := []string{}
	for _, x := range h {
		out = append(out, x.ID)
	}
	return out
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPythonStoreIsIndexedOnOpen(t *testing.T) {
	home := t.TempDir()
	copyTree(t, filepath.Join("testdata", "python-store"), home)
	s, ns := openHome(t, home)
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notes.Total != 10 || st.Notes.ByScope[note.ScopeMachineLocal] != 1 || len(st.Index.Skipped) != 0 {
		t.Fatalf("status %+v", st)
	}
	if len(ns.list) != 1 || !strings.Contains(ns.list[0], "rebuilt") {
		t.Errorf("want one rebuild notice, got %q", ns.list)
	}
	const wal = "01M8096W5M2EX0FZ888W1Q1M8P" // "Use WAL mode for SQLite", superseded
	hits, err := s.Search(ctx, seedQuery, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hitIDs(hits), wal) {
		t.Errorf("superseded note returned by search: %v", hitIDs(hits))
	}
	list, _ := s.List(ctx, index.Filter{})
	if !slices.Contains(hitIDs(list), wal) {
		t.Errorf("superseded note missing from list")
	}
	// Unicode search through the fixture's i18n note.
	if hits, _ := s.Search(ctx, "München", index.Filter{}); len(hits) != 1 {
		t.Errorf("unicode query: %v", hitIDs(hits))
	}
	n, path, err := s.Get(ctx, "01M8096W5Y5VJW7T5A4YN4196Z")
	if err != nil || n.Scope != note.ScopeMachineLocal || path != "local/semantic/01M8096W5Y5VJW7T5A4YN4196Z.md" {
		t.Errorf("get machine-local: %+v %s %v", n, path, err)
	}
}

func TestWriteSearchPartialOverlap(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	n, path, err := s.Write(ctx, WriteRequest{Type: "procedural", Title: "Use WAL mode for SQLite", Project: "demo",
		Tags: []string{"sqlite", " db", "sqlite", ""}, Body: "Set busy_timeout on every connection to avoid lock errors."})
	if err != nil {
		t.Fatal(err)
	}
	if path != "memory/procedural/"+n.ID+".md" || n.MachineID != "testbox" || strings.Join(n.Tags, ",") != "sqlite,db" {
		t.Fatalf("written %+v at %s", n, path)
	}
	s.Write(ctx, WriteRequest{Type: "semantic", Title: "Coffee", Body: "The user takes coffee black."})
	hits, err := s.Search(ctx, seedQuery, index.Filter{})
	if err != nil || len(hits) == 0 || hits[0].ID != n.ID {
		t.Fatalf("paraphrase query: %v %v", hitIDs(hits), err)
	}
	got, _, err := s.Get(ctx, n.ID)
	if err != nil || got.Body != n.Body || got.Title != n.Title {
		t.Fatalf("get: %+v %v", got, err)
	}
}

func TestScopeTreesAndFilters(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	p, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "portable fact", Body: "shared gpu"})
	if err != nil {
		t.Fatal(err)
	}
	l, lpath, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "local fact", Body: "shared gpu", Scope: note.ScopeMachineLocal})
	if err != nil {
		t.Fatal(err)
	}
	if lpath != "local/semantic/"+l.ID+".md" {
		t.Fatalf("machine-local note at %s", lpath)
	}
	if _, err := os.Stat(filepath.Join(home, "memory", "semantic", l.ID+".md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("machine-local note leaked into memory/")
	}
	both, _ := s.Search(ctx, "gpu", index.Filter{})
	if len(both) != 2 {
		t.Errorf("default scope should span both trees: %v", hitIDs(both))
	}
	only, _ := s.Search(ctx, "gpu", index.Filter{Scope: note.ScopeMachineLocal})
	if len(only) != 1 || only[0].ID != l.ID {
		t.Errorf("scope filter: %v", hitIDs(only))
	}
	list, _ := s.List(ctx, index.Filter{Scope: note.ScopePortable})
	if len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("list scope filter: %v", hitIDs(list))
	}
	// A note whose frontmatter claims portable but sits in local/ is local.
	moved := note.New("semantic", "claims portable", "tree decides", time.Now())
	os.WriteFile(filepath.Join(home, "local", "semantic", moved.ID+".md"), note.Marshal(moved), 0o644)
	s.Reconcile(ctx)
	got, _, err := s.Get(ctx, moved.ID)
	if err != nil || got.Scope != note.ScopeMachineLocal {
		t.Errorf("tree did not decide scope: %+v %v", got, err)
	}
}

func TestWriteValidationLeavesNothing(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	bad := []WriteRequest{
		{Type: "../../escape", Title: "t"},
		{Type: "opinion", Title: "t"},
		{Type: "semantic", Title: "  "},
		{Type: "semantic", Title: "t", Scope: "everywhere"},
		{Type: "semantic", Title: "t", Supersedes: []string{"../x"}},
		{Type: "semantic", Title: strings.Repeat("t", 1<<20)},
	}
	for _, r := range bad {
		if _, _, err := s.Write(ctx, r); err == nil {
			t.Errorf("accepted %+v", r)
		}
	}
	var files []string
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Fatalf("failed writes left files: %v", files)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(home), "escape")); err == nil {
		t.Fatal("type escaped the store")
	}
	if _, _, err := s.Get(ctx, "../../etc/passwd"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("path-like id: %v", err)
	}
	if _, _, err := s.Get(ctx, "01UNKNOWNID"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

// homeWithOneNote is a closed store holding one note that seedQuery finds.
func homeWithOneNote(t *testing.T) (string, *note.Note) {
	t.Helper()
	home := t.TempDir()
	s, _ := openHome(t, home)
	defer s.Close()
	n, _, err := s.Write(ctx, WriteRequest{Type: "procedural", Title: "Use WAL mode for SQLite", Body: "busy_timeout avoids lock errors"})
	if err != nil {
		t.Fatal(err)
	}
	return home, n
}

func TestMissingOrCorruptIndexIsRebuilt(t *testing.T) {
	home, n := homeWithOneNote(t)
	for _, damage := range []func(p string){
		func(p string) { os.Remove(p); os.Remove(p + "-wal"); os.Remove(p + "-shm") },
		func(p string) {
			os.Remove(p + "-wal")
			os.Remove(p + "-shm")
			os.WriteFile(p, []byte(strings.Repeat("garbage! ", 1000)), 0o644)
		},
	} {
		damage(filepath.Join(home, IndexFile))
		s2, ns := openHome(t, home)
		hits, err := s2.Search(ctx, seedQuery, index.Filter{})
		if err != nil || len(hits) != 1 || hits[0].ID != n.ID {
			t.Fatalf("recall after damage: %v %v", hitIDs(hits), err)
		}
		if len(ns.list) == 0 {
			t.Error("no notice about the rebuild")
		}
		s2.Close()
	}
}

// TestFullReindexRightAfterAnOpenRebuild: opening a store whose index is
// missing (or of another schema, after an upgrade) rebuilds it from the
// files; a `reindex --full` asked for right then (RebuildAfterOpen)
// reports that rebuild instead of doing it again (a second one took
// another 21 s at 122,000 notes), and the next one rebuilds.
func TestFullReindexRightAfterAnOpenRebuild(t *testing.T) {
	home, _ := homeWithOneNote(t)
	p := filepath.Join(home, IndexFile)
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		os.Remove(f)
	}
	s, _ := openHome(t, home)
	gen := func() string {
		t.Helper()
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRow(`SELECT value FROM index_meta WHERE key = 'files_gen'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	built := gen()
	rep, err := s.RebuildAfterOpen(ctx)
	if err != nil || rep.Indexed != 1 || rep.Added != 1 {
		t.Fatalf("reindex --full after the open's rebuild: %+v, %v", rep, err)
	}
	if g := gen(); g != built {
		t.Fatalf("the index was rebuilt again (generation %s, then %s)", built, g)
	}
	if rep, err := s.RebuildAfterOpen(ctx); err != nil || rep.Indexed != 1 || gen() == built {
		t.Fatalf("a second reindex --full did not rebuild: %+v, %v", rep, err)
	}
}

// damageIndex runs one statement on a closed store's index file, which
// must change exactly one row.
func damageIndex(t *testing.T, home, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(home, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Exec(stmt)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := r.RowsAffected(); c != 1 {
		t.Fatalf("%s changed %d rows", stmt, c)
	}
}

// Damage inside a healthy database file (a malformed posting list) is
// repaired where a search finds it: the index is rebuilt from the files,
// one notice says so, and the search answers. A hook (DeferRebuild) has
// no time for that: its search fails, marking the index so that the next
// open rebuilds it.
func TestDamagedPostingsAreRebuiltWhenFound(t *testing.T) {
	home, n := homeWithOneNote(t)
	damageIndex(t, home, `UPDATE index_postings SET data = x'ff' WHERE term = 'lock'`)
	s1, ns := openHome(t, home)
	hits, err := s1.Search(ctx, seedQuery, index.Filter{})
	if err != nil || len(hits) != 1 || hits[0].ID != n.ID {
		t.Fatalf("search over damaged postings: %v %v", hitIDs(hits), err)
	}
	if len(ns.list) != 1 || !strings.Contains(ns.list[0], "was damaged; rebuilt it from the note files (1 notes") {
		t.Errorf("notices: %q", ns.list)
	}
	s1.Close()

	damageIndex(t, home, `UPDATE index_postings SET data = x'ff' WHERE term = 'lock'`)
	hook, err := Open(ctx, home, Options{MachineID: "testbox", DeferRebuild: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Search(ctx, seedQuery, index.Filter{}); !errors.Is(err, ErrNeedsRebuild) {
		t.Fatalf("a hook's search over damaged postings: %v", err)
	}
	hook.Close()
	s2, ns := openHome(t, home)
	hits, err = s2.Search(ctx, seedQuery, index.Filter{})
	if err != nil || len(hits) != 1 || hits[0].ID != n.ID {
		t.Fatalf("recall after the rebuild: %v %v", hitIDs(hits), err)
	}
	if len(ns.list) != 1 || !strings.Contains(ns.list[0], "rebuilt from the note files") {
		t.Errorf("notices: %q", ns.list)
	}
}

// doctor compares the search postings with FTS5's own vocabulary and
// names the tokens that disagree.
func TestDoctorChecksPostingsAgainstFTS5(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	for _, b := range []string{"busy_timeout avoids lock errors", "WAL mode lets readers run beside a writer", "naïve café Straße"} {
		if _, _, err := s.Write(ctx, WriteRequest{Type: "procedural", Title: "SQLite " + b[:4], Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	check := func() Check {
		for _, c := range s.Doctor(ctx, Install{Problem: "not checked here"}) {
			if c.Name == "search postings" {
				return c
			}
		}
		t.Fatal("doctor has no search postings check")
		return Check{}
	}
	if c := check(); c.State != CheckOK || !strings.Contains(c.Detail, "agree with FTS5") {
		t.Fatalf("healthy index: %+v", c)
	}
	s.Close()
	damageIndex(t, home, `UPDATE index_df SET df = df + 1 WHERE term = 'cafe'`)
	s, _ = openHome(t, home)
	defer s.Close()
	c := check()
	if c.State != CheckProblem || len(c.Items) != 1 || c.Items[0] != "cafe" || !strings.Contains(c.Fix, "reindex --full") {
		t.Fatalf("damaged count: %+v", c)
	}
	if _, err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if c := check(); c.State != CheckOK {
		t.Fatalf("after a rebuild: %+v", c)
	}
}

func TestReconcilePicksUpHandEdits(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, path, _ := s.Write(ctx, WriteRequest{Type: "semantic", Title: "editor test", Body: "original walrus"})
	gone, gpath, _ := s.Write(ctx, WriteRequest{Type: "semantic", Title: "to delete", Body: "doomed narwhal"})
	keep, _, _ := s.Write(ctx, WriteRequest{Type: "semantic", Title: "untouched", Body: "steady otter"})

	// Edit in an editor: new body, same size would still differ in mtime.
	edited := *n
	edited.Body = "edited pelican"
	os.WriteFile(filepath.Join(home, path), note.Marshal(&edited), 0o644)
	os.Remove(filepath.Join(home, gpath))
	added := note.New("episodic", "added by hand", "fresh flamingo", time.Now())
	os.MkdirAll(filepath.Join(home, "memory", "episodic"), 0o755)
	os.WriteFile(filepath.Join(home, "memory", "episodic", "added-by-hand.md"), note.Marshal(added), 0o644)
	// Touched but unchanged: must not count as an update.
	future := time.Now().Add(time.Hour)
	_, kp, _ := s.Get(ctx, keep.ID)
	os.Chtimes(filepath.Join(home, kp), future, future)

	rep, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 1 || rep.Updated != 1 || rep.Deleted != 1 || rep.Indexed != 3 {
		t.Fatalf("report %+v", rep)
	}
	for q, want := range map[string]int{"pelican": 1, "walrus": 0, "narwhal": 0, "flamingo": 1, "otter": 1} {
		if hits, _ := s.Search(ctx, q, index.Filter{}); len(hits) != want {
			t.Errorf("%s: %d hits, want %d", q, len(hits), want)
		}
	}
	if _, _, err := s.Get(ctx, gone.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted note: %v", err)
	}
	again, err := s.Reconcile(ctx)
	if err != nil || again.Added+again.Updated+again.Deleted != 0 {
		t.Errorf("second reconcile not idempotent: %+v %v", again, err)
	}
}

// malformedNotes are the bad files a reindex must survive.
func malformedNotes(t *testing.T, home string) map[string]string {
	t.Helper()
	good := note.Marshal(note.New("semantic", "fine", "fine", time.Now()))
	files := map[string][]byte{
		"memory/semantic/nofront.md":  []byte("just some text\n"),
		"memory/semantic/badyaml.md":  []byte("---\nid: [oops\ntype: semantic\ntitle: x\n---\nbody\n"),
		"memory/semantic/conflict.md": []byte(strings.Replace(string(good), "fine\n", "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n", 1)),
		"memory/semantic/latin1.md":   []byte("---\nid: 01LATIN\ntype: semantic\ntitle: caf\xe9\n---\n"),
		"memory/semantic/badtype.md":  []byte("---\nid: 01BADTYPE\ntype: opinion\ntitle: x\n---\n"),
		"memory/semantic/huge.md":     append(append([]byte{}, good...), make([]byte, note.MaxFileSize)...),
	}
	for rel, data := range files {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside.md")
	os.WriteFile(outside, good, 0o644)
	if err := os.Symlink(outside, filepath.Join(home, "memory", "semantic", "link.md")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"memory/semantic/nofront.md":  "missing YAML frontmatter",
		"memory/semantic/badyaml.md":  "not valid YAML",
		"memory/semantic/conflict.md": "conflict marker",
		"memory/semantic/latin1.md":   "not valid UTF-8",
		"memory/semantic/badtype.md":  "not one of",
		"memory/semantic/huge.md":     "byte limit",
		"memory/semantic/link.md":     "outside the tree",
	}
	return want
}

func TestMalformedNotesAreSkippedAndNamed(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	ok, _, _ := s.Write(ctx, WriteRequest{Type: "semantic", Title: "survivor", Body: "indexed despite neighbours"})
	want := malformedNotes(t, home)
	for _, full := range []bool{false, true} {
		var rep ReconcileReport
		var err error
		if full {
			rep, err = s.Rebuild(ctx)
		} else {
			rep, err = s.Reconcile(ctx)
		}
		if err != nil {
			t.Fatalf("full=%v: %v", full, err)
		}
		if rep.Indexed != 1 || len(rep.Skipped) != len(want) {
			t.Fatalf("full=%v: indexed %d, bad %+v", full, rep.Indexed, rep.Skipped)
		}
		for _, b := range rep.Skipped {
			if !strings.Contains(b.Error, want[b.Path]) {
				t.Errorf("%s: reason %q does not say %q", b.Path, b.Error, want[b.Path])
			}
		}
	}
	if hits, _ := s.Search(ctx, "neighbours", index.Filter{}); len(hits) != 1 || hits[0].ID != ok.ID {
		t.Errorf("good note not searchable: %v", hitIDs(hits))
	}
	st, _ := s.Status(ctx)
	if len(st.Index.Skipped) != len(want) {
		t.Errorf("status names %d skipped files", len(st.Index.Skipped))
	}
	var problems int
	for _, c := range s.Doctor(ctx, Install{Problem: "not checked here"}) {
		if c.Name == "note files" && c.State == CheckWarn && len(c.Items) == len(want) {
			problems++
		}
	}
	if problems != 1 {
		t.Errorf("doctor did not name the skipped files: %+v", s.Doctor(ctx, Install{Problem: "not checked here"}))
	}
	// Fixing a file brings it back.
	fixed := note.New("semantic", "repaired", "repaired heron", time.Now())
	os.WriteFile(filepath.Join(home, "memory/semantic/badyaml.md"), note.Marshal(fixed), 0o644)
	if rep, _ := s.Reconcile(ctx); rep.Indexed != 2 || len(rep.Skipped) != len(want)-1 {
		t.Errorf("after fix: %+v", rep)
	}
}

func TestDuplicateFileTakesOverWhenOriginalGoes(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, path, _ := s.Write(ctx, WriteRequest{Type: "semantic", Title: "dup", Body: "original text"})
	data, _ := os.ReadFile(filepath.Join(home, path))
	os.WriteFile(filepath.Join(home, "memory", "semantic", "copy-of-note.md"), data, 0o644)
	rep, _ := s.Reconcile(ctx)
	if rep.Indexed != 1 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Error, "duplicate id") {
		t.Fatalf("duplicate: %+v", rep)
	}
	os.Remove(filepath.Join(home, path))
	rep, _ = s.Reconcile(ctx)
	if rep.Indexed != 1 || len(rep.Skipped) != 0 {
		t.Fatalf("after removing the original: %+v", rep)
	}
	if _, p, err := s.Get(ctx, n.ID); err != nil || p != "memory/semantic/copy-of-note.md" {
		t.Fatalf("copy did not take over: %s %v", p, err)
	}
}

func TestConcurrentWritersOnOneHome(t *testing.T) {
	home := t.TempDir()
	first, _ := openHome(t, home)
	_ = first
	const stores, perStore = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, stores*perStore*2)
	for i := 0; i < stores; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := Open(ctx, home, Options{MachineID: fmt.Sprintf("m%d", i), Create: true})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for j := 0; j < perStore; j++ {
				if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: fmt.Sprintf("n %d %d", i, j), Body: "concurrent heron"}); err != nil {
					errs <- err
				}
				if _, err := s.Search(ctx, "heron", index.Filter{}); err != nil {
					errs <- err
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, _ := first.Status(ctx)
	if st.Notes.Total != stores*perStore {
		t.Fatalf("indexed %d of %d", st.Notes.Total, stores*perStore)
	}
	if rep, _ := first.Reconcile(ctx); rep.Added+rep.Updated+rep.Deleted != 0 {
		t.Errorf("index and files disagree after concurrent writes: %+v", rep)
	}
}

func TestResolveHomeAndMachineID(t *testing.T) {
	h, err := ResolveHome("~/x")
	if err != nil || !filepath.IsAbs(h) || !strings.HasSuffix(h, "/x") {
		t.Errorf("ResolveHome: %s %v", h, err)
	}
	if got, err := ResolveMachineID(" flag ", Config{MachineID: "cfg"}); got != "flag" || err != nil {
		t.Errorf("flag should win: %s %v", got, err)
	}
	if got, err := ResolveMachineID("", Config{MachineID: "cfg"}); got != "cfg" || err != nil {
		t.Errorf("config should win over hostname: %s %v", got, err)
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"machine_id": "desk", "remote": "/srv/hub.git", "reflection": {"provider": "x"}}`), 0o600)
	c, err := LoadConfig(home)
	if err != nil || c.MachineID != "desk" || c.Remote != "/srv/hub.git" {
		t.Errorf("LoadConfig: %+v %v", c, err)
	}
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{broken`), 0o600)
	if _, err := Open(ctx, home, Options{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("broken config.json should be a clear error: %v", err)
	}
}

func TestMachineIDValidationAndHostnameFallback(t *testing.T) {
	for _, bad := range []string{"a<b", "a>b", "two\nlines", "nul\x00", "esc\x1b[31m", " padded", strings.Repeat("x", MaxMachineIDLen+1), "\xff"} {
		if err := ValidateMachineID(bad); err == nil {
			t.Errorf("ValidateMachineID(%q) accepted it", bad)
		}
		if _, err := ResolveMachineID(bad, Config{}); bad != " padded" && err == nil {
			t.Errorf("ResolveMachineID(%q) accepted it", bad)
		}
		if _, err := ResolveMachineID("", Config{MachineID: bad}); err == nil || !strings.Contains(err.Error(), ConfigFile) {
			t.Errorf("config machine_id %q: %v", bad, err)
		}
	}
	for _, good := range []string{"desk", "Bob's laptop", "ünïcode-box.local"} {
		if err := ValidateMachineID(good); err != nil {
			t.Errorf("ValidateMachineID(%q): %v", good, err)
		}
	}
	for in, want := range map[string]string{
		"box.local":              "box.local",
		"odd<host>\n":            "odd-host-",
		"":                       "unknown",
		"\n":                     "unknown",
		strings.Repeat("h", 300): strings.Repeat("h", MaxMachineIDLen),
		"bad\xffutf8":            "bad-utf8",
	} {
		got := machineIDFromHostname(in)
		if got != want || ValidateMachineID(got) != nil {
			t.Errorf("machineIDFromHostname(%q) = %q (%v), want %q", in, got, ValidateMachineID(got), want)
		}
	}
}

// Open sets up a store only when asked to: a mistyped home is an error,
// not a new empty store that later notes silently go to.
func TestOpenWithoutCreateRefusesAHomeWithoutAStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	empty := t.TempDir()
	for _, home := range []string{missing, empty} {
		if _, err := Open(ctx, home, Options{MachineID: "box"}); !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "no store at "+home+"; run `anamnesis init`") {
			t.Errorf("Open(%s): %v", home, err)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("Open created the missing home")
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("Open left %d entries in the empty home", len(entries))
	}
	s, err := Open(ctx, missing, Options{MachineID: "box", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !IsStore(missing) {
		t.Fatal("Create made no store")
	}
	// A store whose index and local/ are gone is still a store.
	os.Remove(filepath.Join(missing, IndexFile))
	os.RemoveAll(filepath.Join(missing, "local"))
	s, err = Open(ctx, missing, Options{MachineID: "box"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestMeaninglessConfidenceAndConfigValuesAreRefused(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	for _, conf := range []float64{math.NaN(), math.Inf(1), -0.5, 1.5} {
		_, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "t", Body: "b", Confidence: conf})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "confidence") {
			t.Errorf("confidence %v: %v", conf, err)
		}
	}
	if hits, _ := s.List(ctx, index.Filter{}); len(hits) != 0 {
		t.Errorf("refused writes left %d notes", len(hits))
	}
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "t", Body: "b", Confidence: 0.25}); err != nil {
		t.Errorf("confidence 0.25: %v", err)
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"tailnet_allow_tags": "tag:laptop"}`), 0o600)
	if _, err := LoadConfig(home); err == nil || !strings.Contains(err.Error(), "tailnet_allow_tags") {
		t.Errorf("tailnet_allow_tags as a string: %v", err)
	}
}

type progressCall struct {
	stage       string
	done, total int
}

type progressLog struct {
	mu    sync.Mutex
	calls []progressCall
}

func (p *progressLog) add(stage string, done, total int) {
	p.mu.Lock()
	p.calls = append(p.calls, progressCall{stage, done, total})
	p.mu.Unlock()
}

// stage returns the calls of one stage, checking that done only grows.
func (p *progressLog) stage(t *testing.T, name string) []progressCall {
	t.Helper()
	var out []progressCall
	for _, c := range p.calls {
		if c.stage == name {
			if len(out) > 0 && c.done < out[len(out)-1].done {
				t.Errorf("%s: done went back: %v", name, p.calls)
			}
			out = append(out, c)
		}
	}
	return out
}

// Long work reports its progress: a rebuild counts the notes, a first
// sync names its stages and counts the notes it indexes, and each ends
// with the empty stage that tells a printer to clear its line.
func TestProgressOfLongWork(t *testing.T) {
	const notes = 300
	hub := testutil.BareHub(t)
	a := t.TempDir()
	tree := note.Tree{Root: filepath.Join(a, note.PortableDir), Scope: note.ScopePortable}
	for i := 0; i < notes; i++ {
		n := note.New(note.TypeSemantic, fmt.Sprintf("note %d", i), "body", time.Now())
		n.MachineID = "a"
		if _, err := tree.Write(n); err != nil {
			t.Fatal(err)
		}
	}
	var pa progressLog
	sa, err := Open(ctx, a, Options{MachineID: "a", Remote: hub, Progress: pa.add})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	rb := pa.stage(t, "rebuilding the index from the note files")
	if len(rb) < 2 || rb[0] != (progressCall{rb[0].stage, 0, notes}) || rb[len(rb)-1].done != notes || pa.calls[len(pa.calls)-1].stage != "" {
		t.Fatalf("rebuild progress: %v", pa.calls)
	}
	if _, err := sa.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}

	var pb progressLog
	sb, err := Open(ctx, t.TempDir(), Options{MachineID: "b", Remote: hub, Progress: pb.add, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	pb.calls = nil
	if _, err := sb.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, c := range pb.calls {
		if len(stages) == 0 || stages[len(stages)-1] != c.stage {
			stages = append(stages, c.stage)
		}
	}
	want := []string{"sync: committing local notes", "sync: fetching", "sync: merging", "indexing changed note files", ""}
	if strings.Join(stages, "|") != strings.Join(want, "|") {
		t.Errorf("first sync stages %q, want %q", stages, want)
	}
	if ix := pb.stage(t, "indexing changed note files"); len(ix) == 0 || ix[0].total != notes {
		t.Errorf("indexing progress: %v", ix)
	}
}

// TestConfigIsNeverReadableByOthers: config.json may hold a token in its
// remote, so it is 0600 from the moment it exists under its name, never
// wider in between (a reader watching the directory saw 0644 while it
// was replaced, before the chmod).
func TestConfigIsNeverReadableByOthers(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ConfigFile)
	stop := make(chan struct{})
	seen := make(chan os.FileMode, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o600 {
				seen <- fi.Mode().Perm()
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		if err := SaveConfig(home, Config{MachineID: "desk", Remote: fmt.Sprintf("https://me:tok%d@h.example/r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if m, ok := <-seen; ok {
		t.Errorf("config.json was %v for a moment", m)
	}
}

// TestFilesThatAreNotNotes: a hub created "with a README" (and a user's
// docs) brings files into memory/ that are not at <type>/<id>.md. They
// are synced as files but never indexed, and never reported as bad notes
// by reindex, sync, status or doctor; a record an older version left for
// one is dropped by the next reconcile.
func TestFilesThatAreNotNotes(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "a real note", Body: "quokka"})
	if err != nil {
		t.Fatal(err)
	}
	for rel, data := range map[string]string{
		"memory/README.md":                     "# memory\n\nCreated with the repository.\n",
		"memory/docs/setup.md":                 "how to set up\n",
		"memory/.github/ISSUE_TEMPLATE/bug.md": "---\nname: bug\n---\n",
		"memory/semantic/sub/nested.md":        "not a note path either\n",
	} {
		p := filepath.Join(home, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What an older version recorded for the README: a bad note.
	if _, err := s.idx().Apply(ctx, []index.Change{{File: index.File{Path: "memory/README.md", Size: 1, Error: "missing YAML frontmatter"}}}); err != nil {
		t.Fatal(err)
	}
	check := func(when string, rep ReconcileReport) {
		t.Helper()
		if len(rep.Skipped) != 0 || rep.Indexed != 1 {
			t.Errorf("%s: indexed %d, bad %+v", when, rep.Indexed, rep.Skipped)
		}
		st, err := s.Status(ctx)
		if err != nil || len(st.Index.Skipped) != 0 || st.Index.Notes != 1 {
			t.Errorf("%s: status %+v %v", when, st.Index, err)
		}
		for _, c := range s.Doctor(ctx, Install{Problem: "not checked here"}) {
			if c.Name == "note files" && (c.State != CheckOK || !strings.Contains(c.Detail, "4 files that are not notes (.github/ISSUE_TEMPLATE/bug.md, README.md, docs/setup.md and 1 more) are synced but not indexed")) {
				t.Errorf("%s: doctor: %+v", when, c)
			}
		}
	}
	rep, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("reconcile", rep)
	// A sync commits them (they travel to the hub like any file) and
	// reindexes what the commit changed: still nothing to warn about.
	if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err = s.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("sync and rebuild", rep)
	if _, _, err := s.Get(ctx, n.ID); err != nil {
		t.Errorf("the note: %v", err)
	}
}

// TestNoteShapedFilesOffNotePathsAreNeverIndexed: a file that parses as
// a note but is not at <type>/<id>.md (.github/x.md, docs/x.md) is not a
// note, whichever way it reaches the index: a sync that pulls it in
// (sync reindexes only the paths the pull changed) and a reconcile that
// finds it on disk in memory/ or local/ must ask the same rule,
// note.IsNotePath, and agree.
func TestNoteShapedFilesOffNotePathsAreNeverIndexed(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	s, err := Open(ctx, home, Options{MachineID: "a", Remote: hub, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "a real note", Body: "quokka"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	shaped := func(word string) []byte {
		n := note.New(note.TypeSemantic, "looks like a note", word, time.Now())
		n.MachineID = "elsewhere"
		return note.Marshal(n)
	}
	// Another clone of the hub adds .github/x.md; the next sync pulls it.
	work := filepath.Join(t.TempDir(), "work")
	testutil.Git(t, "", "clone", "-q", "-b", "main", hub, work)
	os.MkdirAll(filepath.Join(work, ".github"), 0o755)
	if err := os.WriteFile(filepath.Join(work, ".github", "x.md"), shaped("wombatpulled"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, "add", ".github/x.md")
	testutil.Git(t, work, "commit", "-q", "-m", "a workflow file")
	testutil.Git(t, work, "push", "-q", "origin", "main")
	if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "memory", ".github", "x.md")); err != nil {
		t.Fatalf("the sync did not bring .github/x.md: %v", err)
	}
	indexed := func(when string, words ...string) {
		t.Helper()
		for _, w := range words {
			if hits, err := s.Search(ctx, w, index.Filter{}); err != nil || len(hits) != 0 {
				t.Errorf("%s: search %s: %v %v", when, w, hitIDs(hits), err)
			}
		}
		if st, err := s.Status(ctx); err != nil || st.Notes.Total != 1 || len(st.Index.Skipped) != 0 {
			t.Errorf("%s: status %+v %+v %v", when, st.Notes, st.Index, err)
		}
	}
	indexed("sync", "wombatpulled")
	// The same shape put on disk by hand, in both trees.
	for rel, word := range map[string]string{
		"memory/docs/x.md":    "wombatdocs",
		"local/.github/x.md":  "wombatlocal",
		"memory/.github/y.md": "wombaty",
	} {
		p := filepath.Join(home, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, shaped(word), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 1 || len(rep.Skipped) != 0 {
		t.Errorf("reconcile: indexed %d, bad %+v", rep.Indexed, rep.Skipped)
	}
	indexed("reconcile", "wombatpulled", "wombatdocs", "wombatlocal", "wombaty")
	// A sync commits the hand-made files and reindexes what it committed.
	if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	indexed("second sync", "wombatpulled", "wombatdocs", "wombatlocal", "wombaty")
}
