package anamnesis

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A note written on one machine and edited on another has three versions
// in the history (written, edited, edited again), each naming its
// machine, newest first; the walk ends at the commit that added it. The
// fleet lists both machines with their notes and a merge for the one
// that merged.
func TestHistoryAndFleet(t *testing.T) {
	a, b := machines(t)
	n, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Canary", Body: "The canary runs 30 minutes.", Project: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Other", Body: "Unrelated.", Project: "app"}); err != nil {
		t.Fatal(err)
	}
	// b commits before it ever saw the note: a line of history without
	// the file, which is no version of it (it was once shown as a
	// deletion).
	if _, _, err := b.Write(ctx, WriteRequest{Type: "semantic", Title: "Laptop first", Body: "z"}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b)
	m, _, err := b.Get(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	m.Body = "The canary runs 45 minutes."
	if _, err := b.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Write(ctx, WriteRequest{Type: "procedural", Title: "Laptop note", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	m.Body = "The canary runs 60 minutes."
	if _, err := b.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	h, err := b.History(ctx, n.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Complete || len(h.Versions) != 3 {
		t.Fatalf("history: complete %v, %d versions, want complete and 3: %+v", h.Complete, len(h.Versions), h.Versions)
	}
	wantBody := []string{"60 minutes", "45 minutes", "30 minutes"}
	wantMachine := []string{"laptop", "laptop", "desk"}
	for i, v := range h.Versions {
		if !strings.Contains(v.Content, wantBody[i]) || v.Machine != wantMachine[i] || v.Deleted {
			t.Errorf("version %d: machine %q, content %q; want %q with %q", i, v.Machine, v.Content, wantMachine[i], wantBody[i])
		}
	}
	// A bound on the walk is honoured and reported.
	if h, err := b.History(ctx, n.ID, 1); err != nil || h.Complete || len(h.Versions) != 1 || h.Scanned != 1 {
		t.Errorf("History(max 1) = %d versions, complete %v, scanned %d, %v", len(h.Versions), h.Complete, h.Scanned, err)
	}

	mustSync(t, b, a) // a merges nothing new of its own; b's commits arrive
	if _, _, err := a.Write(ctx, WriteRequest{Type: "semantic", Title: "Desk again", Body: "y"}); err != nil {
		t.Fatal(err)
	}
	m.Body = "The canary runs 90 minutes."
	if _, err := b.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b) // b now merges a's new commit with its own
	fleet, complete, err := b.Fleet(ctx, 0)
	if err != nil || !complete {
		t.Fatalf("Fleet: complete %v, %v", complete, err)
	}
	by := map[string]MachineActivity{}
	for _, f := range fleet {
		by[f.Machine] = f
	}
	if d := by["desk"]; d.Notes != 3 || d.Commits < 3 || d.LastCommit == "" || d.This {
		t.Errorf("desk: %+v", d)
	}
	if l := by["laptop"]; l.Notes != 2 || !l.This || l.LastMerge == "" || l.LastCommit < by["desk"].LastCommit {
		t.Errorf("laptop: %+v (desk %+v)", l, by["desk"])
	}
}

// Keyset paging visits every note once, in List's order, whatever the
// page size, including notes that share an updated_at.
func TestListBeforePages(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	for i := 0; i < 23; i++ {
		if i%3 == 0 {
			clock = clock.Add(time.Second) // the others share a timestamp
		}
		if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "n", Body: "b", Scope: "machine-local"}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	f := Filter{Limit: 5}
	for {
		page, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, hitIDs(page)...)
		last := page[len(page)-1]
		f.Before = &Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	if !slices.Equal(got, hitIDs(all)) {
		t.Errorf("paged listing\n %v\nwant\n %v", got, hitIDs(all))
	}
	if n, err := s.Count(ctx, Filter{Before: f.Before, Limit: 3}); err != nil || n != 23 {
		t.Errorf("Count ignores Before and Limit: %d, %v", n, err)
	}
}

func TestSupersededByAndFacets(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	old, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "old", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	nw, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "new", Body: "b", Supersedes: []string{old.ID}})
	if err != nil {
		t.Fatal(err)
	}
	by, err := s.SupersededBy(ctx, []string{old.ID, nw.ID})
	if err != nil || !slices.Equal(by[old.ID], []string{nw.ID}) || len(by[nw.ID]) != 0 {
		t.Errorf("SupersededBy = %v, %v", by, err)
	}
	f, err := s.Facets(ctx)
	if err != nil || f.Total != 2 || f.ByMachine["testbox"] != 2 || f.BySource["human"] != 2 || f.ByType["semantic"] != 2 {
		t.Errorf("Facets = %+v, %v", f, err)
	}
	if n, err := s.Count(ctx, Filter{MachineID: "elsewhere"}); err != nil || n != 0 {
		t.Errorf("Count(machine elsewhere) = %d, %v", n, err)
	}
}
