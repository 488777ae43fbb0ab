package index

import (
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/note"
)

// unicodeTexts are bodies whose tokens differ from naive word splitting:
// diacritics folded, case folded beyond ASCII, '_' and marks splitting,
// scripts without spaces, porter stems.
var unicodeTexts = []string{
	"don’t stop the café society; naïve cafe\u0301s",
	"Straße STRASSE straße İstanbul ıstanbul ΣΊΣΥΦΟΣ σίσυφος",
	"foo_bar baz_qux snake_case_name kebab-case dotted.name v1.2.3 16:9",
	"日本語のテキスト 中文文本 한국어 텍스트 עברית العربية",
	"running runs ran runner generalization generalizations connected connecting",
	"emoji 🎉 party 🎉🎉 zero\u200bwidth joiner\u200dhere nbsp\u00a0space",
	"ÀÉÎÕÜ àéîõü Ærø Œuvre ﬁne ligature Ⅻ ① ½",
	"",
}

// changeFor is the change that indexes nt from its file in its tree.
func changeFor(nt *note.Note) Change {
	return Change{File: File{Path: note.TreeDir(nt.Scope) + "/" + nt.RelPath(), Hash: "h"}, Note: nt}
}

// growIndex indexes changes the two ways a store grows: the first half
// by one rebuild, the rest by Apply in batches of batch.
func growIndex(t testing.TB, ix *Index, changes []Change, batch int) {
	t.Helper()
	n := len(changes)
	if _, err := ix.Rebuild(ctx, changes[:n/2]); err != nil {
		t.Fatal(err)
	}
	for i := n / 2; i < n; i += batch {
		if _, err := ix.Apply(ctx, changes[i:min(i+batch, n)]); err != nil {
			t.Fatal(err)
		}
	}
}

// postingsFixture builds an index the way a store grows: part by rebuild,
// the rest in batches, then edits (same rowid, new text), deletes, a note
// re-added in the batch that dropped it, and an edit applied twice in one
// batch.
func postingsFixture(t *testing.T, n int) (*Index, []*note.Note, *synth.Gen, synth.Vocab) {
	t.Helper()
	ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	vocab := synth.NewVocab(3000, 11)
	g := synth.NewGen(vocab, 11)
	r := rand.New(rand.NewSource(11))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var changes []Change
	var notes []*note.Note
	for i := 0; i < n; i++ {
		nt := g.Note(start.Add(time.Duration(i) * time.Minute))
		if i%10 == 0 {
			nt.Body += " " + unicodeTexts[(i/10)%len(unicodeTexts)]
		}
		if i%13 == 0 {
			nt.Title = strings.ToUpper(nt.Title) + " Ünïcödé"
		}
		notes = append(notes, nt)
		changes = append(changes, changeFor(nt))
	}
	growIndex(t, ix, changes, 37)
	var edits []Change
	for i := 0; i < n/20; i++ {
		c := changes[r.Intn(n)]
		nt := *c.Note
		nt.Body = g.Body()
		edits = append(edits, Change{File: c.File, Note: &nt})
		if i%5 == 0 { // edited twice in one batch
			nt2 := nt
			nt2.Body = g.Body() + " " + unicodeTexts[i%len(unicodeTexts)]
			edits = append(edits, Change{File: c.File, Note: &nt2})
		}
	}
	for i := 0; i < n/40; i++ {
		c := changes[r.Intn(n)]
		edits = append(edits, Change{File: c.File, Delete: true})
		if i%3 == 0 { // gone and back in the same batch
			edits = append(edits, c)
		}
	}
	if _, err := ix.Apply(ctx, edits); err != nil {
		t.Fatal(err)
	}
	return ix, notes, g, vocab
}

// TestPostingsMatchFTS5 compares every posting with FTS5's own index,
// read through fts5vocab: the same tokens, the same notes per token, the
// same count per note, the same note lengths and totals.
func TestPostingsMatchFTS5(t *testing.T) {
	ix, _, _, _ := postingsFixture(t, 600)
	terms, postings, split := comparePostings(t, ix)
	t.Logf("%d tokens, %d postings, %d chunks after a token's first", terms, postings, split)
	if split == 0 {
		t.Errorf("no list was split into chunks: the fixture does not exercise chunking")
	}
	if terms < 1000 || postings < 10000 {
		t.Fatalf("fixture too small: %d tokens, %d postings", terms, postings)
	}
}

// comparePostings checks every posting, chunk, count and total against
// FTS5's own index and returns how many tokens, postings and extra chunks
// it saw.
func comparePostings(t *testing.T, ix *Index) (terms, postings, split int) {
	t.Helper()
	db, err := ix.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS temp.vi USING fts5vocab(main, 'memories_fts', 'instance')`); err != nil {
		t.Fatal(err)
	}
	type key struct {
		term  string
		rowid int64
	}
	want := map[key]uint64{}
	dl := map[int64]uint64{}
	rows, err := db.QueryContext(ctx, `SELECT term, doc, count(*) FROM temp.vi GROUP BY term, doc`)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for rows.Next() {
		var k key
		var c uint64
		if err := rows.Scan(&k.term, &k.rowid, &c); err != nil {
			t.Fatal(err)
		}
		want[k] = c
		dl[k.rowid] += c
		total += c
	}
	rows.Close()
	got := map[key]uint64{}
	// A token's tail row stands after its chunks (tail.go): 1 sorts it
	// after them.
	rows, err = db.QueryContext(ctx, `SELECT term, first, n, last, data, 0 FROM index_postings
 UNION ALL SELECT term, first, n, last, data, 1 FROM index_tail ORDER BY term, 6, first`)
	if err != nil {
		t.Fatal(err)
	}
	type chunkRow struct {
		term           string
		first, n, last int64
		data           []byte
		tail           bool
	}
	var chunks []chunkRow
	for rows.Next() {
		var c chunkRow
		if err := rows.Scan(&c.term, &c.first, &c.n, &c.last, &c.data, &c.tail); err != nil {
			rows.Close() // an open result set would hang the index's Close
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	rows.Close()
	prevTerm, prevLast := "", int64(0)
	for _, c := range chunks {
		term, first, n, last := c.term, c.first, c.n, c.last
		ps, err := decodePostings(c.data, nil)
		if err != nil {
			t.Fatalf("%q: %v", term, err)
		}
		if len(ps) == 0 || int64(len(ps)) != n || ps[0].rowid != first || ps[len(ps)-1].rowid != last || n > int64(ix.chunkMax) {
			t.Fatalf("%q chunk %d-%d: n %d, holds %d entries", term, first, last, n, len(ps))
		}
		if term == prevTerm {
			split++
			if first <= prevLast {
				t.Fatalf("%q: chunk at %d overlaps the previous one ending at %d", term, first, prevLast)
			}
		} else {
			terms++
		}
		for i, p := range ps {
			if i > 0 && p.rowid <= ps[i-1].rowid {
				t.Fatalf("%q: rowids out of order", term)
			}
			got[key{term, p.rowid}] = p.tf
			if p.dl != dl[p.rowid] {
				t.Errorf("%q rowid %d: length %d, FTS5 %d", term, p.rowid, p.dl, dl[p.rowid])
			}
		}
		prevTerm, prevLast = term, ps[len(ps)-1].rowid
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("token %q note %d: FTS5 counts %d, postings %d", k.term, k.rowid, c, got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("token %q note %d: in postings, not in FTS5", k.term, k.rowid)
		}
	}
	ftsDF := map[string]int64{}
	for k := range want {
		ftsDF[k.term]++
	}
	rows, err = db.QueryContext(ctx, `SELECT term, sum(df) FROM (SELECT term, df FROM index_df UNION ALL SELECT term, n FROM index_tail) GROUP BY term`)
	if err != nil {
		t.Fatal(err)
	}
	dfs := 0
	for rows.Next() {
		var term string
		var df int64
		rows.Scan(&term, &df)
		if df != ftsDF[term] {
			t.Errorf("note count of %q (index_df and index_tail) = %d, FTS5 %d", term, df, ftsDF[term])
		}
		dfs++
	}
	rows.Close()
	if dfs != len(ftsDF) {
		t.Errorf("index_df has %d tokens, FTS5 %d", dfs, len(ftsDF))
	}
	var n, tokens int64
	db.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaTokenCount).Scan(&tokens)
	db.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaDocCount).Scan(&n)
	var ftsRows int64
	db.QueryRowContext(ctx, `SELECT count(*) FROM memories_fts`).Scan(&ftsRows)
	if uint64(tokens) != total || n != ftsRows {
		t.Errorf("totals: %d tokens in %d notes, FTS5 %d in %d", tokens, n, total, ftsRows)
	}
	return terms, len(want), split
}

// TestPostingScoresAreFTS5Bm25 checks the scorer against bm25() itself,
// for every note a query matches: the same notes and the same float64,
// bit for bit (ties are ordered by updated_at only if scores are equal
// exactly, so near is not enough).
func TestPostingScoresAreFTS5Bm25(t *testing.T) {
	ix, notes, g, vocab := postingsFixture(t, 600)
	r := rand.New(rand.NewSource(5))
	queries := []string{
		"café naive CAFES", "straße strasse", "running generalization connect", "ΣΊΣΥΦΟΣ istanbul",
		"ünïcödé party emoji", "日本語のテキスト", "½ ① Ⅻ fine",
	}
	for i := 0; i < 150; i++ {
		switch i % 3 {
		case 0:
			queries = append(queries, g.Query())
		case 1:
			w := strings.Fields(notes[r.Intn(len(notes))].Body)
			queries = append(queries, "how do I "+w[r.Intn(len(w))]+" the "+w[r.Intn(len(w))]+" again "+w[r.Intn(len(w))])
		default:
			queries = append(queries, vocab[r.Intn(20)]+" "+vocab[r.Intn(3000)]+" "+vocab[r.Intn(20)])
		}
	}
	compared := 0
	for _, q := range queries {
		words := wordRe().FindAllString(q, MaxQueryTokens)
		terms, ok := phraseTokens(words)
		if !ok {
			t.Fatalf("query %q: not single-token words", q)
		}
		tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := ix.loadStats(ctx, tx, terms)
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.score(ctx, ix, tx, terms, false)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(`SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?`, quoteOr(words))
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for rows.Next() {
			var rowid int64
			var bm float64
			rows.Scan(&rowid, &bm)
			seen++
			if got := s.score(rowid); got != -bm {
				t.Errorf("query %q note %d: score %v (%x), FTS5 %v", q, rowid, got, got, -bm)
			}
		}
		rows.Close()
		tx.Rollback()
		if seen != len(s.docs) {
			t.Errorf("query %q: FTS5 matches %d notes, postings %d", q, seen, len(s.docs))
		}
		compared += seen
	}
	if compared < 10000 {
		t.Fatalf("only %d scores compared", compared)
	}
}

// A corrupt posting list is reported as a corrupt index (so the store
// rebuilds it), never a panic or a wrong answer.
func TestCorruptPostingsAreReported(t *testing.T) {
	ix := openTemp(t)
	upsert(t, ix, mk(note.TypeSemantic, "sqlite locks", "busy timeout avoids lock errors"))
	upsert(t, ix, mk(note.TypeSemantic, "other", "nothing here"))
	for _, data := range [][]byte{{0xff}, {0x02, 0x01}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}} {
		if _, err := ix.db.Exec(`UPDATE index_postings SET data = ? WHERE term = 'lock'`, data); err != nil {
			t.Fatal(err)
		}
		_, err := ix.Search(ctx, "lock", Filter{})
		if err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("data %x: error %v, want a corrupt-index error", data, err)
		}
	}
}

// A snake_case word is a phrase of adjacent tokens: its counts come from
// FTS5's own phrase matching, and the ranking and scores still equal the
// seed's, whatever the count of the phrase in a note.
func TestPhraseWordsScoreLikeFTS5(t *testing.T) {
	ix := openTemp(t)
	bodies := []string{
		"set busy_timeout on every connection",
		"busy timeout busy timeout busy timeout: three times adjacent",
		"busy waiting is not a timeout",
		"BUSY_TIMEOUT in capitals, busy-timeout with a dash",
		"nothing relevant",
		"timeout busy in the wrong order",
	}
	for i, b := range bodies {
		upsert(t, ix, mk(note.TypeSemantic, "note "+string(rune('a'+i)), b))
	}
	for _, q := range []string{"busy_timeout", "how do I set busy_timeout for sqlite", "busy_timeout busy_timeout", "wrong_order timeout_busy", "_ __ busy"} {
		got, err := ix.Search(ctx, q, Filter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		want, err := ix.SeedSearch(ctx, q, Filter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
			t.Errorf("%q: %v, seed %v", q, ids(got), ids(want))
		}
		for i := range got {
			if i < len(want) && got[i].Score != want[i].Score {
				t.Errorf("%q: score %v, seed %v", q, got[i].Score, want[i].Score)
			}
		}
	}
	got, _ := ix.Search(ctx, "busy_timeout", Filter{Limit: 10})
	if len(got) != 3 || got[0].Title != "note b" {
		t.Errorf("busy_timeout: %v; want the three notes with the adjacent pair, the thrice-repeated one (note b) first", ids(got))
	}
	// Many notes holding the phrase: lengths come from the first token's
	// whole list instead of one chunk per note.
	for i := 0; i < 70; i++ {
		upsert(t, ix, mk(note.TypeSemantic, fmt.Sprintf("filler %d", i), strings.Repeat("busy timeout ", 1+i%4)+strings.Repeat("padding ", i)))
	}
	got, err := ix.Search(ctx, "busy_timeout settings", Filter{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ix.SeedSearch(ctx, "busy_timeout settings", Filter{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) || len(got) != 20 {
		t.Errorf("busy_timeout over 70 notes: %v, seed %v", ids(got), ids(want))
	}
	for i := range got {
		if i < len(want) && got[i].Score != want[i].Score {
			t.Errorf("busy_timeout over 70 notes: score %v, seed %v", got[i].Score, want[i].Score)
		}
	}
	if pc := ix.Paths(); pc.Postings == 0 || pc.MaxScore+pc.Floored+pc.Full != 0 {
		t.Errorf("paths %+v: phrase queries must be answered from the postings", pc)
	}
}

// TestPostingsRandomEdits drives an index with chunks of at most four
// entries through random batches (new notes, edits, deletes, a note
// deleted and re-added or edited twice in one batch, the odd rebuild) and
// after every batch compares the postings with FTS5 and the search
// results and scores with the seed query.
func TestPostingsRandomEdits(t *testing.T) {
	ix := openTemp(t)
	ix.chunkMax, ix.chunkTarget = 4, 2
	r := rand.New(rand.NewSource(23))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon café naïve_test straße")
	text := func() string {
		var b strings.Builder
		for i, n := 0, 1+r.Intn(12); i < n; i++ {
			b.WriteString(words[r.Intn(len(words))] + " ")
		}
		return b.String()
	}
	live := map[string]Change{}
	var noteIDs []string
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	splits := 0
	for batch := 0; batch < 60; batch++ {
		var changes []Change
		for i, n := 0, 1+r.Intn(8); i < n; i++ {
			switch op := r.Intn(10); {
			case op < 4 || len(noteIDs) == 0: // a new note
				nt := note.New(note.TypeSemantic, text(), text(), start.Add(time.Duration(batch*100+i)*time.Minute))
				nt.MachineID = "m"
				c := changeFor(nt)
				live[nt.ID], noteIDs = c, append(noteIDs, nt.ID)
				changes = append(changes, c)
			case op < 7: // an edit, sometimes two in the batch
				id := noteIDs[r.Intn(len(noteIDs))]
				c, ok := live[id]
				if !ok {
					continue
				}
				for j := 0; j <= r.Intn(2); j++ {
					nt := *c.Note
					nt.Body = text()
					c = Change{File: c.File, Note: &nt}
					changes = append(changes, c)
				}
				live[id] = c
			default: // a delete, sometimes undone in the same batch
				id := noteIDs[r.Intn(len(noteIDs))]
				c, ok := live[id]
				if !ok {
					continue
				}
				changes = append(changes, Change{File: c.File, Delete: true})
				delete(live, id)
				if r.Intn(2) == 0 {
					changes = append(changes, c)
					live[id] = c
				}
			}
		}
		if batch%20 == 19 {
			var all []Change
			for _, id := range noteIDs {
				if c, ok := live[id]; ok {
					all = append(all, c)
				}
			}
			if _, err := ix.Rebuild(ctx, all); err != nil {
				t.Fatal(err)
			}
		} else if _, err := ix.Apply(ctx, changes); err != nil {
			t.Fatal(err)
		}
		_, _, s := comparePostings(t, ix)
		splits += s
		if t.Failed() {
			t.Fatalf("after batch %d", batch)
		}
		for _, q := range []string{text(), words[r.Intn(len(words))], "naïve_test " + text()} {
			got, err := ix.Search(ctx, q, Filter{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			want, err := ix.SeedSearch(ctx, q, Filter{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
				t.Fatalf("batch %d, %q: %v, seed %v", batch, q, ids(got), ids(want))
			}
			for i := range got {
				if got[i].Score != want[i].Score {
					t.Fatalf("batch %d, %q: score %v, seed %v", batch, q, got[i].Score, want[i].Score)
				}
			}
		}
	}
	if rep, err := ix.CheckPostings(ctx); err != nil || rep.Differ != 0 || !rep.TotalOK {
		t.Fatalf("CheckPostings: %+v %v", rep, err)
	}
	if splits < 100 {
		t.Fatalf("only %d extra chunks seen: chunking not exercised", splits)
	}
}

// When most notes ever indexed are gone, rowids are sparse and scores go
// to a map instead of an array as long as the highest rowid; the ranking
// and scores must not change.
func TestSparseRowidsScoreLikeFTS5(t *testing.T) {
	ix := openTemp(t)
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta")
	var changes []Change
	for i := 0; i < 1100; i++ {
		nt := mk(note.TypeSemantic, fmt.Sprintf("n%d", i), words[i%8]+" "+words[(i/8)%8]+" "+words[(i*3)%8])
		changes = append(changes, changeFor(nt))
	}
	growIndex(t, ix, changes, 200)
	var gone []Change
	for _, c := range changes[:1094] {
		gone = append(gone, Change{File: c.File, Delete: true})
	}
	if _, err := ix.Apply(ctx, gone); err != nil {
		t.Fatal(err)
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ix.loadStats(ctx, tx, []string{"alpha"})
	tx.Rollback()
	if err != nil || q.maxRowid <= 8*q.n+1024 {
		t.Fatalf("rowids not sparse: %d notes, highest rowid %d (%v)", q.n, q.maxRowid, err)
	}
	for _, query := range []string{"alpha beta", "gamma delta theta", "zeta"} {
		got, err := ix.Search(ctx, query, Filter{Limit: 6})
		if err != nil {
			t.Fatal(err)
		}
		want, err := ix.SeedSearch(ctx, query, Filter{Limit: 6})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
			t.Fatalf("%q: %v, seed %v", query, ids(got), ids(want))
		}
		for i := range got {
			if got[i].Score != want[i].Score {
				t.Errorf("%q: score %v, seed %v", query, got[i].Score, want[i].Score)
			}
		}
	}
}
