package anamnesis

import (
	"fmt"
	"slices"
	"testing"
)

// The case: two session notes that only repeat a question ranked
// above the durable note that holds the answer. The answer comes first
// now, in search and in prompt recall.
func TestSessionNotesNeverOutrankTheNoteTheyEcho(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	answer, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Walrus cache size",
		Body: "The walrus cache for the ingest workers needs 512 MB; smaller sizes thrash."})
	if err != nil {
		t.Fatal(err)
	}
	var echoes []string
	for i := 0; i < 2; i++ {
		n, _, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "how big should the walrus cache be?",
			Body: "**Ask:** how big should the walrus cache be?", ProvSession: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		echoes = append(echoes, n.ID)
	}
	// A session note with a word the durable note lacks keeps its rank.
	own, _, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "walrus cache resized on the staging box", Body: "staging walrus"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, "walrus", Filter{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(hs []Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ID)
		}
		return out
	}
	got := ids(hits)
	a := slices.Index(got, answer.ID)
	for _, e := range echoes {
		if i := slices.Index(got, e); a < 0 || i < a {
			t.Errorf("search walrus: echo %s at %d above the answer at %d: %v", e, i, a, got)
		}
	}
	recalled, err := s.Recall(ctx, "how big should the walrus cache be for ingest?", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(recalled) == 0 || recalled[0].ID != answer.ID {
		t.Errorf("prompt recall: answer not first: %v (answer %s)", ids(recalled), answer.ID)
	}
	hits, _ = s.Search(ctx, "staging walrus", Filter{})
	if len(hits) == 0 || hits[0].ID != own.ID {
		t.Errorf("a session note with its own words was demoted: %v", ids(hits))
	}
}

// Prompt recall from 1 note up: in a small store a question asked once
// (and echoed by its session note) still recalls its answer, and a word
// in most notes recalls nothing.
func TestRecallInSmallStores(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	answer, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "Walrus cache size", Body: "The walrus cache needs 512 MB."})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Recall(ctx, "how big is the walrus cache?", 3); err != nil || len(got) != 1 || got[0].ID != answer.ID {
		t.Fatalf("one-note store: %v %v", got, err)
	}
	for i := 0; i < 19; i++ {
		if _, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: fmt.Sprintf("deploy step %d", i), Body: "the deploy runs make ship"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "how big is the walrus cache?", Body: "asked about the walrus cache", ProvSession: "q1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recall(ctx, "remind me how big the walrus cache is", 3)
	if err != nil || len(got) == 0 || got[0].ID != answer.ID {
		t.Errorf("21-note store after the question was asked once: %v %v", got, err)
	}
	if got, _ := s.Recall(ctx, "run the deploy again", 3); len(got) != 0 {
		t.Errorf("words in most notes recalled %d notes", len(got))
	}
}
