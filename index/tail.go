package index

import (
	"database/sql"
	"fmt"
	"math"
)

// A pull into a large store appends a few new notes to thousands of
// tokens' lists. Appended in place, each token costs a leaf page of
// index_postings, read and written back, wherever the token's last chunk
// lies: at 100,000 notes a pull of 100 touched some 4,000 pages spread
// over a 62 MB table (and as many of index_df), wrote each to the WAL
// and again at the checkpoint, and that merge was the largest part of
// the pull.
//
// So in a large store, entries of notes new to a token go first to the
// token's row in index_tail: one row a token, shaped like a chunk, that
// stands after the token's chunks. The table is small (its rows are
// bounded, below), so a pull rewrites a few hundred of its pages however
// many tokens it touches. Invariant: every entry of a token's tail row
// has a higher rowid than every entry of its chunks, so a list is its
// chunks followed by its tail row, and its note count is its index_df
// count plus the row's n. Readers (rank_postings.go, check.go, dfSQL)
// add the row at the end.
//
// A tail row goes back into the chunks (is folded: its entries appended
// to the token's list by the ordinary merge, its n added to index_df)
// when:
//   - the token's edits are not appends after the row (a note dropped or
//     re-indexed, a rowid reused): folded first, then merged as before;
//   - the row would pass chunkMax entries (it stays within its page);
//   - the table holds more than tailRows rows: the rows next in token
//     order after a cursor go back, as many as are over, so each pull
//     folds about as many rows as it starts and the rows folded together
//     lie together in index_postings (a few to a page instead of one).
//
// A store below tailFrom notes appends in place: its tables are small
// enough to stay in the page cache, and tests of the merge see it
// unchanged. A rebuild writes no tail (bulk.go).
const (
	defaultTailFrom = 20_000 // notes in the store before pulls append to the tail
	defaultTailRows = 40_000 // tail rows kept before the oldest in token order fold back
)

// Keys of index_meta the tail keeps.
const (
	// metaPostingsHigh is the highest rowid any note had when the last
	// transaction that indexed notes ended: every entry of every list is
	// at or below it, so a token without a tail row can start one with
	// entries above it without reading its chunks.
	metaPostingsHigh = "postings_high"
	// metaTailCursor is the token the last fold of surplus rows ended at.
	metaTailCursor = "tail_cursor"
)

// dfSQL is a token's note count: its chunks' (index_df) and its tail
// row's.
const dfSQL = `SELECT coalesce((SELECT df FROM index_df WHERE term = ?1), 0) + coalesce((SELECT n FROM index_tail WHERE term = ?1), 0)`

// tailRow is a token's row of index_tail.
type tailRow struct {
	first, n, last int64
	data           []byte
}

// tailWriter batches one transaction's writes to index_tail, as
// listWriter does those to index_postings.
type tailWriter struct {
	a       *applier
	enabled bool  // the store is large enough to append to the tail
	high    int64 // metaPostingsHigh as the transaction found it
	rows    map[string]tailRow

	appends []any // term, entries, last, data: appended to a row
	puts    []any // term, first, n, last, data: a new row
	drops   []any // terms whose row was folded
	started int   // rows started
}

func newTailWriter(a *applier) (*tailWriter, error) {
	w := &tailWriter{a: a, rows: map[string]tailRow{}, high: math.MaxInt64}
	row, err := a.queryRow(`SELECT (SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?), (SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?)`,
		metaDocCount, metaPostingsHigh)
	if err != nil {
		return nil, err
	}
	var docs, high sql.NullInt64
	if err := row.Scan(&docs, &high); err != nil {
		return nil, fmt.Errorf("read tail state: %w", err)
	}
	if high.Valid {
		w.high = high.Int64
	}
	w.enabled = docs.Int64 >= a.tailFrom
	return w, nil
}

// read loads the tail rows of terms into w.rows.
func (w *tailWriter) read(terms []string) error {
	clear(w.rows)
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := w.a.query(tailRowsSQL(len(terms)), args...)
	if err != nil {
		return fmt.Errorf("read tail rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var term string
		var r tailRow
		if err := rows.Scan(&term, &r.first, &r.n, &r.last, &r.data); err != nil {
			return fmt.Errorf("read tail rows: %w", err)
		}
		w.rows[term] = r
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read tail rows: %w", err)
	}
	return nil
}

// take appends t's edits to term's tail row, or starts one, when they are
// appends after every entry of the list and the row stays within
// chunkMax; it reports whether it did. Otherwise, a row term has is
// folded: its entries go before t's added ones, and the row is deleted.
func (w *tailWriter) take(term string, t *termEdits) (bool, error) {
	r, has := w.rows[term]
	if w.enabled && appendsOnly(t) {
		after, room := w.high, int64(w.a.chunkMax)
		if has {
			after, room = r.last, room-r.n
		}
		if t.added[0].rowid > after && int64(len(t.added)) <= room {
			var data []byte
			prev := int64(0)
			if has {
				prev = r.last
			}
			for _, p := range t.added {
				data = appendPosting(data, prev, p)
				prev = p.rowid
			}
			if has {
				w.appends = append(w.appends, term, len(t.added), prev, data)
			} else {
				w.puts = append(w.puts, term, t.added[0].rowid, len(t.added), prev, data)
				w.started++
			}
			return true, w.flushIfFull()
		}
	}
	if !has {
		return false, nil
	}
	folded, err := decodePostings(r.data, nil)
	if err != nil {
		return false, fmt.Errorf("tail row: %w", err)
	}
	t.added = append(folded, t.added...)
	w.drops = append(w.drops, term)
	return false, w.flushIfFull()
}

// appendsOnly reports whether t only adds notes, in rowid order.
func appendsOnly(t *termEdits) bool {
	if len(t.removed) > 0 || len(t.added) == 0 {
		return false
	}
	for i := 1; i < len(t.added); i++ {
		if t.added[i].rowid <= t.added[i-1].rowid {
			return false
		}
	}
	return true
}

func (w *tailWriter) flushIfFull() error {
	if len(w.appends) >= 4*rowsPerStatement || len(w.puts) >= 5*rowsPerStatement || len(w.drops) >= rowsPerStatement {
		return w.flush()
	}
	return nil
}

// flush writes every tail change waiting.
func (w *tailWriter) flush() error {
	if n := len(w.drops); n > 0 {
		if err := w.a.exec(`DELETE FROM index_tail WHERE term IN (`+params(n)+`)`, w.drops...); err != nil {
			return fmt.Errorf("fold tail rows: %w", err)
		}
		w.drops = w.drops[:0]
	}
	if n := len(w.appends) / 4; n > 0 {
		if err := w.a.exec(tailAppendsSQL(n), w.appends...); err != nil {
			return fmt.Errorf("append to tail rows: %w", err)
		}
		w.appends = w.appends[:0]
	}
	if n := len(w.puts) / 5; n > 0 {
		if err := w.a.exec(`INSERT INTO index_tail(term, first, n, last, data) VALUES `+placeholders(n, 5), w.puts...); err != nil {
			return fmt.Errorf("start tail rows: %w", err)
		}
		w.puts = w.puts[:0]
	}
	return nil
}

func tailRowsSQL(n int) string {
	return `SELECT term, first, n, last, data FROM index_tail WHERE term IN (` + params(n) + `)`
}

func tailAppendsSQL(n int) string {
	return `UPDATE index_tail AS t SET n = t.n + v.column2, last = v.column3, data = t.data || v.column4
 FROM (VALUES ` + placeholders(n, 4) + `) AS v WHERE t.term = v.column1`
}

// surplus folds the rows over tailRows, next in token order after the
// cursor (wrapping around): their entries go into edits, for the
// ordinary merge, and their tokens are returned. A token this
// transaction appended to its row gets the whole row as its edits, this
// transaction's entries included. Only a transaction that started rows
// can have put the table over.
func (w *tailWriter) surplus(edits map[string]*termEdits) ([]string, error) {
	if w.started == 0 {
		return nil, nil
	}
	var count int64
	var cursor sql.NullString
	row, err := w.a.queryRow(`SELECT (SELECT count(*) FROM index_tail), (SELECT value FROM index_meta WHERE key = ?)`, metaTailCursor)
	if err != nil {
		return nil, err
	}
	if err := row.Scan(&count, &cursor); err != nil {
		return nil, fmt.Errorf("count tail rows: %w", err)
	}
	over := count - int64(w.a.tailRows)
	if over <= 0 {
		return nil, nil
	}
	var terms []string
	take := func(q string, args ...any) error {
		rows, err := w.a.query(q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var term string
			var data []byte
			if err := rows.Scan(&term, &data); err != nil {
				return err
			}
			ps, err := decodePostings(data, nil)
			if err != nil {
				return fmt.Errorf("tail row of %q: %w", term, err)
			}
			edits[term] = &termEdits{added: ps}
			terms = append(terms, term)
		}
		return rows.Err()
	}
	if err := take(`SELECT term, data FROM index_tail WHERE term > ? ORDER BY term LIMIT ?`, cursor.String, over); err != nil {
		return nil, fmt.Errorf("fold tail rows: %w", err)
	}
	if left := over - int64(len(terms)); left > 0 {
		if err := take(`SELECT term, data FROM index_tail WHERE term <= ? ORDER BY term LIMIT ?`, cursor.String, left); err != nil {
			return nil, fmt.Errorf("fold tail rows: %w", err)
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	for _, t := range terms {
		w.drops = append(w.drops, t)
		if err := w.flushIfFull(); err != nil {
			return nil, err
		}
	}
	if err := w.flush(); err != nil {
		return nil, err
	}
	// The last row folded, in the order taken, is where the next fold
	// starts after.
	if err := w.a.exec(`INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)`, metaTailCursor, terms[len(terms)-1]); err != nil {
		return nil, err
	}
	return terms, nil
}

// markHigh records the highest rowid of the store's notes as every list's
// bound (metaPostingsHigh), after a transaction that indexed notes.
func markHigh(a *applier) error {
	return a.exec(`INSERT OR REPLACE INTO index_meta(key, value) SELECT ?, coalesce(max(rowid), 0) FROM memories`, metaPostingsHigh)
}
