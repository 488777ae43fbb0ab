package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
	_ "modernc.org/sqlite"
)

// tearIndexPages overwrites with garbage the root page of every table and
// index in home's index.db except index_meta, keeping the file header and
// the schema page: what a torn write or a bad disk leaves. The store
// still opens; every query that reads notes meets the damage.
func tearIndexPages(t *testing.T, home string, keepMeta bool) {
	t.Helper()
	p := filepath.Join(home, "index.db")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	q := `SELECT rootpage FROM sqlite_master WHERE rootpage > 1`
	if keepMeta {
		q += ` AND tbl_name <> 'index_meta'`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	var pages []int64
	for rows.Next() {
		var pg int64
		rows.Scan(&pg)
		pages = append(pages, pg)
	}
	rows.Close()
	var pageSize int64
	db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	db.Close() // the last connection folds the WAL into the file
	if len(pages) < 10 || pageSize == 0 {
		t.Fatalf("%d root pages of %d bytes", len(pages), pageSize)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte("torn\xde\xad\xbe\xef"), int(pageSize)/8)
	for _, pg := range pages {
		if _, err := f.WriteAt(garbage, (pg-1)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func listedIDs(t *testing.T, home string) map[string]bool {
	t.Helper()
	r := mustOK(t, anm(t, home, "", "list", "--json"))
	var out struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	ids := map[string]bool{}
	for _, n := range out.Results {
		ids[n.ID] = true
	}
	return ids
}

// committedIDs are the ids of every note file any commit of memory/ added.
func committedIDs(t *testing.T, home string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, l := range strings.Split(testutil.Git(t, filepath.Join(home, "memory"), "log", "--name-only", "--format="), "\n") {
		if strings.HasSuffix(l, ".md") {
			ids[strings.TrimSuffix(path.Base(l), ".md")] = true
		}
	}
	return ids
}

// rawSQLite matches SQLite's own wording, which must never reach a user.
func rawSQLite(s string) bool {
	for _, w := range []string{"SQLITE_", "database is locked", "(5)", "(11)", "(14)", "malformed"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func copyHome(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "home")
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

// TestDamagedIndexNeverLocksTheUserOut: with a few pages of index.db
// overwritten, every command does its job. Commands repair the index
// where they meet the damage (rebuilt from the note files, one notice
// line), a write keeps its note and indexes it, doctor reports the
// damage and --fix repairs it.
func TestDamagedIndexNeverLocksTheUserOut(t *testing.T) {
	parallel(t)
	tmpl := t.TempDir()
	var ids []string
	for i := 0; i < 12; i++ {
		r := mustOK(t, anm(t, tmpl, "", "write", "--type", "semantic", "--title", fmt.Sprintf("heron %d", i), "--body", strings.Repeat("the heron waits by the water ", 40)))
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	const notice = "was damaged; rebuilt it from the note files"
	oneNotice := func(t *testing.T, r result) {
		t.Helper()
		if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, notice) {
			t.Errorf("want one line saying the index was rebuilt, got %q", r.stderr)
		}
	}
	cases := []struct {
		name  string
		args  []string
		notes int // notes afterwards
		check func(t *testing.T, r result)
	}{
		{"status", []string{"status"}, 12, func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, "notes:   12 ") {
				t.Errorf("status:\n%s", r.stdout)
			}
		}},
		{"list", []string{"list", "--json"}, 12, func(t *testing.T, r result) {
			if n := strings.Count(r.stdout, `"id":`); n != 12 {
				t.Errorf("listed %d notes", n)
			}
		}},
		{"search", []string{"search", "--json", "-k", "20", "heron"}, 12, func(t *testing.T, r result) {
			if n := strings.Count(r.stdout, `"id":`); n != 12 {
				t.Errorf("found %d notes", n)
			}
		}},
		{"show", []string{"show", ids[3]}, 12, func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, "title: heron 3") {
				t.Errorf("show:\n%s", r.stdout)
			}
		}},
		{"reindex", []string{"reindex"}, 12, func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, "12 notes indexed") {
				t.Errorf("reindex: %s", r.stdout)
			}
		}},
		{"reindex --full", []string{"reindex", "--full"}, 12, func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, "12 notes indexed") {
				t.Errorf("reindex --full: %s", r.stdout)
			}
		}},
		{"write", []string{"write", "--type", "semantic", "--title", "written over damage", "--body", "the heron stays"}, 13, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := copyHome(t, tmpl)
			tearIndexPages(t, home, true)
			r := anm(t, home, "", c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			oneNotice(t, r)
			if c.check != nil {
				c.check(t, r)
			}
			if c.name == "write" {
				id := strings.TrimSpace(r.stdout)
				if !committedIDs(t, home)[id] {
					t.Errorf("note %s not committed", id)
				}
				if !listedIDs(t, home)[id] {
					t.Errorf("note %s not indexed", id)
				}
			}
			d := anm(t, home, "", "doctor")
			if !strings.Contains(d.stdout, "ok:     index integrity") || !strings.Contains(d.stdout, fmt.Sprintf("ok:     index: agrees with the note files (%d notes)", c.notes)) {
				t.Errorf("doctor afterwards:\n%s", d.stdout)
			}
		})
	}

	t.Run("doctor", func(t *testing.T) {
		home := copyHome(t, tmpl)
		tearIndexPages(t, home, true)
		r := anm(t, home, "", "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "problem: index integrity: "+filepath.Join(home, "index.db")+" is damaged") ||
			!strings.Contains(r.stdout, "problem: index: ") || strings.Contains(r.stdout, "ok:     index") || rawSQLite(r.stdout) {
			t.Errorf("doctor on a damaged index: exit %d\n%s", r.code, r.stdout)
		}
		r = anm(t, home, "", "doctor", "--fix")
		if r.code != 0 || !strings.Contains(r.stdout, "rebuilt the index from the note files (it was damaged)") ||
			!strings.Contains(r.stdout, "ok:     index: agrees with the note files (12 notes)") {
			t.Errorf("doctor --fix: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("schema page", func(t *testing.T) {
		home := copyHome(t, tmpl)
		tearIndexPages(t, home, false) // index_meta too: damage met while opening
		r := mustOK(t, anm(t, home, "", "status"))
		oneNotice(t, r)
		if !strings.Contains(r.stdout, "notes:   12 ") {
			t.Errorf("status:\n%s", r.stdout)
		}
	})
}

// fillNotes writes n synthetic notes straight into home's memory/ (a
// store grown over months) and indexes them.
func fillNotes(t *testing.T, home string, n int) {
	t.Helper()
	g := synth.NewGen(synth.NewVocab(5000, 7), 7)
	tree := note.Tree{Root: filepath.Join(home, note.PortableDir), Scope: note.ScopePortable}
	if _, err := synth.Fill(tree, g, n, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustOK(t, anm(t, home, "", "reindex"))
}

// TestParallelWritesAndFullReindexesLoseNothing: 100 writes in parallel
// with 3 full reindexes. Every write exits 0; every note written and
// every note committed is in the index afterwards (no reindex in
// between); a write that is not committed says why; no SQLite wording and
// no false "a sync is running" reach the user.
func TestParallelWritesAndFullReindexesLoseNothing(t *testing.T) {
	home := t.TempDir()
	fillNotes(t, home, 400)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "first", "--body", "kestrel"))
	var wg sync.WaitGroup
	writes := make([]result, 100)
	reindexes := make([]result, 3)
	for i := range writes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			writes[i] = anmProcess(t, home, "", "write", "--type", "semantic", "--title", fmt.Sprintf("parallel %d", i), "--body", "parallel kestrel")
		}(i)
	}
	for i := range reindexes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 300 * time.Millisecond)
			reindexes[i] = anmProcess(t, home, "", "reindex", "--full")
		}(i)
	}
	wg.Wait()
	for i, r := range reindexes {
		if r.code != 0 || rawSQLite(r.stderr) {
			t.Errorf("reindex --full %d: exit %d %q", i, r.code, r.stderr)
		}
	}
	listed, committed := listedIDs(t, home), committedIDs(t, home)
	uncommitted := 0
	for i, r := range writes {
		id := strings.TrimSpace(r.stdout)
		switch {
		case r.code != 0 || !note.ValidID(id):
			t.Errorf("write %d: exit %d %q %q", i, r.code, r.stdout, r.stderr)
			continue
		case rawSQLite(r.stderr) || strings.Contains(r.stderr, "a sync is running"):
			t.Errorf("write %d: %q", i, r.stderr)
		case !listed[id]:
			t.Errorf("write %d: note %s is not in the index (stderr %q)", i, id, r.stderr)
		}
		if !committed[id] {
			uncommitted++
			t.Logf("write %d: %s", i, r.stderr)
			if !strings.Contains(r.stderr, "saved but not committed: ") {
				t.Errorf("write %d: note %s is not committed and the write did not say so (stderr %q)", i, id, r.stderr)
			}
		}
	}
	for id := range committed {
		if !listed[id] {
			t.Errorf("committed note %s is not in the index", id)
		}
	}
	if len(listed) != 400+1+100 {
		t.Errorf("%d notes listed, want 501", len(listed))
	}
	t.Logf("%d of 100 writes left uncommitted (each said why)", uncommitted)
}

// TestSchemaChangeIsRebuiltOnce: after an upgrade changes the index
// layout, three commands start at once. One rebuilds, the others wait
// for it and use its result; all succeed.
func TestSchemaChangeIsRebuiltOnce(t *testing.T) {
	home := t.TempDir()
	fillNotes(t, home, 3000)
	db, err := sql.Open("sqlite", filepath.Join(home, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE index_meta SET value = 'go-0' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cmds := [][]string{{"status"}, {"list", "--json", "--limit", "1"}, {"reindex"}}
	res := make([]result, len(cmds))
	var wg sync.WaitGroup
	for i, args := range cmds {
		wg.Add(1)
		go func(i int, args []string) {
			defer wg.Done()
			res[i] = anmProcess(t, home, "", args...)
		}(i, args)
	}
	wg.Wait()
	rebuilds := 0
	for i, r := range res {
		if r.code != 0 || rawSQLite(r.stderr) {
			t.Errorf("%v: exit %d %q", cmds[i], r.code, r.stderr)
		}
		rebuilds += strings.Count(r.stderr, "rebuilt from the note files")
	}
	if rebuilds != 1 {
		t.Errorf("%d rebuilds, want 1: %q %q %q", rebuilds, res[0].stderr, res[1].stderr, res[2].stderr)
	}
	if !strings.Contains(res[0].stdout, "notes:   3000 ") {
		t.Errorf("status after the rebuild:\n%s", res[0].stdout)
	}
}

// TestWriteWaitsForWritesNotForSyncs: a write whose commit finds memory/'s
// lock held by another write waits for it and commits; held by a sync for
// longer than a moment, it leaves the note for the next sync and says so,
// naming the sync.
func TestWriteWaitsForWritesNotForSyncs(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "first", "--body", "osprey"))
	gitDir := filepath.Join(home, "memory", ".git")
	lock, err := gitsync.AcquireAs(context.Background(), gitDir, time.Second, gitsync.PurposeWrite)
	if err != nil {
		t.Fatal(err)
	}
	held := lock // the timer releases this one; lock is reused below
	time.AfterFunc(3*time.Second, func() { held.Release() })
	r := mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "behind a write", "--body", "osprey"))
	id := strings.TrimSpace(r.stdout)
	if r.stderr != "" || !committedIDs(t, home)[id] {
		t.Errorf("a write behind a slow write: committed %v, stderr %q", committedIDs(t, home)[id], r.stderr)
	}

	lock, err = gitsync.AcquireAs(context.Background(), gitDir, time.Second, gitsync.PurposeSync)
	if err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "behind a sync", "--body", "osprey"))
	lock.Release()
	id = strings.TrimSpace(r.stdout)
	want := fmt.Sprintf("saved but not committed: a sync (process %d) held memory/'s lock", os.Getpid())
	if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "the next `anamnesis sync` commits it") {
		t.Errorf("a write behind a sync: %q", r.stderr)
	}
	if committedIDs(t, home)[id] || !listedIDs(t, home)[id] {
		t.Errorf("note %s: committed %v, indexed %v", id, committedIDs(t, home)[id], listedIDs(t, home)[id])
	}
	mustOK(t, anm(t, home, "", "sync"))
	if !committedIDs(t, home)[id] {
		t.Errorf("note %s not committed by the next sync", id)
	}
}

// TestReadOnlyHome: the whole home on a read-only mount. Reading works
// (status, list, search, show, doctor); writes fail in one line naming
// the home. With its index missing, a temporary one serves the reads.
func TestReadOnlyHome(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	r := mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron facts", "--body", "the heron waits"))
	id := strings.TrimSpace(r.stdout)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--scope", "machine-local", "--title", "local", "--body", "x"))
	readOnly := func() {
		mount(t, "--bind", home, home)
		mount(t, "-o", "remount,ro,bind", home)
	}
	readOnly()
	defer umount(home)
	for _, args := range [][]string{{"status"}, {"list"}, {"search", "heron"}, {"show", id}} {
		r := anm(t, home, "", args...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "eron") && args[0] != "status" {
			t.Errorf("%v on a read-only home: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	d := anm(t, home, "", "doctor")
	if !strings.Contains(d.stdout, "ok:     index integrity") || !strings.Contains(d.stdout, "ok:     index: agrees with the note files (2 notes)") ||
		!strings.Contains(d.stdout, "problem: memory tree: "+filepath.Join(home, "memory")+" is not writable") {
		t.Errorf("doctor on a read-only home:\n%s\n%s", d.stdout, d.stderr)
	}
	for _, args := range [][]string{
		{"write", "--type", "semantic", "--title", "t", "--body", "b"},
		{"reindex"}, {"reindex", "--full"}, {"sync"},
	} {
		r := anm(t, home, "", args...)
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "home "+home+" is read-only") {
			t.Errorf("%v on a read-only home: exit %d %q", args, r.code, r.stderr)
		}
	}

	umount(home)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(home, "index.db"+suffix))
	}
	readOnly()
	r = anm(t, home, "", "search", "heron")
	if r.code != 0 || !strings.Contains(r.stdout, "Heron facts") || !strings.Contains(r.stderr, "is read-only and its index is missing; searching a temporary index") {
		t.Errorf("search on a read-only home without an index: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
