package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
)

// bulkPostings writes index_postings and index_df of a rebuild, which
// starts from empty tables and gives every note a rowid above the ones
// before it. Each token's entries therefore only ever append, so they are
// kept encoded (a few bytes each, not a 24-byte posting) and a chunk is
// written as soon as it is complete: what stays in memory is at most one
// chunk per token, whatever the size of the store. (Collecting every
// posting of 100,000 notes before writing them held about 600 MB.)
//
// The chunks are those postingEdits.write would give the finished list: a
// list of at most chunkMax entries is one chunk, a longer one is cut into
// chunkTarget entries from its start, the last chunk holding the rest.
// Until a list passes chunkMax it is kept whole, with the places it would
// be cut at; once it has, each chunkTarget entries go out as they fill.
//
// Chunks that are complete wait in memory until they hold readyBudget
// bytes and are then written sorted by token and rowid: inserted as they
// fill, in no order, each one landed on a b-tree page of its own, which
// at 100,000 notes was rarely in SQLite's cache. Encoded, the postings of
// 100,000 notes take about 60 MB: a few ordered passes. The budget is
// small because the garbage collector lets the heap grow to twice what
// is live before it collects.
type bulkPostings struct {
	chunkMax, chunkTarget int

	terms  map[string]*bulkTerm
	tokens int64 // tokens in all notes
	doc    int   // sequence number of the note being tokenized
	seen   []*bulkTerm

	// Notes are tokenized on a goroutine of their own, beside SQLite's
	// inserts; the chunks they complete wait in ready for the applier's
	// goroutine, which owns the transaction.
	ops   chan postingOp
	done  chan struct{}
	mu    sync.Mutex
	ready []bulkChunk
	bytes int // data in ready

	readyBudget int
}

// defaultReadyBudget bounds the complete chunks a rebuild holds.
const defaultReadyBudget = 24 << 20

// bulkTerm is one token's list while a rebuild runs.
type bulkTerm struct {
	term string
	// Counting within one note (tokenize).
	doc int
	tf  uint64

	buf         []byte // entries not written yet, the first against rowid 0
	n           int    // entries in buf
	first, last int64  // rowids of buf's first and last entries
	cuts        []bulkCut
	split       bool  // the list passed chunkMax: chunks go out as they fill
	df          int64 // entries in all
}

// bulkCut is where a chunk would start in buf: the entry's offset, its
// rowid and the rowid before it (the previous chunk's last).
type bulkCut struct {
	off         int
	rowid, prev int64
}

// bulkChunk is one row of index_postings.
type bulkChunk struct {
	term        string
	first, last int64
	n           int
	data        []byte
}

func (ix *Index) newBulkPostings() *bulkPostings {
	b := &bulkPostings{chunkMax: ix.chunkMax, chunkTarget: ix.chunkTarget, terms: map[string]*bulkTerm{},
		ops: make(chan postingOp, 64), done: make(chan struct{}), readyBudget: ix.readyBudget}
	if b.readyBudget <= 0 {
		b.readyBudget = defaultReadyBudget
	}
	go func() {
		defer close(b.done)
		for op := range b.ops {
			b.addNow(op.rowid, op.cols)
		}
	}()
	return b
}

// errBulkDrop: a rebuild indexes each file once into empty tables, so no
// note's postings are ever dropped; if one were, the lists written so far
// would be wrong, so the rebuild fails instead.
var errBulkDrop = errors.New("a rebuild dropped a note it had indexed")

func (b *bulkPostings) add(rowid int64, title, body, tags string) {
	b.ops <- postingOp{rowid: rowid, cols: [3]string{title, body, tags}}
}

func (b *bulkPostings) drop(int64, string, string, string) error { return errBulkDrop }

// wait returns once every queued note is tokenized.
func (b *bulkPostings) wait() {
	if b.ops != nil {
		close(b.ops)
		<-b.done
		b.ops = nil
	}
}

func (b *bulkPostings) addNow(rowid int64, cols [3]string) {
	b.doc++
	b.seen = b.seen[:0]
	var dl uint64
	for _, s := range cols {
		fts5token.Each(s, func(tok []byte) {
			dl++
			t, ok := b.terms[string(tok)]
			if !ok {
				t = &bulkTerm{term: string(tok)}
				b.terms[t.term] = t
			}
			if t.doc != b.doc {
				t.doc, t.tf = b.doc, 0
				b.seen = append(b.seen, t)
			}
			t.tf++
		})
	}
	b.tokens += int64(dl)
	var out []bulkChunk
	for _, t := range b.seen {
		out = t.add(posting{rowid: rowid, tf: t.tf, dl: dl}, b.chunkMax, b.chunkTarget, out)
	}
	if len(out) > 0 {
		b.mu.Lock()
		b.ready = append(b.ready, out...)
		for _, c := range out {
			b.bytes += len(c.data)
		}
		b.mu.Unlock()
	}
}

// add appends one entry to t's list and appends to out the chunks it
// completes.
func (t *bulkTerm) add(p posting, chunkMax, chunkTarget int, out []bulkChunk) []bulkChunk {
	prev := t.last
	if t.n == 0 {
		t.first, prev = p.rowid, 0
	} else if !t.split && t.n%chunkTarget == 0 {
		t.cuts = append(t.cuts, bulkCut{off: len(t.buf), rowid: p.rowid, prev: t.last})
	}
	t.buf = appendPosting(t.buf, prev, p)
	t.n++
	t.last = p.rowid
	t.df++
	switch {
	case t.split && t.n == chunkTarget:
		out = append(out, t.take())
	case !t.split && t.n > chunkMax:
		out = t.cutUp(chunkTarget, out)
	}
	return out
}

// take returns buf as a chunk and empties it.
func (t *bulkTerm) take() bulkChunk {
	c := bulkChunk{term: t.term, first: t.first, last: t.last, n: t.n, data: t.buf}
	t.buf, t.n, t.cuts = nil, 0, nil
	return c
}

// cutUp splits a list that just passed chunkMax at its cuts: every full
// chunk goes out, and the rest, re-encoded to start against rowid 0,
// stays as the list's open chunk.
func (t *bulkTerm) cutUp(chunkTarget int, out []bulkChunk) []bulkChunk {
	start, first, n := 0, t.first, t.n
	for _, c := range t.cuts {
		out = append(out, bulkChunk{term: t.term, first: first, last: c.prev, n: chunkTarget, data: rebase(t.buf[start:c.off], first, start == 0)})
		start, first, n = c.off, c.rowid, n-chunkTarget
	}
	rest := rebase(t.buf[start:], first, start == 0)
	t.buf, t.n, t.first, t.cuts, t.split = rest, n, first, nil, true
	if n == chunkTarget {
		out = append(out, t.take())
	}
	return out
}

// rebase copies encoded entries whose first rowid is stored as a delta
// from the entry before them, storing it against 0 instead (how a chunk
// starts). asIs: the first delta is against 0 already.
func rebase(enc []byte, first int64, asIs bool) []byte {
	if asIs {
		return slices.Clone(enc)
	}
	_, w := binary.Uvarint(enc)
	out := make([]byte, 0, len(enc)+binary.MaxVarintLen64)
	out = binary.AppendUvarint(out, uint64(first<<1)^uint64(first>>63))
	return append(out, enc[w:]...)
}

// takeReady returns the chunks completed so far once they hold more
// than the budget (all of them with all set).
func (b *bulkPostings) takeReady(all bool) []bulkChunk {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !all && b.bytes < b.readyBudget {
		return nil
	}
	out := b.ready
	b.ready, b.bytes = nil, 0
	return out
}

// writeReady writes the chunks completed so far, in order, once they
// hold more than the budget (all of them with all set).
func (b *bulkPostings) writeReady(a *applier, all bool) error {
	chunks := b.takeReady(all)
	slices.SortFunc(chunks, func(x, y bulkChunk) int {
		if c := strings.Compare(x.term, y.term); c != 0 {
			return c
		}
		return cmp.Compare(x.first, y.first)
	})
	for _, c := range chunks {
		if err := c.insert(a); err != nil {
			return err
		}
	}
	return nil
}

func (c bulkChunk) insert(a *applier) error {
	return a.exec(`INSERT INTO index_postings(term, first, n, last, data) VALUES (?, ?, ?, ?, ?)`,
		c.term, c.first, c.n, c.last, c.data)
}

// write finishes the lists: the chunks still open, every token's note
// count and the total token count, all in order of token, which keeps
// the b-tree inserts local.
func (b *bulkPostings) write(a *applier) error {
	b.wait()
	terms := make([]*bulkTerm, 0, len(b.terms))
	for _, t := range b.terms {
		terms = append(terms, t)
		if t.n > 0 {
			c := t.take()
			b.ready = append(b.ready, c)
		}
	}
	if err := b.writeReady(a, true); err != nil {
		return err
	}
	slices.SortFunc(terms, func(x, y *bulkTerm) int { return strings.Compare(x.term, y.term) })
	for _, t := range terms {
		if err := a.exec(`INSERT INTO index_df(term, df) VALUES (?, ?)`, t.term, t.df); err != nil {
			return err
		}
	}
	if err := markHigh(a); err != nil {
		return err
	}
	return a.exec(`INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)`, metaTokenCount, b.tokens)
}
