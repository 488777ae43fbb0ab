package index

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// readLists is every token's list as search reads it (its chunks in
// order, then its tail row) with its note count (index_df's and the tail
// row's), whatever table holds them. Three scans: a query per token made
// the test take minutes under the race detector.
func readLists(t *testing.T, ix *Index) map[string]string {
	t.Helper()
	type list struct {
		df      int64
		entries strings.Builder
	}
	lists := map[string]*list{}
	get := func(term string) *list {
		l, ok := lists[term]
		if !ok {
			l = &list{}
			lists[term] = l
		}
		return l
	}
	scan := func(q string, each func(term string, n int64, data []byte)) {
		rows, err := ix.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var term string
			var n int64
			var data []byte
			if err := rows.Scan(&term, &n, &data); err != nil {
				t.Fatal(err)
			}
			each(term, n, data)
		}
	}
	addEntries := func(term string, _ int64, data []byte) {
		ps, err := decodePostings(data, nil)
		if err != nil {
			t.Fatalf("%q: %v", term, err)
		}
		l := get(term)
		for _, p := range ps {
			fmt.Fprintf(&l.entries, " %d/%d/%d", p.rowid, p.tf, p.dl)
		}
	}
	scan(`SELECT term, first, data FROM index_postings ORDER BY term, first`, addEntries)
	scan(`SELECT term, n, data FROM index_tail`, func(term string, n int64, data []byte) {
		addEntries(term, n, data)
		get(term).df += n
	})
	scan(`SELECT term, df, x'' FROM index_df`, func(term string, df int64, _ []byte) { get(term).df += df })
	out := make(map[string]string, len(lists))
	for term, l := range lists {
		out[term] = fmt.Sprintf("df %d:%s", l.df, l.entries.String())
	}
	return out
}

// rankedAsSeed fails the test unless search ranks q's top five as the
// seed query does.
func rankedAsSeed(t *testing.T, ix *Index, q string) {
	t.Helper()
	got, err := ix.Search(ctx, q, Filter{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ix.SeedSearch(ctx, q, Filter{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("%q: %v, the seed %v", q, ids(got), ids(want))
	}
}

func tailRows(t *testing.T, ix *Index) int64 {
	t.Helper()
	var n int64
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_tail`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTailMatchesChunksAlone: the same random batches (editScript, and
// some larger than a statement takes) on an
// index that appends in place and one with the tail of a large store,
// whose rows fold back early (few rows kept, small chunks): after every
// batch each token's list as search reads it and its note count are the
// same, the tail stays within its rows, and both agree with FTS5.
func TestTailMatchesChunksAlone(t *testing.T) {
	seeds := int64(4)
	if testing.Short() {
		seeds = 1 // make race runs -short; a seed is about a minute there
	}
	for seed := int64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			dir := t.TempDir()
			var ixs [2]*Index
			for i := range ixs {
				ix, _, err := Open(ctx, filepath.Join(dir, fmt.Sprintf("index%d.db", i)), Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ix.Close() })
				ix.chunkMax, ix.chunkTarget = 8, 3
				ixs[i] = ix
			}
			tailed := ixs[1]
			tailed.tailFrom, tailed.tailRows = 0, 40
			script := newEditScript(seed)
			initial := script.initial(30)
			for _, ix := range ixs {
				if _, err := ix.Rebuild(ctx, initial); err != nil {
					t.Fatal(err)
				}
			}
			var routes [4]int
			most := int64(0)
			for batch := 0; batch < 40; batch++ {
				size := 1 + script.r.Intn(12)
				if batch%10 == 9 {
					size = 150 + script.r.Intn(100)
				}
				changes := script.batch(size)
				if _, err := ixs[0].Apply(ctx, changes); err != nil {
					t.Fatal(err)
				}
				post := newPostingEdits()
				if _, err := tailed.inTx(ctx, changes, post); err != nil {
					t.Fatal(err)
				}
				for i, n := range post.routes {
					routes[i] += n
				}
				want, got := readLists(t, ixs[0]), readLists(t, tailed)
				for term, l := range want {
					if got[term] != l {
						t.Fatalf("batch %d: %q is %s with the tail, %s without", batch, term, got[term], l)
					}
				}
				if len(got) != len(want) {
					t.Fatalf("batch %d: %d tokens with the tail, %d without", batch, len(got), len(want))
				}
				n := tailRows(t, tailed)
				if n > tailed.tailRows {
					t.Fatalf("batch %d: %d tail rows, more than %d", batch, n, tailed.tailRows)
				}
				most = max(most, n)
			}
			comparePostings(t, tailed)
			rep, err := tailed.CheckPostings(ctx)
			if err != nil || rep.Differ != 0 || !rep.TotalOK {
				t.Fatalf("CheckPostings with the tail: %+v, %v", rep, err)
			}
			for _, q := range []string{"alpha w3 w7", "café straße w12", "beta"} {
				rankedAsSeed(t, tailed, q)
			}
			t.Logf("tokens appended in place, new, merged, to the tail: %v; at most %d tail rows", routes, most)
			if routes[routeTail] == 0 || routes[routeMerge] == 0 || most < tailed.tailRows/2 {
				t.Fatalf("routes %v, at most %d tail rows: the batches do not exercise the tail and its folds", routes, most)
			}
		})
	}
}

// TestPullAppendsToTheTailAlone: in a large store, indexing new notes
// writes the tokens' tail rows and leaves their chunks and note counts as
// they were (the point: a pull rewrites a small table's pages, not one
// page of index_postings per token); the first edit of such a note folds
// its tokens back. Search ranks as FTS5 throughout.
func TestPullAppendsToTheTailAlone(t *testing.T) {
	ix := openTemp(t)
	ix.tailFrom = 100
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	mk := func(i int) Change {
		nt := note.New(note.TypeSemantic, fmt.Sprintf("heron note %d", i),
			fmt.Sprintf("the heron stood in reeds %d and waited; river%d bank%d", i%7, i%11, i), start.Add(time.Duration(i)*time.Minute))
		nt.MachineID = "m"
		return changeFor(nt)
	}
	var changes []Change
	for i := 0; i < 150; i++ {
		changes = append(changes, mk(i))
	}
	if _, err := ix.Rebuild(ctx, changes[:99]); err != nil {
		t.Fatal(err)
	}
	// 99 notes: below tailFrom, appended in place.
	if _, err := ix.Apply(ctx, changes[99:100]); err != nil {
		t.Fatal(err)
	}
	if n := tailRows(t, ix); n != 0 {
		t.Fatalf("a store below tailFrom started %d tail rows", n)
	}
	before := readPostingRows(t, ix)
	if _, err := ix.Apply(ctx, changes[100:]); err != nil {
		t.Fatal(err)
	}
	after := readPostingRows(t, ix)
	if !slices.Equal(before.chunks, after.chunks) || !slices.Equal(before.df, after.df) {
		t.Fatalf("indexing new notes into a large store rewrote chunks or note counts:\n%s\n%s", strings.Join(before.df, " "), strings.Join(after.df, " "))
	}
	if n := tailRows(t, ix); n < 50 {
		t.Fatalf("%d tail rows after 50 new notes with a token of their own each", n)
	}
	comparePostings(t, ix)
	var inTail int64
	ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_tail WHERE term IN ('heron', 'bank120')`).Scan(&inTail)
	if inTail != 2 {
		t.Fatalf("%d of heron and bank120 have a tail row, want 2", inTail)
	}
	// An edit of a note in the tail drops its entries there: the
	// token's row goes back to its chunks first.
	edited := changes[120]
	nt := *edited.Note
	nt.Body = "no more birds here"
	if _, err := ix.Apply(ctx, []Change{{File: edited.File, Note: &nt}}); err != nil {
		t.Fatal(err)
	}
	ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_tail WHERE term IN ('heron', 'bank120')`).Scan(&inTail)
	if inTail != 0 {
		t.Fatalf("%d of heron and bank120 still have a tail row after the edit dropped them", inTail)
	}
	comparePostings(t, ix)
	for _, q := range []string{"heron river3", "bank140 reeds", "birds"} {
		rankedAsSeed(t, ix, q)
	}
}
