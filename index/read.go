package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Count counts the notes a filter selects.
func (ix *Index) Count(ctx context.Context, f Filter) (int, error) {
	q, args := countSQL(f)
	var n int
	if err := ix.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, ix.wrap("count", err)
	}
	return n, nil
}

// List returns notes newest first (updated_at, then id, descending),
// superseded ones included unless f.Live. Rowids are ordered and limited
// first and only that page is loaded: sorting whole rows would fetch every
// body and tag list of a project just to keep a few.
func (ix *Index) List(ctx context.Context, f Filter) ([]Hit, error) {
	q, args := listSQL(f)
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	rowids, err := collect(rows, scanOne[int64])
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	out := make([]Hit, 0, len(rowids))
	for len(rowids) > 0 { // bounded IN lists
		n := min(len(rowids), 500)
		hits, _, err := ix.load(ctx, tx, rowids[:n])
		if err != nil {
			return nil, err
		}
		if len(hits) != n {
			// The rowids came from the same table in the same snapshot:
			// rows that cannot be found again sit on damaged pages.
			return nil, fmt.Errorf("list index %s: %w (%d of %d listed notes cannot be read)", ix.path, ErrCorrupt, n-len(hits), n)
		}
		out = append(out, hits...)
		rowids = rowids[n:]
	}
	return out, nil
}

// countSQL is Count's query.
func countSQL(f Filter) (string, []any) {
	clauses, args := f.where(nil, nil)
	q := `SELECT count(*) FROM memories m`
	if len(clauses) > 0 {
		q += " WHERE " + strings.Join(clauses, " AND ")
	}
	return q, args
}

// listSQL is List's query for the rowids of a page.
func listSQL(f Filter) (string, []any) {
	clauses, args := f.where(nil, nil)
	q := `SELECT m.rowid FROM memories m`
	if f.ArrivedAfter > 0 {
		// A session asks on every prompt: the few recent arrivals are
		// found through their time (CROSS JOIN fixes the order), never by
		// scanning a project's notes, which from a cold process read
		// hundreds of pages.
		q = `SELECT m.rowid FROM memory_arrivals a INDEXED BY idx_arrivals_time CROSS JOIN memories m ON m.id = a.memory_id`
		clauses, args = append([]string{"a.arrived_ns > ?"}, clauses...), append([]any{f.ArrivedAfter}, args...)
	}
	if c := f.Before; c != nil {
		// The first term is a range SQLite can start idx_mem_recency's
		// walk at; the second breaks ties on updated_at as ORDER BY does.
		clauses = append(clauses, "m.updated_at <= ?", "(m.updated_at < ? OR m.id < ?)")
		args = append(args, c.UpdatedAt, c.UpdatedAt, c.ID)
	}
	if len(clauses) > 0 {
		q += " WHERE " + strings.Join(clauses, " AND ")
	}
	q += " ORDER BY m.updated_at DESC, m.id DESC"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return q, args
}

// Get returns the indexed note with id.
func (ix *Index) Get(ctx context.Context, id string) (Hit, error) {
	rows, err := ix.db.QueryContext(ctx, selectHit+` WHERE m.id = ?`, id)
	if err != nil {
		return Hit{}, ix.wrap("read", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Hit{}, ix.wrap("read", err)
		}
		return Hit{}, ErrNotFound
	}
	h, _, err := scanHit(rows)
	if err != nil {
		return Hit{}, ix.wrap("read", err)
	}
	return h, nil
}

// Stats counts indexed notes.
type Stats struct {
	Total     int            `json:"total"`
	ByType    map[string]int `json:"by_type"`
	ByScope   map[string]int `json:"by_scope"`
	ByProject map[string]int `json:"by_project"`
}

// Stats counts notes by type, scope and project.
func (ix *Index) Stats(ctx context.Context) (Stats, error) {
	s := Stats{ByType: map[string]int{}, ByScope: map[string]int{}, ByProject: map[string]int{}}
	rows, err := ix.Facets(ctx) // one scan, not one per column
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		s.Total += r.Notes
		s.ByType[r.Type] += r.Notes
		s.ByScope[r.Scope] += r.Notes
		s.ByProject[r.Project] += r.Notes
	}
	return s, nil
}

// SourceCount is how many notes of one provenance source a project holds
// from one machine.
type SourceCount struct {
	Project   string `json:"project"`
	MachineID string `json:"machine_id"`
	Notes     int    `json:"notes"`
}

// CountBySource counts the notes whose prov_source is source, per project
// and machine, ordered by project then machine.
func (ix *Index) CountBySource(ctx context.Context, source string) ([]SourceCount, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT project, machine_id, COUNT(*) FROM memories WHERE prov_source = ?
		GROUP BY project, machine_id ORDER BY project, machine_id`, source)
	if err != nil {
		return nil, ix.wrap("count", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (c SourceCount, err error) {
		err = r.Scan(&c.Project, &c.MachineID, &c.Notes)
		return c, err
	})
	if err != nil {
		return nil, ix.wrap("count", err)
	}
	return out, nil
}

// SupersededIDs returns the ids some note supersedes, sorted.
func (ix *Index) SupersededIDs(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT DISTINCT superseded_id FROM memory_supersedes`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	out, err := collect(rows, scanOne[string])
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	sort.Strings(out)
	return out, nil
}

// RarestWords returns up to n of words with the fewest notes containing
// them (by index_postings; words that are not one token are skipped). Benchmarks use it to
// build queries about one note.
func (ix *Index) RarestWords(ctx context.Context, words []string, n int) ([]string, error) {
	type wc struct {
		w  string
		df int64
	}
	var cs []wc
	seen := map[string]bool{}
	for _, w := range words {
		terms, ok := phraseTokens([]string{w})
		if !ok || seen[terms[0]] {
			continue
		}
		seen[terms[0]] = true
		var c int64
		err := ix.db.QueryRowContext(ctx, dfSQL, terms[0]).Scan(&c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, ix.wrap("read", err)
		}
		if c > 0 {
			cs = append(cs, wc{strings.ToLower(w), c})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].df < cs[j].df || cs[i].df == cs[j].df && cs[i].w < cs[j].w })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].w)
	}
	return out, nil
}

// findSessionSQL is FindSession's query; idx_mem_session answers it
// (prov_session = ? implies the index's NOT NULL condition).
const findSessionSQL = `SELECT id FROM memories WHERE prov_session = ? AND type = 'episodic' ORDER BY created_at LIMIT 1`

// FindSession returns the id of the note captured for a Claude Code
// session (prov_session), or "" if there is none.
func (ix *Index) FindSession(ctx context.Context, session string) (string, error) {
	var id string
	err := ix.db.QueryRowContext(ctx, findSessionSQL, session).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", ix.wrap("read", err)
	}
	return id, nil
}

// Forks returns, for each note superseded by two or more live notes (two
// machines superseded it independently), the ids of those successors,
// sorted. Neither successor knows the other, so both stay live.
func (ix *Index) Forks(ctx context.Context) (map[string][]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT s.superseded_id, s.memory_id FROM memory_supersedes s
 WHERE s.memory_id NOT IN (SELECT superseded_id FROM memory_supersedes)
   AND s.superseded_id IN (SELECT superseded_id FROM memory_supersedes
       WHERE memory_id NOT IN (SELECT superseded_id FROM memory_supersedes)
       GROUP BY superseded_id HAVING count(*) > 1)
 ORDER BY s.superseded_id, s.memory_id`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	out := map[string][]string{}
	if err := groupPairs(rows, out); err != nil {
		return nil, ix.wrap("read", err)
	}
	return out, nil
}

// ConflictCopiesOf returns the ids of the conflict copies of each of ids
// that has any, sorted; nil ids: of every note.
func (ix *Index) ConflictCopiesOf(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	q := `SELECT conflict_of, memory_id FROM memory_conflicts`
	args := make([]any, len(ids))
	switch {
	case ids == nil:
	case len(ids) == 0:
		return out, nil
	default:
		q += ` WHERE conflict_of IN (` + params(len(ids)) + `)`
		for i, id := range ids {
			args[i] = id
		}
	}
	rows, err := ix.db.QueryContext(ctx, q+` ORDER BY conflict_of, memory_id`, args...)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	if err := groupPairs(rows, out); err != nil {
		return nil, ix.wrap("read", err)
	}
	return out, nil
}

// Files returns the recorded state of every note file, keyed by path.
func (ix *Index) Files(ctx context.Context) (map[string]File, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path, size, mtime_ns, hash, note_id, error FROM index_files`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	out := map[string]File{}
	if err := eachRow(rows, func(r *sql.Rows) error {
		f, err := scanFile(r)
		if err == nil {
			out[f.Path] = f
		}
		return err
	}); err != nil {
		return nil, ix.wrap("read", err)
	}
	return out, nil
}

// HasFiles reports whether the index records any note file at all: an
// index without any is one a first sync fills from scratch.
func (ix *Index) HasFiles(ctx context.Context) (bool, error) {
	var any bool
	if err := ix.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM index_files)`).Scan(&any); err != nil {
		return false, ix.wrap("read", err)
	}
	return any, nil
}

// BadFiles lists files that are not indexed and why, by path.
func (ix *Index) BadFiles(ctx context.Context) ([]File, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path, size, mtime_ns, hash, note_id, error FROM index_files WHERE error IS NOT NULL ORDER BY path`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	out, err := collect(rows, scanFile)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	return out, nil
}

// DuplicatesOf lists files recorded as duplicates of the given ids.
func (ix *Index) DuplicatesOf(ctx context.Context, ids []string) ([]string, error) {
	byID, err := ix.pairsOf(ctx, `SELECT note_id, path FROM index_files WHERE note_id IN (%s) AND error IS NOT NULL ORDER BY note_id, path`, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		out = append(out, byID[id]...)
		delete(byID, id) // once, however often it is listed
	}
	return out, nil
}

// Claimants lists, for each id, the files that claim it: the one it is
// indexed from first, then the duplicates by path. An id nobody claims
// is left out.
func (ix *Index) Claimants(ctx context.Context, ids []string) (map[string][]string, error) {
	return ix.pairsOf(ctx, `SELECT note_id, path FROM index_files WHERE note_id IN (%s) ORDER BY note_id, error IS NOT NULL, path`, ids)
}

// ConflictCopies lists indexed files named as merge conflict copies
// (<stem>.conflict-<hash>.md), by path.
func (ix *Index) ConflictCopies(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path FROM index_files WHERE error IS NULL AND path LIKE '%.conflict-%' ORDER BY path`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	out, err := collect(rows, scanOne[string])
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	if out == nil {
		out = []string{} // JSON callers show [] rather than null
	}
	return out, nil
}

// SupersededBy returns, for each of ids that some note supersedes, the
// ids of the notes that supersede it, sorted.
func (ix *Index) SupersededBy(ctx context.Context, ids []string) (map[string][]string, error) {
	return ix.pairsOf(ctx, `SELECT superseded_id, memory_id FROM memory_supersedes WHERE superseded_id IN (%s) ORDER BY superseded_id, memory_id`, ids)
}

// pairsOf runs q, which selects (key, value) pairs ordered by key and
// has one %s for a list of keys, for ids in batches of at most 500 (SQLite
// bounds the variables of a statement), and groups the values by key.
func (ix *Index) pairsOf(ctx context.Context, q string, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	// An id listed twice, in two batches, would get its values twice.
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		rows, err := ix.db.QueryContext(ctx, fmt.Sprintf(q, params(n)), args...)
		if err != nil {
			return nil, ix.wrap("read", err)
		}
		if err := groupPairs(rows, out); err != nil {
			return nil, ix.wrap("read", err)
		}
		ids = ids[n:]
	}
	return out, nil
}

// FacetRow is the number of notes sharing one combination of the columns
// a browser filters on.
type FacetRow struct {
	Type, Scope, Project, MachineID, ProvSource string
	Notes                                       int
}

// Facets counts notes per combination of type, scope, project, machine
// and source in one scan of the table (one GROUP BY per column took five).
func (ix *Index) Facets(ctx context.Context) ([]FacetRow, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT type, scope, project, machine_id, prov_source, COUNT(*) FROM memories
		GROUP BY type, scope, project, machine_id, prov_source`)
	if err != nil {
		return nil, ix.wrap("count", err)
	}
	out, err := collect(rows, func(r *sql.Rows) (f FacetRow, err error) {
		err = r.Scan(&f.Type, &f.Scope, &f.Project, &f.MachineID, &f.ProvSource, &f.Notes)
		return f, err
	})
	if err != nil {
		return nil, ix.wrap("count", err)
	}
	return out, nil
}

// The row loops of this file go through eachRow (or collect, built the
// same way), so every read closes its rows, checks rows.Err after the
// last row and passes both kinds of error to ix.wrap, which tells a
// damaged index (ErrCorrupt) from others. Written out by hand, some loops
// returned rows.Err unwrapped and one never checked it, so damage found
// while stepping was reported as a plain error or not at all.

// eachRow calls fn for each row, then closes rows; the error is fn's
// first, else the iteration's.
func eachRow(rows *sql.Rows, fn func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// collect scans every row into a slice (nil for none), then closes rows.
// It has its own loop rather than a closure over eachRow, so a read
// allocates no more than the hand-written loop did.
func collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanOne scans a row of one column.
func scanOne[T any](rows *sql.Rows) (v T, err error) {
	err = rows.Scan(&v)
	return v, err
}

// groupPairs adds rows of (key, value) to out, in row order.
func groupPairs(rows *sql.Rows, out map[string][]string) error {
	return eachRow(rows, func(r *sql.Rows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		out[k] = append(out[k], v)
		return nil
	})
}

// scanFile scans a row of index_files' path, size, mtime_ns, hash,
// note_id and error.
func scanFile(rows *sql.Rows) (File, error) {
	var f File
	var id, e sql.NullString
	err := rows.Scan(&f.Path, &f.Size, &f.MtimeNS, &f.Hash, &id, &e)
	f.NoteID, f.Error = id.String, e.String
	return f, err
}
