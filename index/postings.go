package index

import (
	"cmp"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
)

// The index keeps its own copy of what FTS5 knows about each token, in
// index_postings: for every token, the notes containing it with the
// token's count and the note's length. FTS5 computes bm25() for every
// note that shares a word with the query, at about 2.5 µs a note; with
// the postings, search scores the same formula in Go at a few ns a
// posting (rank_postings.go). Tokens come from fts5token, which reproduces
// FTS5's 'porter unicode61' token stream, so document frequencies,
// counts and lengths are exactly FTS5's and so are the scores.
//
// A token's list is stored in chunks of at most 160 entries, keyed
// by (token, first rowid): indexing one note rewrites one small chunk per
// token, not a list as long as the store. A chunk is a run of entries
// sorted by rowid, each three uvarints: zigzag(rowid - previous rowid,
// the first against 0), token count, note length in tokens (title +
// body + tags, FTS5's xColumnSize(-1)). The length sits in every entry
// so scoring never looks a note up.

// Default chunk sizes; an Index carries its own (tests shrink them to
// exercise splitting). A row of a WITHOUT ROWID table keeps at most
// 1,002 bytes in its b-tree page (4 KiB pages); the rest goes to an
// overflow page of its own. Chunks of up to 512 entries (4.6 bytes an
// entry, up to 2.4 KB) spilled: at 100,000 notes index_postings took
// 163 MB of pages for 53 MB of lists, and a pull rewrote an overflow
// page for every token it appended to (a home aged by many pulls wrote
// 42,000 pages for a pull of 100 notes, a freshly built one 23,000).
// 160 entries stay within the page (common tokens' entries are 4 bytes,
// 5 where rowids are sparse): the table is 62 MB, and a search at
// 100,000 notes reads its lists from leaf pages alone (in-process p50
// 2.8–3.8 → 2.3–3.2 ms).
const (
	defaultChunkMax    = 160 // entries; a chunk that grows past this is split
	defaultChunkTarget = 80  // entries per chunk when a list is (re)split
)

type posting struct {
	rowid int64
	tf    uint64
	dl    uint64
}

func appendPosting(b []byte, prev int64, p posting) []byte {
	d := p.rowid - prev
	b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
	b = binary.AppendUvarint(b, p.tf)
	return binary.AppendUvarint(b, p.dl)
}

// postingReader walks one encoded list.
type postingReader struct {
	b    []byte
	prev int64
}

// next returns the next entry; ok is false at the end. A malformed list
// (a corrupt row) ends the walk and sets err.
func (r *postingReader) next() (p posting, ok bool, err error) {
	if len(r.b) == 0 {
		return p, false, nil
	}
	z, n1 := uvarint(r.b)
	if n1 <= 0 {
		return p, false, errBadPostings
	}
	tf, n2 := uvarint(r.b[n1:])
	if n2 <= 0 {
		return p, false, errBadPostings
	}
	dl, n3 := uvarint(r.b[n1+n2:])
	if n3 <= 0 {
		return p, false, errBadPostings
	}
	r.b = r.b[n1+n2+n3:]
	r.prev += int64(z>>1) ^ -int64(z&1)
	return posting{rowid: r.prev, tf: tf, dl: dl}, true, nil
}

// uvarint is binary.Uvarint with the one-byte case inlined: most deltas
// and counts are under 128, and search decodes hundreds of thousands.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return binary.Uvarint(b)
}

var errBadPostings = fmt.Errorf("%w: malformed posting list", ErrCorrupt)

func decodePostings(b []byte, into []posting) ([]posting, error) {
	r := postingReader{b: b}
	for {
		p, ok, err := r.next()
		if err != nil {
			return into, err
		}
		if !ok {
			return into, nil
		}
		into = append(into, p)
	}
}

// termEdits collects one transaction's changes to one token's list:
// entries appended for notes (re)indexed, in order, and rowids whose live
// entry was dropped. A rowid's entries come and go in order (index,
// drop, index again), so dropping always removes the oldest entry still
// present for that rowid: stored entries are older than appended ones.
type termEdits struct {
	added   []posting
	removed []int64

	// Per-note counting while one note is tokenized.
	doc int
	tf  uint64
}

// postingEdits is a transaction's accumulated postings changes.
type postingEdits struct {
	terms  map[string]*termEdits
	tokens int64 // change in the total token count of all notes
	doc    int   // sequence number of the note being tokenized
	seen   []*termEdits
	routes [4]int // tokens written by each route (termEdits.write, the tail)
}

type postingOp struct {
	rowid int64
	cols  [3]string
}

func newPostingEdits() *postingEdits {
	return &postingEdits{terms: map[string]*termEdits{}}
}

func (e *postingEdits) wait() {}

// tokenize counts the tokens of one note's indexed columns, leaving the
// distinct tokens' edits with their counts in seen, and returns the
// note's length in tokens.
func (e *postingEdits) tokenize(cols [3]string) uint64 {
	e.doc++
	e.seen = e.seen[:0]
	var dl uint64
	for _, s := range cols {
		fts5token.Each(s, func(tok []byte) {
			dl++
			t, ok := e.terms[string(tok)]
			if !ok {
				t = &termEdits{}
				e.terms[string(tok)] = t
			}
			if t.doc != e.doc {
				t.doc, t.tf = e.doc, 0
				e.seen = append(e.seen, t)
			}
			t.tf++
		})
	}
	return dl
}

// add records a note (re)indexed at rowid with its title, body and tags.
func (e *postingEdits) add(rowid int64, title, body, tags string) {
	dl := e.tokenize([3]string{title, body, tags})
	e.tokens += int64(dl)
	for _, t := range e.seen {
		t.added = append(t.added, posting{rowid: rowid, tf: t.tf, dl: dl})
	}
}

// drop records that the note at rowid with these column texts (exactly
// what FTS5 holds for it) is no longer indexed.
func (e *postingEdits) drop(rowid int64, title, body, tags string) error {
	e.tokens -= int64(e.tokenize([3]string{title, body, tags}))
	for _, t := range e.seen {
		t.removed = append(t.removed, rowid)
	}
	return nil
}

// write merges the edits into index_postings and index_df and moves the
// total token count. A pull of 1,000 notes touches some 15,000 tokens,
// and every statement costs about 16 µs through database/sql and the
// pure-Go SQLite, whatever it does: token by token, reading the last
// chunk, appending to it and moving the df took three statements each
// (five for a token new to the store), 0.7 s in all. So tokens go in
// sorted batches: one statement reads the last chunk of every token of a
// batch ([listWriter.lastChunks]), each token is routed from what it finds,
// and the rows to write wait in listWriter to go out many to a statement.
// The rows written are exactly those of the token-by-token merge
// (TestBatchedMergeMatchesTokenByToken keeps that one as the reference).
func (e *postingEdits) write(a *applier) error {
	terms := make([]string, 0, len(e.terms))
	for term, t := range e.terms {
		if len(t.added) > 0 || len(t.removed) > 0 {
			terms = append(terms, term)
		}
	}
	if len(terms) > 0 {
		if err := e.writeLists(a, terms); err != nil {
			return err
		}
	}
	if e.tokens == 0 {
		return nil
	}
	return a.exec(`UPDATE index_meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?`, e.tokens, metaTokenCount)
}

// writeLists sends each token's edits to its tail row where they are
// appends (tail.go), and merges the others, with the tail rows folded
// back, into the chunks.
func (e *postingEdits) writeLists(a *applier, terms []string) error {
	// Sorted, the batches walk the b-trees in key order.
	slices.Sort(terms)
	tw, err := newTailWriter(a)
	if err != nil {
		return err
	}
	merge := make([]string, 0, len(terms))
	for rest := terms; len(rest) > 0; {
		part := rest[:min(len(rest), rowsPerStatement)]
		rest = rest[len(part):]
		if err := tw.read(part); err != nil {
			return err
		}
		for _, term := range part {
			took, err := tw.take(term, e.terms[term])
			if err != nil {
				return fmt.Errorf("postings of %q: %w", term, err)
			}
			if took {
				e.routes[routeTail]++
			} else {
				merge = append(merge, term)
			}
		}
	}
	if err := tw.flush(); err != nil {
		return err
	}
	foldedTerms, err := tw.surplus(e.terms)
	if err != nil {
		return err
	}
	if len(foldedTerms) > 0 {
		merge = append(merge, foldedTerms...)
		slices.Sort(merge)
	}
	if err := e.merge(a, merge); err != nil {
		return err
	}
	return markHigh(a)
}

// merge writes the edits of terms (sorted) into their chunks and moves
// their note counts.
func (e *postingEdits) merge(a *applier, terms []string) error {
	w := &listWriter{a: a, lasts: map[string]lastChunk{}, routes: &e.routes}
	for len(terms) > 0 {
		part := terms[:min(len(terms), rowsPerStatement)]
		terms = terms[len(part):]
		if err := w.lastChunks(part); err != nil {
			return err
		}
		for _, term := range part {
			if err := e.terms[term].write(w, term); err != nil {
				return fmt.Errorf("postings of %q: %w", term, err)
			}
		}
	}
	return w.flush()
}

// chunk is one stored chunk of a list, decoded.
type chunk struct {
	first   int64 // key it is stored under
	next    int64 // the next chunk's first, or MaxInt64 (loadChunk)
	entries []posting
	stored  bool
	loaded  int // entries as stored
}

// write merges one token's edits into its stored chunks, given the
// token's last chunk as w read it. Notes new to the token after its last
// entry are appended to that chunk while it has room; a token new to the
// store gets its first chunks; anything else (drops, a note re-indexed
// under its old rowid, a full chunk) takes the general merge: each rowid
// touched belongs to the chunk with the greatest first rowid not above it
// (or the first chunk), so only those chunks are read and rewritten.
func (t *termEdits) write(w *listWriter, term string) error {
	last, stored := w.lasts[term]
	if stored && t.appendsTo(last, w.a.chunkMax) {
		w.routes[routeAppend]++
		return w.appendTo(term, last, t.added)
	}
	chunks := []*chunk{{}}
	if stored {
		w.routes[routeMerge]++
		var err error
		if chunks, err = t.touchedChunks(w.a, term); err != nil {
			return err
		}
	} else {
		w.routes[routeNew]++
	}
	t.route(chunks)
	var delta int64 // change in the token's note count
	for _, c := range chunks {
		n, err := c.store(w, term)
		if err != nil {
			return err
		}
		delta += int64(n - c.loaded)
	}
	return w.moveDF(term, delta)
}

// appendsTo reports whether the edits only add notes after the last
// entry of the token's last chunk, in order, and the chunk has room for
// them: the common case, a new note gets the highest rowid.
func (t *termEdits) appendsTo(last lastChunk, chunkMax int) bool {
	return appendsOnly(t) && t.added[0].rowid > last.last && last.n+int64(len(t.added)) <= int64(chunkMax)
}

// touchedChunks loads the stored chunks the edits' rowids belong to,
// sorted by first; a token without any gets one new, empty chunk.
func (t *termEdits) touchedChunks(a *applier, term string) ([]*chunk, error) {
	rowids := make([]int64, 0, len(t.added)+len(t.removed))
	for _, p := range t.added {
		rowids = append(rowids, p.rowid)
	}
	rowids = append(rowids, t.removed...)
	slices.Sort(rowids)
	var chunks []*chunk
	for i, r := range rowids {
		if i > 0 && r == rowids[i-1] {
			continue
		}
		if n := len(chunks); n > 0 && r < chunks[n-1].next {
			continue // it belongs to the chunk loaded last
		}
		c, err := loadChunk(a, term, r)
		if err != nil {
			return nil, err
		}
		if c == nil {
			break // no chunk at all: everything goes to a new one
		}
		if n := len(chunks); n == 0 || chunks[n-1].first != c.first {
			chunks = append(chunks, c)
		}
	}
	if len(chunks) == 0 {
		chunks = append(chunks, &chunk{})
	}
	return chunks, nil
}

// route adds each edit to the chunk its rowid belongs to (chunks are
// sorted and adjacent in the list's order, so routing by first is the
// stored rule). A drop zeroes the oldest entry still present for its
// rowid: stored entries precede the appended ones. A drop without an
// entry means the postings and FTS5 disagree; there is nothing to remove
// then.
func (t *termEdits) route(chunks []*chunk) {
	owner := func(r int64) *chunk {
		i, found := slices.BinarySearchFunc(chunks, r, func(c *chunk, r int64) int { return cmp.Compare(c.first, r) })
		if found {
			return chunks[i]
		}
		return chunks[max(i-1, 0)]
	}
	for _, p := range t.added {
		c := owner(p.rowid)
		c.entries = append(c.entries, p)
	}
	for _, r := range t.removed {
		c := owner(r)
		for i := range c.entries {
			if c.entries[i].rowid == r && c.entries[i].tf != 0 {
				c.entries[i].tf = 0
				break
			}
		}
	}
}

// store writes c's live entries back, split into chunkTarget entries when
// they outgrew chunkMax, and returns how many there are. The old row goes
// at once when the chunk's first rowid changed; the new rows wait in w.
// No waiting row can be the one deleted: it is this chunk's, written
// after, or another chunk's, whose entries all sort before or after
// c.first.
func (c *chunk) store(w *listWriter, term string) (int, error) {
	live := c.entries[:0]
	for _, p := range c.entries {
		if p.tf != 0 {
			live = append(live, p)
		}
	}
	slices.SortStableFunc(live, func(x, y posting) int { return cmp.Compare(x.rowid, y.rowid) })
	for i := 1; i < len(live); i++ {
		if live[i].rowid == live[i-1].rowid {
			return 0, fmt.Errorf("rowid %d listed twice", live[i].rowid)
		}
	}
	if c.stored && (len(live) == 0 || live[0].rowid != c.first) {
		if err := w.a.exec(`DELETE FROM index_postings WHERE term = ? AND first = ?`, term, c.first); err != nil {
			return 0, err
		}
	}
	n := len(live)
	size := len(live)
	if size > w.a.chunkMax {
		size = w.a.chunkTarget
	}
	for len(live) > 0 {
		part := live[:min(size, len(live))]
		live = live[len(part):]
		var data []byte
		var prev int64
		for _, p := range part {
			data = appendPosting(data, prev, p)
			prev = p.rowid
		}
		if err := w.put(term, part[0].rowid, len(part), part[len(part)-1].rowid, data); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// loadChunk returns the chunk a rowid belongs to, or nil when the token
// has no chunk. The chunk knows the first rowid of the one after it, so
// that the rowids up to there go to it without asking the store again:
// a token in every note of a pull of 1,000 asked once for each.
func loadChunk(a *applier, term string, r int64) (*chunk, error) {
	const cols = `SELECT first, (SELECT min(first) FROM index_postings WHERE term = p.term AND first > p.first), data
 FROM index_postings AS p WHERE term = ?`
	c := &chunk{stored: true}
	var next sql.NullInt64
	var data []byte
	row, err := a.queryRow(cols+` AND first <= ? ORDER BY first DESC LIMIT 1`, term, r)
	if err != nil {
		return nil, err
	}
	err = row.Scan(&c.first, &next, &data)
	if errors.Is(err, sql.ErrNoRows) {
		if row, err = a.queryRow(cols+` ORDER BY first LIMIT 1`, term); err != nil {
			return nil, err
		}
		err = row.Scan(&c.first, &next, &data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	c.next = math.MaxInt64
	if next.Valid {
		c.next = next.Int64
	}
	if c.entries, err = decodePostings(data, nil); err != nil {
		return nil, err
	}
	c.loaded = len(c.entries)
	return c, nil
}
