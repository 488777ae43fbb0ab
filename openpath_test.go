package anamnesis

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// The contract of opening a store (openIndex): a healthy index is used as
// it is, the note files are not compared with it; files changed behind
// its back are picked up when the caller asks, with Reconcile.
func TestOpenNeverReconcilesUntilAsked(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	edited, path, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Heron facts", Body: "the heron waits by the water"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Behind the index's back: one note edited, one added by hand.
	e := *edited
	e.Body = "the heron flies south in autumn"
	later := time.Now().Add(time.Minute)
	os.WriteFile(filepath.Join(home, path), note.Marshal(&e), 0o644)
	os.Chtimes(filepath.Join(home, path), later, later)
	added := note.New(note.TypeSemantic, "Egret facts", "the egret nests in colonies", time.Now())
	os.WriteFile(filepath.Join(home, "memory", "semantic", added.ID+".md"), note.Marshal(added), 0o644)

	s, ns := openHome(t, home)
	if len(ns.list) != 0 {
		t.Errorf("opening a healthy index sent notices: %q", ns.list)
	}
	for q, want := range map[string]int{"waits": 1, "autumn": 0, "egret": 0} {
		if hits, err := s.Search(ctx, q, index.Filter{}); err != nil || len(hits) != want {
			t.Errorf("after Open, %q: %v %v, want %d hits: opening must not read the files", q, hitIDs(hits), err, want)
		}
	}
	if plan, err := s.Plan(ctx); err != nil || len(plan) != 2 {
		t.Errorf("after Open, %d changes pending (%v), want the 2 made behind its back", len(plan), err)
	}

	rep, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 1 || rep.Updated != 1 || rep.Indexed != 2 {
		t.Errorf("reconcile %+v: want 1 added, 1 updated, 2 indexed", rep)
	}
	for q, want := range map[string]int{"waits": 0, "autumn": 1, "egret": 1} {
		if hits, err := s.Search(ctx, q, index.Filter{}); err != nil || len(hits) != want {
			t.Errorf("after Reconcile, %q: %v %v, want %d hits", q, hitIDs(hits), err, want)
		}
	}
}

// Every index opening finds unhealthy goes to the one owner of rebuilds
// (Store.rebuild): rebuilt, with one notice, for a command; left to the
// background with ErrNeedsRebuild, naming what is wrong and touching
// nothing, for a hook (DeferRebuild).
func TestOpenHandsEveryUnhealthyIndexToTheRebuild(t *testing.T) {
	cases := []struct {
		health indexHealth
		harm   func(t *testing.T, home string)
		notice string
	}{
		{indexMissing, func(t *testing.T, home string) {
			for _, f := range indexFiles(filepath.Join(home, IndexFile)) {
				os.Remove(f)
			}
		}, "rebuilt from the note files (1 notes, 0 skipped)"},
		{indexOutdated, func(t *testing.T, home string) {
			damageIndex(t, home, `UPDATE index_meta SET value = 'go-0' WHERE key = 'schema_version'`)
		}, "rebuilt from the note files (1 notes, 0 skipped)"},
		{indexDamaged, func(t *testing.T, home string) {
			p := filepath.Join(home, IndexFile)
			os.Remove(p + "-wal")
			os.Remove(p + "-shm")
			os.WriteFile(p, []byte(strings.Repeat("garbage! ", 1000)), 0o644)
		}, "was damaged; rebuilt it from the note files (1 notes, 0 skipped)"},
	}
	for _, c := range cases {
		t.Run(c.health.String(), func(t *testing.T) {
			home, n := homeWithOneNote(t)
			if !indexHolds(home, n.ID) {
				t.Fatal("indexHolds does not see the note in a healthy index")
			}
			c.harm(t, home)

			var hookNotices notices
			hook, err := Open(ctx, home, Options{MachineID: "testbox", DeferRebuild: true, Notice: hookNotices.add})
			if err == nil {
				hook.Close()
			}
			if !errors.Is(err, ErrNeedsRebuild) || !strings.Contains(err.Error(), "is "+c.health.String()) {
				t.Fatalf("a hook's open: %v, want ErrNeedsRebuild saying the index is %s", err, c.health)
			}
			if indexHolds(home, n.ID) || len(hookNotices.list) != 0 {
				t.Errorf("a hook's open rebuilt the index (notices %q): the rebuild is for the background", hookNotices.list)
			}

			s, ns := openHome(t, home)
			if len(ns.list) != 1 || !strings.Contains(ns.list[0], c.notice) {
				t.Errorf("notices %q, want one saying %q", ns.list, c.notice)
			}
			if hits, err := s.Search(ctx, seedQuery, index.Filter{}); err != nil || len(hits) != 1 || hits[0].ID != n.ID {
				t.Errorf("search after the rebuild: %v %v", hitIDs(hits), err)
			}
		})
	}
}

// indexHolds reports whether index.db answers with note id (false for a
// file that is not a database).
func indexHolds(home, id string) bool {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, IndexFile)+"?mode=ro")
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM memories WHERE id = ?`, id).Scan(&n)
	return err == nil && n == 1
}

// Processes that open a damaged index at once rebuild it once: the owner
// of rebuilds looks again under the rebuild lock, and whoever waited for
// another's rebuild uses its result.
func TestDamagedIndexOpenedByManyIsRebuiltOnce(t *testing.T) {
	home, n := homeWithOneNote(t)
	p := filepath.Join(home, IndexFile)
	os.Remove(p + "-wal")
	os.Remove(p + "-shm")
	os.WriteFile(p, []byte(strings.Repeat("garbage! ", 1000)), 0o644)
	var ns notices
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, home, Options{MachineID: "testbox", Notice: ns.add})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if hits, err := s.Search(ctx, seedQuery, index.Filter{}); err != nil || len(hits) != 1 || hits[0].ID != n.ID {
				errs <- fmt.Errorf("search: %v %v", hitIDs(hits), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rebuilt := 0
	for _, m := range ns.list {
		if strings.Contains(m, "rebuilt") {
			rebuilt++
		}
	}
	if rebuilt != 1 {
		t.Errorf("%d rebuilds for 6 opens, want 1: %q", rebuilt, ns.list)
	}
}

// An operation that meets damage runs again under the rebuild lock (the
// owner's second look); when that run succeeds it is the answer, not run
// a third time: an operation need not be idempotent to be guarded (a
// sync's reindex records the commit it reached, and a third run found
// nothing left to report).
func TestGuardRunsAnOperationAtMostTwiceForOneDamage(t *testing.T) {
	home, _ := homeWithOneNote(t)
	s, ns := openHome(t, home)
	runs := 0
	got, err := guarded(ctx, s, func() (int, error) {
		runs++
		if runs == 1 {
			return 0, fmt.Errorf("read index: %w", index.ErrCorrupt)
		}
		return runs, nil
	})
	if err != nil || runs != 2 || got != 2 {
		t.Errorf("op ran %d times and answered %d (%v), want twice with the second run's answer", runs, got, err)
	}
	if len(ns.list) != 0 {
		t.Errorf("no rebuild was needed (the second look found the index fine), got notices %q", ns.list)
	}

	// Still damaged on the second look: rebuilt, and run once more.
	runs = 0
	got, err = guarded(ctx, s, func() (int, error) {
		runs++
		if runs <= 2 {
			return 0, fmt.Errorf("read index: %w", index.ErrCorrupt)
		}
		return runs, nil
	})
	if err != nil || runs != 3 || got != 3 {
		t.Errorf("op ran %d times and answered %d (%v), want 3 (met damage, looked again, ran after the rebuild)", runs, got, err)
	}
	if len(ns.list) != 1 || !strings.Contains(ns.list[0], "was damaged; rebuilt it") {
		t.Errorf("notices %q, want one rebuild", ns.list)
	}
}
