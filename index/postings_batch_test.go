package index

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// postingRows is every row of index_postings and index_df and the token
// and note totals, as stored (the blob's SQLite type included).
type postingRows struct {
	chunks []string
	data   [][]byte
	df     []string
	meta   string
}

func readPostingRows(t *testing.T, ix *Index) postingRows {
	t.Helper()
	var out postingRows
	rows, err := ix.db.QueryContext(ctx, `SELECT term, first, n, last, typeof(data), data FROM index_postings ORDER BY term, first`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term, typ string
		var first, n, last int64
		var data []byte
		if err := rows.Scan(&term, &first, &n, &last, &typ, &data); err != nil {
			rows.Close()
			t.Fatal(err)
		}
		out.chunks = append(out.chunks, fmt.Sprintf("%q %d %d %d %s", term, first, n, last, typ))
		out.data = append(out.data, data)
	}
	rows.Close()
	rows, err = ix.db.QueryContext(ctx, `SELECT term, df FROM index_df ORDER BY term`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term string
		var df int64
		if err := rows.Scan(&term, &df); err != nil {
			rows.Close()
			t.Fatal(err)
		}
		out.df = append(out.df, fmt.Sprintf("%q %d", term, df))
	}
	rows.Close()
	var tokens, docs string
	if err := ix.db.QueryRowContext(ctx, `SELECT (SELECT value FROM index_meta WHERE key = ?), (SELECT value FROM index_meta WHERE key = ?)`,
		metaTokenCount, metaDocCount).Scan(&tokens, &docs); err != nil {
		t.Fatal(err)
	}
	out.meta = tokens + " tokens, " + docs + " notes"
	return out
}

// diffPostingRows reports the first difference between got and want.
func diffPostingRows(got, want postingRows) string {
	if got.meta != want.meta {
		return fmt.Sprintf("totals %s, token by token %s", got.meta, want.meta)
	}
	for i := 0; i < max(len(got.chunks), len(want.chunks)); i++ {
		switch {
		case i >= len(got.chunks):
			return "chunk missing: " + want.chunks[i]
		case i >= len(want.chunks):
			return "extra chunk: " + got.chunks[i]
		case got.chunks[i] != want.chunks[i]:
			return fmt.Sprintf("chunk %s, token by token %s", got.chunks[i], want.chunks[i])
		case !bytes.Equal(got.data[i], want.data[i]):
			return fmt.Sprintf("chunk %s: data %x, token by token %x", got.chunks[i], got.data[i], want.data[i])
		}
	}
	for i := 0; i < max(len(got.df), len(want.df)); i++ {
		switch {
		case i >= len(got.df):
			return "df missing: " + want.df[i]
		case i >= len(want.df):
			return "extra df: " + got.df[i]
		case got.df[i] != want.df[i]:
			return fmt.Sprintf("df %s, token by token %s", got.df[i], want.df[i])
		}
	}
	return ""
}

// TestBatchedMergeMatchesTokenByToken applies the same random batches to
// two indexes, one through Apply and one through the token-by-token
// merge Apply used before (postings_old_test.go), and requires the same
// rows byte for byte after every batch: new notes (tokens new to the
// store among them, some in more notes than a chunk holds), edits, an
// edit applied twice, deletes, a delete undone in the batch, and now and
// then a deleted note's id back on a new file. Edits re-index a note
// under its rowid, below its tokens' last entries. Chunk sizes are small
// so that appends fill and split chunks; every eighth batch holds more
// tokens than one batched statement takes.
func TestBatchedMergeMatchesTokenByToken(t *testing.T) {
	sizes := [][2]int{{4, 2}, {8, 3}, {16, 8}, {defaultChunkMax, defaultChunkTarget}}
	seeds := int64(8)
	if testing.Short() {
		seeds = int64(len(sizes)) // each chunk size once: two minutes under make race otherwise
	}
	for seed := int64(1); seed <= seeds; seed++ {
		size := sizes[int(seed)%len(sizes)]
		t.Run(fmt.Sprintf("seed%d-chunk%d", seed, size[0]), func(t *testing.T) {
			batchedMergeRounds(t, seed, size[0], size[1])
		})
	}
}

func batchedMergeRounds(t *testing.T, seed int64, chunkMax, chunkTarget int) {
	dir := t.TempDir()
	var ixs [2]*Index
	for i := range ixs {
		ix, _, err := Open(ctx, filepath.Join(dir, fmt.Sprintf("index%d.db", i)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		ix.chunkMax, ix.chunkTarget = chunkMax, chunkTarget
		ixs[i] = ix
	}
	script := newEditScript(seed)
	initial := script.initial(20 + script.r.Intn(40))
	for _, ix := range ixs {
		if _, err := ix.Rebuild(ctx, initial); err != nil {
			t.Fatal(err)
		}
	}
	var routes [3]int
	for batch := 0; batch < 25; batch++ {
		size := 1 + script.r.Intn(30)
		if batch%8 == 7 { // more tokens than one statement takes
			size = 150 + script.r.Intn(150)
		}
		changes := script.batch(size)
		batched := newPostingEdits()
		if _, err := ixs[0].inTx(ctx, changes, batched); err != nil {
			t.Fatal(err)
		}
		for i, n := range batched.routes[:3] { // a small store has no tail
			routes[i] += n
		}
		if _, err := ixs[1].inTx(ctx, changes, oldPostingEdits{newPostingEdits()}); err != nil {
			t.Fatal(err)
		}
		if d := diffPostingRows(readPostingRows(t, ixs[0]), readPostingRows(t, ixs[1])); d != "" {
			t.Fatalf("batch %d: %s", batch, d)
		}
	}
	comparePostings(t, ixs[0])
	t.Logf("tokens appended to, new, merged: %v", routes)
	for i, n := range routes {
		if n < 20 {
			t.Errorf("route %d taken %d times: the batches do not exercise it", i, n)
		}
	}
}

// editScript makes random batches of note changes the way a store meets
// them: new notes (tokens new to the store among their words, and words
// in more notes than a chunk holds), edits, an edit applied twice in one
// batch, deletes, a delete undone in the batch, and now and then a
// deleted note's id back on a new file. Edits re-index a note under its
// rowid, below its tokens' last entries.
type editScript struct {
	r      *rand.Rand
	common []string
	fresh  int // tokens made new so far
	at     int // minutes after start of the next new note
	live   map[string]Change
	ids    []string
}

func newEditScript(seed int64) *editScript {
	return &editScript{r: rand.New(rand.NewSource(seed)), live: map[string]Change{},
		common: strings.Fields("alpha beta gamma delta epsilon zeta eta theta café naïve_test straße")}
}

func (s *editScript) text() string {
	var b strings.Builder
	for i, n := 0, 1+s.r.Intn(14); i < n; i++ {
		switch k := s.r.Intn(10); {
		case k < 5:
			b.WriteString(s.common[s.r.Intn(len(s.common))])
		case k < 8:
			fmt.Fprintf(&b, "w%d", s.r.Intn(40+s.fresh))
		default: // a token no note had so far
			s.fresh++
			fmt.Fprintf(&b, "w%d", 40+s.fresh)
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func (s *editScript) note() Change {
	s.at++
	nt := note.New(note.TypeSemantic, s.text(), s.text(), time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s.at)*time.Minute))
	nt.MachineID = "m"
	return changeFor(nt)
}

// initial is n new notes, live from now on.
func (s *editScript) initial(n int) []Change {
	var out []Change
	for i := 0; i < n; i++ {
		c := s.note()
		s.live[c.Note.ID], s.ids = c, append(s.ids, c.Note.ID)
		out = append(out, c)
	}
	return out
}

// batch is about size random changes.
func (s *editScript) batch(size int) []Change {
	var changes []Change
	for i := 0; i < size; i++ {
		switch op := s.r.Intn(10); {
		case op < 5 || len(s.ids) == 0:
			changes = append(changes, s.initial(1)...)
		case op < 7:
			c, ok := s.live[s.ids[s.r.Intn(len(s.ids))]]
			if !ok {
				continue
			}
			for j := 0; j <= s.r.Intn(2); j++ {
				nt := *c.Note
				nt.Body = s.text()
				c = Change{File: c.File, Note: &nt}
				changes = append(changes, c)
			}
			s.live[c.Note.ID] = c
		case op < 9:
			id := s.ids[s.r.Intn(len(s.ids))]
			c, ok := s.live[id]
			if !ok {
				continue
			}
			changes = append(changes, Change{File: c.File, Delete: true})
			delete(s.live, id)
			if s.r.Intn(2) == 0 {
				changes = append(changes, c)
				s.live[id] = c
			}
		default: // a deleted note's id comes back in a new note
			for _, id := range s.ids {
				if _, ok := s.live[id]; !ok {
					nt := *s.note().Note
					nt.ID = id
					c := changeFor(&nt)
					s.live[id] = c
					changes = append(changes, c)
					break
				}
			}
		}
	}
	return changes
}

// The batched statements find each token's rows by primary key: a scan
// of index_postings or index_df would cost as much as the store is big.
func TestBatchedMergePlans(t *testing.T) {
	ix := openTemp(t)
	for _, c := range []struct{ name, sql, want string }{
		{"last chunks", lastChunksSQL(3), "SEARCH p USING PRIMARY KEY (term=? AND first=?)"},
		{"appends", appendsSQL(3), "SEARCH p USING PRIMARY KEY (term=? AND first=?)"},
		{"move df", moveDFSQL(3), "SCAN 3-ROW VALUES CLAUSE"},
		{"drop df", dropDFSQL(3), "SEARCH index_df USING PRIMARY KEY (term=?)"},
		{"tail rows", tailRowsSQL(3), "SEARCH index_tail USING PRIMARY KEY (term=?)"},
		{"tail appends", tailAppendsSQL(3), "SEARCH t USING PRIMARY KEY (term=?)"},
		{"note count", dfSQL, "SEARCH index_tail USING PRIMARY KEY (term=?)"},
		{"note count", dfSQL, "SEARCH index_df USING PRIMARY KEY (term=?)"},
	} {
		args := make([]any, strings.Count(c.sql, "?"))
		for i := range args {
			args[i] = "x"
		}
		plan := sqlitePlan(t, ix, c.name, c.sql, args...)
		if !strings.Contains(plan, c.want) || strings.Contains(plan, "SCAN p") || strings.Contains(plan, "SCAN index_") {
			t.Errorf("%s: plan %q, want %q and no scan of a table", c.name, plan, c.want)
		}
	}
	if plan := sqlitePlan(t, ix, "last chunks", lastChunksSQL(3), "a", "b", "c"); !strings.Contains(plan, "SEARCH index_postings USING PRIMARY KEY (term=?)") {
		t.Errorf("last chunks: the last key is not looked up by term: %q", plan)
	}
}

// countingSink counts the statements the postings merge runs.
type countingSink struct {
	postingSink
	statements int
}

func (s *countingSink) write(a *applier) error {
	before := a.statements
	err := s.postingSink.write(a)
	s.statements += a.statements - before
	return err
}

// Merging the postings of a batch costs a few statements per hundred
// tokens, not several per token: a pull of 1,000 notes touches some
// 15,000 (issue #29). Nor does a token in every note of the batch, whose
// last chunk fills, read that chunk once per note.
func TestPostingMergeStatements(t *testing.T) {
	ix := openTemp(t)
	ix.chunkMax, ix.chunkTarget = 64, 32
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	batch := func(from, n int) []Change {
		var changes []Change
		for i := from; i < from+n; i++ {
			var b strings.Builder
			for j := 0; j < 20; j++ {
				fmt.Fprintf(&b, "shared%d own%dx%d ", j, i, j)
			}
			nt := note.New(note.TypeSemantic, fmt.Sprintf("note %d", i), b.String(), start.Add(time.Duration(i)*time.Minute))
			nt.MachineID = "m"
			changes = append(changes, changeFor(nt))
		}
		return changes
	}
	if _, err := ix.Apply(ctx, batch(0, 50)); err != nil {
		t.Fatal(err)
	}
	// Tokens already stored (shared*, note, 0..9), whose chunks fill,
	// and 4,000 new ones.
	sink := &countingSink{postingSink: newPostingEdits()}
	if _, err := ix.inTx(ctx, batch(50, 200), sink); err != nil {
		t.Fatal(err)
	}
	post := sink.postingSink.(*postingEdits)
	tokens, merged := len(post.terms), post.routes[routeMerge]
	t.Logf("%d statements for %d tokens, %d merged", sink.statements, tokens, merged)
	// Per batch of tokens: a read, and writes of chunks, appends and
	// note counts; per token merged, a read of its chunk and the
	// chunk's first part written again.
	if bound := 4*(tokens/rowsPerStatement+1) + 2*merged; tokens < 4000 || merged == 0 || sink.statements > bound {
		t.Fatalf("%d statements for %d tokens, %d merged: more than %d", sink.statements, tokens, merged, bound)
	}
	comparePostings(t, ix)
}
