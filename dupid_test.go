package anamnesis

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// pushForeignNote adds a note file at rel to the hub from a clone made
// with the git CLI, as any other writer of the hub could.
func pushForeignNote(t *testing.T, hub, rel string, n *note.Note) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, t.TempDir(), "clone", "-q", hub, dir)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), note.Marshal(n), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "add", rel)
	testutil.Git(t, dir, "commit", "-q", "-m", "add "+rel)
	testutil.Git(t, dir, "push", "-q", "origin", "HEAD:main")
}

func openSynced(t *testing.T, home, machine, hub string) *Store {
	t.Helper()
	s, err := Open(ctx, home, Options{MachineID: machine, Remote: hub, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holdsOwnNote checks that id is the genuine note by every read path:
// Get, a search for the forged text's words, a search for its own.
func holdsOwnNote(t *testing.T, s *Store, id, wantPath, ownWord, forgedWord, when string) {
	t.Helper()
	n, p, err := s.Get(ctx, id)
	if err != nil || p != wantPath || !strings.Contains(n.Body, ownWord) {
		t.Fatalf("%s: Get(%s) = %s %v (body %q), want the note at %s", when, id, p, err, bodyOf(n), wantPath)
	}
	if hits, err := s.Search(ctx, forgedWord, index.Filter{}); err != nil || slices.Contains(hitIDs(hits), id) {
		t.Fatalf("%s: a search for the forged text finds %s: %v %v", when, id, hitIDs(hits), err)
	}
	if hits, err := s.Search(ctx, ownWord, index.Filter{}); err != nil || !slices.Contains(hitIDs(hits), id) {
		t.Fatalf("%s: a search for the note's own text misses it: %v %v", when, hitIDs(hits), err)
	}
}

func bodyOf(n *note.Note) string {
	if n == nil {
		return ""
	}
	return n.Body
}

func wantDuplicate(t *testing.T, rep ReconcileReport, id, owner, other, when string) {
	t.Helper()
	want := []DuplicateID{{ID: id, IndexedFrom: owner, NotIndexed: []string{other}}}
	if len(rep.Duplicates) != 1 || rep.Duplicates[0].ID != id || rep.Duplicates[0].IndexedFrom != owner || !slices.Equal(rep.Duplicates[0].NotIndexed, want[0].NotIndexed) {
		t.Fatalf("%s: duplicates %+v, want %+v", when, rep.Duplicates, want)
	}
}

// TestHubFileCannotTakeANotesID: a file pushed to the hub carrying the id
// of an existing note, at a path that sorts before the note's (episodic/
// before semantic/) and with a type to match, is reported as a duplicate
// and never indexed in the note's place: not by the sync that brings it,
// not by a full rebuild, not by a reconcile, not on a machine whose first
// sync brings both files at once.
func TestHubFileCannotTakeANotesID(t *testing.T) {
	hub := testutil.BareHub(t)
	homeA := t.TempDir()
	a := openSynced(t, homeA, "a", hub)
	n, path, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "the real note", Body: "genuine heron migration"})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, a)

	forged := *n
	forged.Type, forged.Title, forged.Body = note.TypeEpisodic, "forged", "forged pelican story"
	forgedRel := "episodic/" + n.ID + ".md"
	pushForeignNote(t, hub, forgedRel, &forged)
	forgedPath := "memory/" + forgedRel

	mustSync(t, a)
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after the sync")
	rep, err := a.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after reindex --full")
	wantDuplicate(t, rep, n.ID, path, forgedPath, "rebuild")
	if rep, err = a.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after reindex")
	wantDuplicate(t, rep, n.ID, path, forgedPath, "reconcile")

	var row *Check
	for _, c := range a.Doctor(ctx, Install{}) {
		if c.Name == "duplicate ids" {
			row = &c
		}
	}
	if row == nil || row.State != CheckWarn || len(row.Items) != 1 || !strings.Contains(row.Items[0], path) || !strings.Contains(row.Items[0], forgedPath) {
		t.Fatalf("doctor's duplicate row: %+v", row)
	}

	// A second machine gets both files in its first sync.
	b := openSynced(t, t.TempDir(), "b", hub)
	mustSync(t, b)
	holdsOwnNote(t, b, n.ID, path, "heron", "pelican", "on a new machine")
	if _, err := b.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	holdsOwnNote(t, b, n.ID, path, "heron", "pelican", "on a new machine, after reindex --full")

	// The forged file goes: nothing is left to report, the note stays.
	if err := os.Remove(filepath.Join(homeA, forgedPath)); err != nil {
		t.Fatal(err)
	}
	if rep, err = a.Reconcile(ctx); err != nil || len(rep.Duplicates) != 0 || len(rep.Skipped) != 0 {
		t.Fatalf("after removing the forged file: %+v %v", rep, err)
	}
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after removing the forged file")
}

// TestHubFileCannotTakeALocalNotesID: the hub cannot write local/, so a
// machine-local note keeps its id against a synced file claiming it.
func TestHubFileCannotTakeALocalNotesID(t *testing.T) {
	hub := testutil.BareHub(t)
	a := openSynced(t, t.TempDir(), "a", hub)
	n, path, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "mine", Body: "local heron notes", Scope: note.ScopeMachineLocal})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, a)
	forged := *n
	forged.Scope, forged.Body = note.ScopePortable, "forged pelican story"
	pushForeignNote(t, hub, "semantic/"+n.ID+".md", &forged)
	mustSync(t, a)
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after the sync")
	rep, err := a.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	holdsOwnNote(t, a, n.ID, path, "heron", "pelican", "after reindex --full")
	wantDuplicate(t, rep, n.ID, path, "memory/semantic/"+n.ID+".md", "rebuild")
}

// TestHandCopyOfANoteKeepsOutOfItsPlace: a copy made by hand, not yet
// committed, at a name that sorts first, is the duplicate whatever order
// the index sees the files in.
func TestHandCopyOfANoteKeepsOutOfItsPlace(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, path, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "orig", Body: "original heron"})
	if err != nil {
		t.Fatal(err)
	}
	cp := *n
	cp.Body = "copied pelican"
	copyPath := "memory/semantic/0-copy.md"
	if err := os.WriteFile(filepath.Join(home, copyPath), note.Marshal(&cp), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"reconcile", "rebuild", "reconcile again"} {
		var rep ReconcileReport
		if step == "rebuild" {
			rep, err = s.Rebuild(ctx)
		} else {
			rep, err = s.Reconcile(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		holdsOwnNote(t, s, n.ID, path, "heron", "pelican", step)
		wantDuplicate(t, rep, n.ID, path, copyPath, step)
	}
}

// TestNamedForRecognisesConflictCopies: a conflict copy's name carries
// its id's hash, so the rule can tell it from a file that only took its
// id; a note's own name is <id>.md.
func TestNamedForRecognisesConflictCopies(t *testing.T) {
	h := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	id := note.IDFromHash(h)
	if !namedFor(id, "memory/semantic/01ABC.conflict-deadbeef.md") {
		t.Errorf("conflict copy not recognised for %s", id)
	}
	if namedFor(id, "memory/semantic/01ABC.conflict-0eadbeef.md") || namedFor(id, "memory/semantic/other.md") {
		t.Error("a name without the id's hash taken for its own")
	}
	if !namedFor("01ABC", "local/episodic/01ABC.md") {
		t.Error("<id>.md not recognised")
	}
}
