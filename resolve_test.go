package anamnesis

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// machines opens two homes (two machines) sharing a bare hub.
func machines(t *testing.T) (a, b *Store) {
	t.Helper()
	hub := testutil.BareHub(t)
	open := func(machine string) *Store {
		s, err := Open(ctx, t.TempDir(), Options{MachineID: machine, Remote: hub, Create: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open("desk"), open("laptop")
}

func mustSync(t *testing.T, ss ...*Store) {
	t.Helper()
	for _, s := range ss {
		if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// canaryEditedOnBoth writes a note on a, syncs it to b, and edits the
// same line of it on each machine, not yet synced: the next sync forks it.
func canaryEditedOnBoth(t *testing.T) (a, b *Store, n *note.Note) {
	t.Helper()
	a, b = machines(t)
	n, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Canary duration", Body: "The canary runs 30 minutes.", Project: "app"})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b)
	edit := func(s *Store, body string) {
		t.Helper()
		m, _, err := s.Get(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		m.Body = body
		if _, err := s.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	edit(a, "The canary runs 45 minutes.")
	edit(b, "The canary runs 60 minutes.")
	return a, b, n
}

// Two machines edit the same line of one note: the sync keeps both (a
// conflict copy), the index knows the copy's conflict_of, Inject shows the
// copy right after its note, and Resolve keeps one version, removes the
// copy and commits.
func TestConflictCopyShownAndResolved(t *testing.T) {
	a, b, n := canaryEditedOnBoth(t)
	mustSync(t, a, b)
	cs, err := b.Conflicts(ctx)
	if err != nil || len(cs) != 1 || cs[0].ID != n.ID || len(cs[0].Copies) != 1 {
		t.Fatalf("conflicts on b: %+v %v", cs, err)
	}
	cp := cs[0].Copies[0]
	notes, _, _, err := b.Inject(ctx, "app", 40)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range notes {
		order = append(order, h.ID)
		if h.ID == cp && h.ConflictOf != n.ID {
			t.Errorf("the copy's conflict_of is not indexed: %q", h.ConflictOf)
		}
	}
	if i := slices.Index(order, n.ID); i < 0 || i+1 >= len(order) || order[i+1] != cp {
		t.Errorf("the copy does not follow its note: %v (note %s, copy %s)", order, n.ID, cp)
	}
	if _, err := b.Resolve(ctx, cp, Resolution{}); err == nil {
		t.Error("Resolve without a choice must ask which version to keep")
	}
	rep, err := b.Resolve(ctx, cp, Resolution{Keep: cp})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kept != n.ID || !slices.Equal(rep.Removed, []string{cp}) {
		t.Errorf("report %+v", rep)
	}
	kept, _, err := b.Get(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	copyBody := "The canary runs 45 minutes."
	if !strings.Contains(kept.Body, "45") && !strings.Contains(kept.Body, "60") {
		t.Errorf("kept body %q", kept.Body)
	}
	_ = copyBody
	if _, _, err := b.Get(ctx, cp); err == nil {
		t.Error("the copy is still there")
	}
	if cs, _ := b.Conflicts(ctx); len(cs) != 0 {
		t.Errorf("still in conflict: %+v", cs)
	}
	if out := testutil.Git(t, filepath.Join(b.Home(), "memory"), "status", "--porcelain"); len(out) != 0 {
		t.Errorf("resolution not committed: %s", out)
	}
	mustSync(t, b, a)
	if cs, _ := a.Conflicts(ctx); len(cs) != 0 {
		t.Errorf("the other machine still sees the conflict after a sync: %+v", cs)
	}
	ka, _, _ := a.Get(ctx, n.ID)
	if ka == nil || ka.Body != kept.Body {
		t.Errorf("machines disagree after resolving: %v vs %q", ka, kept.Body)
	}
}

// Two machines supersede the same note: both successors are live, and
// Conflicts flags them; keeping one supersedes the other.
func TestTwoSuccessorsFlaggedAndResolved(t *testing.T) {
	a, b := machines(t)
	old, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Deploy day", Body: "Tuesday"})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b)
	na, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Deploy day", Body: "Wednesday", Supersedes: []string{old.ID}})
	if err != nil {
		t.Fatal(err)
	}
	nb, _, err := b.Write(ctx, WriteRequest{Type: "semantic", Title: "Deploy day", Body: "Thursday", Supersedes: []string{old.ID}})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b, a)
	cs, err := a.Conflicts(ctx)
	if err != nil || len(cs) != 1 || cs[0].Replaces != old.ID {
		t.Fatalf("fork not flagged: %+v %v", cs, err)
	}
	if got := append([]string{cs[0].ID}, cs[0].Rivals...); !slices.Contains(got, na.ID) || !slices.Contains(got, nb.ID) {
		t.Errorf("fork lists %v, want %s and %s", got, na.ID, nb.ID)
	}
	rep, err := a.Resolve(ctx, old.ID, Resolution{Keep: nb.ID})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kept != nb.ID || !slices.Equal(rep.Superseded, []string{na.ID}) {
		t.Errorf("report %+v", rep)
	}
	if cs, _ := a.Conflicts(ctx); len(cs) != 0 {
		t.Errorf("still forked: %+v", cs)
	}
	hits, _ := a.Search(ctx, "deploy day", Filter{})
	if len(hits) != 1 || hits[0].ID != nb.ID {
		t.Errorf("search after resolving: %v", hits)
	}
}

// A conflict copy names the machine that made its version and the one
// whose version the note kept (issue 25), the same on both machines.
func TestConflictCopyNamesEachVersionsMachine(t *testing.T) {
	a, b, n := canaryEditedOnBoth(t)
	mustSync(t, a, b, a)
	for _, s := range []*Store{a, b} {
		cs, err := s.Conflicts(ctx)
		if err != nil || len(cs) != 1 || len(cs[0].Copies) != 1 {
			t.Fatalf("conflicts: %+v %v", cs, err)
		}
		cp, _, err := s.Get(ctx, cs[0].Copies[0])
		if err != nil {
			t.Fatal(err)
		}
		kept, _, err := s.Get(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		made, _ := cp.ExtraValue("conflict_machine")
		keptBy, _ := cp.ExtraValue("conflict_of_machine")
		want := map[string]string{"The canary runs 45 minutes.": "desk", "The canary runs 60 minutes.": "laptop"}
		if made != want[strings.TrimSpace(cp.Body)] || keptBy != want[strings.TrimSpace(kept.Body)] || made == keptBy {
			t.Errorf("%s: copy %q made by %q, note %q kept by %q", s.MachineID(), cp.Body, made, kept.Body, keptBy)
		}
	}
}
