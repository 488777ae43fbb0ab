package index

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// TestBulkPostingsLayout: a rebuild, which writes each token's chunks as
// they fill (held until they reach a budget, then written in order), stores exactly the rows that one Apply of the same notes
// into an empty index stores (postingEdits, which holds every list whole
// before it writes), for chunk sizes that cut lists in every way: a
// remainder of one entry, a remainder of a full chunk, none at all.
func TestBulkPostingsLayout(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	// Word i is drawn about 1/(i+1) as often as the first: some tokens are
	// in every note, most in a few.
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%dq", i)
	}
	text := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[int(float64(len(words))*r.Float64()*r.Float64()*r.Float64())] + " ")
		}
		return b.String()
	}
	var changes []Change
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 700; i++ {
		nt := note.New(note.TypeSemantic, text(1+r.Intn(4)), text(r.Intn(30)), start.Add(time.Duration(i)*time.Minute))
		nt.MachineID = "m"
		nt.Tags = strings.Fields(text(r.Intn(3)))
		changes = append(changes, changeFor(nt))
	}
	// The third number is the bytes of complete chunks the rebuild holds
	// before it writes them (0: the default, which this test never fills).
	for _, size := range [][3]int{{defaultChunkMax, defaultChunkTarget, 0}, {defaultChunkMax, defaultChunkTarget, 3000},
		{4, 2, 0}, {4, 2, 1}, {2, 1, 500}, {5, 2, 0}, {3, 2, 100}, {7, 3, 0}} {
		t.Run(fmt.Sprintf("%d/%d/%d", size[0], size[1], size[2]), func(t *testing.T) {
			bulk, merged := openTemp(t), openTemp(t)
			for _, ix := range []*Index{bulk, merged} {
				ix.chunkMax, ix.chunkTarget = size[0], size[1]
			}
			bulk.readyBudget = size[2]
			if _, err := bulk.Rebuild(ctx, changes); err != nil {
				t.Fatal(err)
			}
			if _, err := merged.Apply(ctx, changes); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				`SELECT term, first, n, last, hex(data) FROM index_postings ORDER BY term, first`,
				`SELECT term, df FROM index_df ORDER BY term`,
				`SELECT value FROM index_meta WHERE key = 'token_count'`,
			} {
				got, want := dumpRows(t, bulk, q), dumpRows(t, merged, q)
				if len(want) < 2 && !strings.Contains(q, "index_meta") {
					t.Fatalf("%s: only %d rows", q, len(want))
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: the rebuild wrote %d rows, the merge %d; first difference at %d", q, len(got), len(want), firstDiff(got, want))
				}
			}
			comparePostings(t, bulk)
		})
	}
}

func dumpRows(t *testing.T, ix *Index, q string) []string {
	t.Helper()
	rows, err := ix.db.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
