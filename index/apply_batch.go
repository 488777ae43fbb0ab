package index

import (
	"fmt"
	"strings"
)

// rowsPerStatement bounds the tokens one statement of listWriter reads or
// writes: 200 rows of five values are 1,000 parameters, far below
// SQLite's 32,766, and past a few dozen rows a statement's fixed cost is
// paid off.
const rowsPerStatement = 200

// lastChunk is a token's last stored chunk, without its data.
type lastChunk struct{ first, n, last int64 }

// The ways a token's edits are written (listWriter.routes).
const (
	routeAppend = iota // appended to the last chunk in SQL
	routeNew           // a token new to the store: its first chunks
	routeMerge         // chunks read, merged and written back
	routeTail          // appended to the token's tail row (tail.go)
)

// listWriter batches the statements of [postingEdits.write]: it reads the
// last chunks of a batch of tokens in one query and holds the rows to
// write until rowsPerStatement of a kind are waiting. Rows of one kind
// never touch a key another kind touches (a token takes one route), so
// the order the kinds go out in does not matter.
type listWriter struct {
	a      *applier
	lasts  map[string]lastChunk // the current batch's tokens that have a chunk
	routes *[4]int              // tokens written by each route, for tests

	appends []any // term, first, entries, last, data: appended to a chunk
	puts    []any // term, first, n, last, data: a chunk (re)written whole
	df      []any // term, delta: a token's note count moved
	fell    []any // tokens whose note count went down: deleted at 0
}

// lastChunks reads the last chunk of each of terms into w.lasts; a token
// absent from it has no chunk. Each token costs two primary-key searches
// (max(first) finds the last key without visiting the others), so a
// token's chunk count does not matter.
func (w *listWriter) lastChunks(terms []string) error {
	clear(w.lasts)
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := w.a.query(lastChunksSQL(len(terms)), args...)
	if err != nil {
		return fmt.Errorf("read last chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var term string
		var c lastChunk
		if err := rows.Scan(&term, &c.first, &c.n, &c.last); err != nil {
			return fmt.Errorf("read last chunks: %w", err)
		}
		w.lasts[term] = c
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read last chunks: %w", err)
	}
	return nil
}

func lastChunksSQL(n int) string {
	return `SELECT p.term, p.first, p.n, p.last FROM (VALUES ` + placeholders(n, 1) + `) AS v
 JOIN index_postings AS p ON p.term = v.column1
 AND p.first = (SELECT max(first) FROM index_postings WHERE term = v.column1)`
}

// appendTo appends added, in rowid order and all after the chunk's last
// entry, to the token's last chunk: the entries are encoded against its
// last rowid and concatenated in SQL, without reading the chunk.
func (w *listWriter) appendTo(term string, last lastChunk, added []posting) error {
	var data []byte
	prev := last.last
	for _, p := range added {
		data = appendPosting(data, prev, p)
		prev = p.rowid
	}
	w.appends = append(w.appends, term, last.first, len(added), prev, data)
	if len(w.appends) >= 5*rowsPerStatement {
		if err := w.flushAppends(); err != nil {
			return err
		}
	}
	return w.moveDF(term, int64(len(added)))
}

// put writes a whole chunk, replacing the row of its key if there is one.
func (w *listWriter) put(term string, first int64, n int, last int64, data []byte) error {
	w.puts = append(w.puts, term, first, n, last, data)
	if len(w.puts) >= 5*rowsPerStatement {
		return w.flushPuts()
	}
	return nil
}

// moveDF moves a token's note count by delta; a count that reaches 0
// removes the token's row.
func (w *listWriter) moveDF(term string, delta int64) error {
	if delta == 0 {
		return nil
	}
	w.df = append(w.df, term, delta)
	if delta < 0 {
		w.fell = append(w.fell, term)
	}
	if len(w.df) >= 2*rowsPerStatement {
		return w.flushDF()
	}
	return nil
}

// flush writes every row still waiting.
func (w *listWriter) flush() error {
	if err := w.flushPuts(); err != nil {
		return err
	}
	if err := w.flushAppends(); err != nil {
		return err
	}
	return w.flushDF()
}

func (w *listWriter) flushAppends() error {
	if len(w.appends) == 0 {
		return nil
	}
	if err := w.a.exec(appendsSQL(len(w.appends)/5), w.appends...); err != nil {
		return fmt.Errorf("append to chunks: %w", err)
	}
	w.appends = w.appends[:0]
	return nil
}

func appendsSQL(n int) string {
	return `UPDATE index_postings AS p SET n = p.n + v.column3, last = v.column4, data = p.data || v.column5
 FROM (VALUES ` + placeholders(n, 5) + `) AS v WHERE p.term = v.column1 AND p.first = v.column2`
}

func (w *listWriter) flushPuts() error {
	if len(w.puts) == 0 {
		return nil
	}
	q := `INSERT OR REPLACE INTO index_postings(term, first, n, last, data) VALUES ` + placeholders(len(w.puts)/5, 5)
	if err := w.a.exec(q, w.puts...); err != nil {
		return fmt.Errorf("write chunks: %w", err)
	}
	w.puts = w.puts[:0]
	return nil
}

// flushDF moves the note counts waiting, then deletes those that fell to
// 0. A count moved down that had no row gets a negative one, deleted
// with the others: the token-by-token merge left no row either.
func (w *listWriter) flushDF() error {
	if len(w.df) > 0 {
		if err := w.a.exec(moveDFSQL(len(w.df)/2), w.df...); err != nil {
			return fmt.Errorf("move note counts: %w", err)
		}
		w.df = w.df[:0]
	}
	if len(w.fell) > 0 {
		if err := w.a.exec(dropDFSQL(len(w.fell)), w.fell...); err != nil {
			return fmt.Errorf("drop note counts: %w", err)
		}
		w.fell = w.fell[:0]
	}
	return nil
}

func moveDFSQL(n int) string {
	return `INSERT INTO index_df(term, df) VALUES ` + placeholders(n, 2) + ` ON CONFLICT(term) DO UPDATE SET df = df + excluded.df`
}

func dropDFSQL(n int) string {
	return `DELETE FROM index_df WHERE term IN (` + params(n) + `) AND df <= 0`
}

// placeholders is rows groups of cols parameters for a VALUES list:
// "(?, ?), (?, ?)".
func placeholders(rows, cols int) string {
	if rows < 1 {
		return ""
	}
	group := "(" + params(cols) + ")"
	return strings.Repeat(group+", ", rows-1) + group
}

// params is n parameters for an IN list or a VALUES row: "?, ?, ?"
// (n >= 1; callers with nothing to ask return before).
func params(n int) string {
	if n < 1 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}
