package index

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

// TestPrunedSearchEqualsSeed: Search must return exactly what the seed's
// unpruned query returns, in the same order, for common-word-heavy
// queries, prompt-like queries, filters, several k, near-duplicate notes
// (ties) and superseded notes.
func TestPrunedSearchEqualsSeed(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 800
	}
	ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	vocab := synth.NewVocab(5000, 7)
	g := synth.NewGen(vocab, 7)
	r := rand.New(rand.NewSource(7))
	var changes []Change
	var notes []*note.Note
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		nt := g.Note(start.Add(time.Duration(i) * time.Minute))
		if i%97 == 0 && i > 0 { // exact copy of an earlier note's text: a score tie
			prev := notes[r.Intn(len(notes))]
			nt.Title, nt.Body, nt.Tags = prev.Title, prev.Body, prev.Tags
		}
		if i%50 == 0 && i > 0 {
			nt.Supersedes = []string{notes[r.Intn(len(notes))].ID}
		}
		if i%7 == 0 {
			nt.Scope = note.ScopeMachineLocal
		}
		notes = append(notes, nt)
		changes = append(changes, changeFor(nt))
	}
	growIndex(t, ix, changes, 100)
	// Edits and deletes adjust the counts too.
	var edits []Change
	for i := 0; i < 40; i++ {
		c := changes[r.Intn(n)]
		nt := *c.Note
		nt.Body = g.Body()
		edits = append(edits, Change{File: c.File, Note: &nt})
	}
	for i := 0; i < 20; i++ {
		edits = append(edits, Change{File: changes[r.Intn(n)].File, Delete: true})
	}
	if _, err := ix.Apply(ctx, edits); err != nil {
		t.Fatal(err)
	}

	queries := 400
	if testing.Short() {
		queries = 100
	}
	var pruned, differ int
	for i := 0; i < queries; i++ {
		var q string
		switch i % 3 {
		case 0:
			q = g.Query() // Zipf words: mostly common
		case 1: // a prompt: function words around a few words of one note
			nt := notes[r.Intn(len(notes))]
			w := strings.Fields(nt.Body)
			q = "how do I " + w[r.Intn(len(w))] + " the " + w[r.Intn(len(w))] + " with " + w[r.Intn(len(w))] + " again"
		default:
			q = vocab[r.Intn(30)] + " " + vocab[r.Intn(30)] // only very common words
		}
		if i%4 == 3 {
			// snake_case is two FTS5 tokens in one phrase.
			// Two adjacent words of a note: the phrase matches it.
			w := strings.Fields(notes[r.Intn(len(notes))].Body)
			j := r.Intn(len(w) - 1)
			q += " " + strings.Trim(w[j], ".,") + "_" + strings.Trim(w[j+1], ".,")
		}
		f := Filter{Limit: []int{1, 3, 8, 20}[i%4]}
		switch i % 5 {
		case 1:
			f.Scope = note.ScopePortable
		case 2:
			f.Type = note.TypeEpisodic
		case 3:
			f.Project = fmt.Sprintf("github.com/example/project%02d", i%20)
		}
		got, err := ix.Search(ctx, q, f)
		if err != nil {
			t.Fatal(err)
		}
		fts, err := ftsSearchForTest(ix, q, f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ix.SeedSearch(ctx, q, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			hits []Hit
		}{{"postings", got}, {"fts5 pruned", fts}} {
			if strings.Join(ids(c.hits), ",") != strings.Join(ids(want), ",") {
				differ++
				if differ <= 3 {
					t.Errorf("query %q %+v:\n %s %v\n seed   %v", q, f, c.name, ids(c.hits), ids(want))
				}
			}
		}
		for j := range got {
			// The postings path computes FTS5's own float64.
			if j < len(want) && got[j].Score != want[j].Score {
				t.Errorf("query %q: score %v vs seed %v", q, got[j].Score, want[j].Score)
			}
		}
		if p, _ := planForTest(ix, q); p.dropped > 0 && len(p.kept) > 0 {
			pruned++
		}
	}
	if differ > 0 {
		t.Fatalf("%d of %d queries differ from the seed", differ, queries)
	}
	pc := ix.Paths()
	t.Logf("answered by %+v", pc)
	if pc.Postings != int64(queries) || pc.MaxScore == 0 || pc.Full == 0 {
		t.Errorf("paths %+v: the test must exercise the postings, FTS5 pruning and fallback", pc)
	}
	if pruned < queries/4 {
		t.Errorf("pruning applied to only %d of %d queries: the test does not exercise it", pruned, queries)
	}
}

// ftsSearchForTest runs Search's FTS5 path, which real queries reach only
// when the postings cannot answer.
func ftsSearchForTest(ix *Index, q string, f Filter) ([]Hit, error) {
	k := f.Limit
	if k <= 0 {
		k = DefaultK
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rowids, scores, err := ix.ftsRank(ctx, tx, wordRe().FindAllString(q, -1), f, k)
	if err != nil {
		return nil, err
	}
	rowids, scores, _ = trim(rowids, scores, k)
	hits, _, err := ix.load(ctx, tx, rowids)
	for i := range hits {
		hits[i].Score = scores[i]
	}
	return hits, err
}

func planForTest(ix *Index, q string) (queryPlan, error) {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return queryPlan{}, err
	}
	defer tx.Rollback()
	return ix.plan(ctx, tx, wordRe().FindAllString(q, -1))
}
