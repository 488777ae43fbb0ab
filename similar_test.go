package anamnesis

import (
	"context"
	"slices"
	"testing"

	"github.com/anamnesis-memory/anamnesis/index"
)

func TestTitleSimilarity(t *testing.T) {
	for _, c := range []struct {
		a, b     string
		min, max float64
	}{
		{"Widget deploys with Fly.io", "Widget deploys with Render", 0.5, 0.6},
		{"Widget deploys with Fly.io", "widget deploy with fly.io", 1, 1},
		{"How do we deploy", "Lunch is at noon", 0, 0},
		{"", "x", 0, 0},
	} {
		if got := TitleSimilarity(c.a, c.b); got < c.min || got > c.max {
			t.Errorf("TitleSimilarity(%q, %q) = %v, want %v..%v", c.a, c.b, got, c.min, c.max)
		}
	}
}

// Session start and search mark two live versions of one fact until one
// supersedes the other (issue 25).
func TestSameFactMarkedUntilSuperseded(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "m", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := func(title string, sup ...string) string {
		n, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: title, Body: "b", Project: "widget", Supersedes: sup})
		if err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	fly, render := w("Widget deploys with Fly.io"), w("Widget deploys with Render")
	w("Lunch is at noon")
	marked := func(hits []index.Hit) map[string][]string {
		out := map[string][]string{}
		for _, h := range hits {
			if len(h.LooksLike) > 0 {
				out[h.ID] = h.LooksLike
			}
		}
		return out
	}
	notes, _, _, err := s.Inject(ctx, "widget", 40)
	if err != nil {
		t.Fatal(err)
	}
	if m := marked(notes); len(m) != 2 || !slices.Equal(m[fly], []string{render}) || !slices.Equal(m[render], []string{fly}) {
		t.Errorf("inject marks %v", m)
	}
	hits, err := s.Search(ctx, "widget deploys", index.Filter{Limit: 8})
	if err != nil {
		t.Fatal(err)
	}
	if m := marked(hits); len(m) != 2 {
		t.Errorf("search marks %v", m)
	}
	w("Widget deploys with Render", render, fly)
	notes, _, _, _ = s.Inject(ctx, "widget", 40)
	if m := marked(notes); len(m) != 0 {
		t.Errorf("still marked after supersedes: %v", m)
	}
}

// Function words never decide rank 1 in a young store (issue 25): "how"
// and "do" are in as few notes as the subject there.
func TestFunctionWordsDoNotDecideRankOne(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "m", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deploy, _, err := s.Write(ctx, WriteRequest{Type: "procedural", Title: "Shipping the widget", Body: "Run make ship to deploy the widget to production."})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []WriteRequest{
		{Type: "semantic", Title: "How do we do reviews", Body: "How do we do it? We do it how we always do: two approvals."},
		{Type: "semantic", Title: "Lunch", Body: "Noon, the usual place."},
	} {
		if _, _, err := s.Write(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"how do I deploy", "How do we deploy?"} {
		hits, err := s.Search(ctx, q, index.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].ID != deploy.ID {
			t.Errorf("%q: rank 1 is %v, want the deploy note", q, hits)
		}
	}
	if got := contentQuery("how do we do"); got != "how do we do" {
		t.Errorf("a query of function words only became %q", got)
	}
}

// Writing the same note twice (with Once, as write and memory_write do)
// makes one note (issue 25).
func TestSameNoteTwiceIsOneNote(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "m", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := WriteRequest{Type: "semantic", Title: "Widget deploys with Render", Body: "render deploy", Project: "widget", Once: true}
	a, pa, err := s.Write(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b, pb, err := s.Write(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || pa != pb {
		t.Errorf("two notes: %s %s, %s %s", a.ID, pa, b.ID, pb)
	}
	req.Body = "render deploy, from main"
	if c, _, err := s.Write(ctx, req); err != nil || c.ID == a.ID {
		t.Errorf("a different body was taken for the same note: %v", err)
	}
	if n, err := s.Count(ctx, index.Filter{Project: "widget"}); err != nil || n != 2 {
		t.Errorf("%d notes, %v", n, err)
	}
}
