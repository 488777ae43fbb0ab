package index

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/note"
)

// DefaultK is how many notes a search returns unless asked otherwise.
const DefaultK = 8

// MaxK bounds k so a careless caller cannot ask for the whole store.
const MaxK = 1000

// MaxQueryTokens bounds the OR query built from free text. A pasted log
// of a megabyte would otherwise become a query of a hundred thousand
// phrases; the first words of a prompt carry its subject.
const MaxQueryTokens = 256

var wordRe = regexp.MustCompile(`[\p{L}\p{N}_]+`)

// MatchExpr turns free text into the FTS5 query of the recall seed: every
// Unicode word token double-quoted, joined by OR. Quoting each token makes
// FTS5 syntax in the input (AND, NEAR, *, :, unbalanced quotes) plain
// text. It returns "" when the text has no word characters.
func MatchExpr(text string) string {
	return quoteOr(wordRe.FindAllString(text, MaxQueryTokens))
}

// Filter narrows search and list. Empty fields do not filter.
type Filter struct {
	Project string
	Type    string
	Scope   string
	Limit   int // search: k (default DefaultK); list: 0 means no limit
}

// Hit is one note from the index with where it lives. Body and tags come
// from the index itself, so listing never re-reads note files.
type Hit struct {
	note.Note
	Path  string  // home-relative file path
	Score float64 // search only: -bm25, higher is better
}

func (f Filter) where(clauses []string, args []any) ([]string, []any) {
	if f.Project != "" {
		clauses, args = append(clauses, "m.project = ?"), append(args, f.Project)
	}
	if f.Type != "" {
		clauses, args = append(clauses, "m.type = ?"), append(args, f.Type)
	}
	if f.Scope != "" {
		clauses, args = append(clauses, "m.scope = ?"), append(args, f.Scope)
	}
	return clauses, args
}

// Search ranks notes against free text as the recall seed does: every
// word an OR'ed phrase, BM25 first, then most recently updated. Notes
// superseded by another note are left out. Text without any word
// character returns no hits without touching the database.
//
// The ranking is the seed's, exactly; only the work differs. Words found
// in at least half the notes are left out of the candidate query (see
// terms.go), because FTS5 scores them at most bm25Floor each. The
// candidates' order is then exact unless two of them score within that
// margin of each other, or fewer than k+1 notes match the remaining words;
// in those cases the full query runs as the seed wrote it. Score is -bm25
// over the words that were kept, so it can differ from the full query's
// figure by less than bm25Floor per word dropped.
func (ix *Index) Search(ctx context.Context, text string, f Filter) ([]Hit, error) {
	toks := wordRe.FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	k := f.Limit
	if k <= 0 {
		k = DefaultK
	}
	if k > MaxK {
		k = MaxK
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	defer tx.Rollback()
	kept, dropped, err := ix.splitCommon(ctx, tx, toks)
	if err != nil {
		return nil, err
	}
	var rowids []int64
	var scores []float64
	if dropped > 0 && len(kept) > 0 {
		rowids, scores, err = ix.rank(ctx, tx, quoteOr(kept), f, k+1)
		if err != nil {
			return nil, err
		}
		margin := float64(dropped) * bm25Floor
		if !separated(scores, k, margin) {
			rowids = nil
		} else if len(rowids) > k {
			rowids, scores = rowids[:k], scores[:k]
		}
	}
	if rowids == nil {
		if rowids, scores, err = ix.rank(ctx, tx, quoteOr(toks), f, k); err != nil {
			return nil, err
		}
	}
	hits, found, err := ix.load(ctx, tx, rowids)
	if err != nil {
		return nil, err
	}
	score := make(map[int64]float64, len(rowids))
	for i, r := range rowids {
		score[r] = scores[i]
	}
	for i := range hits {
		hits[i].Score = score[found[i]]
	}
	return hits, nil
}

// separated reports whether the pruned ranking is provably the full one:
// more than k candidates, each of the first k+1 apart from the next by
// more than margin, and the k-th scoring above what words alone under
// the floor could give a note.
func separated(scores []float64, k int, margin float64) bool {
	if len(scores) <= k {
		return false
	}
	for i := 0; i < k; i++ {
		if scores[i]-scores[i+1] <= margin {
			return false
		}
	}
	return scores[k-1] > margin
}

// splitCommon sorts query tokens into those to keep and counts those
// present in at least half the notes (provably floored by bm25).
func (ix *Index) splitCommon(ctx context.Context, tx *sql.Tx, toks []string) (kept []string, dropped int, err error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaDocCount).Scan(&n); err != nil {
		return nil, 0, ix.wrap("search", err)
	}
	st, err := ix.stmt(ctx, `SELECT df FROM index_terms WHERE term = ?`)
	if err != nil {
		return nil, 0, ix.wrap("search", err)
	}
	st = tx.StmtContext(ctx, st)
	df := map[string]int64{}
	for _, t := range toks {
		key, ok := countableToken(t)
		if !ok {
			kept = append(kept, t)
			continue
		}
		c, seen := df[key]
		if !seen {
			if err := st.QueryRowContext(ctx, key).Scan(&c); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, 0, ix.wrap("search", err)
			}
			df[key] = c
		}
		if n > 0 && 2*c >= n {
			dropped++
		} else {
			kept = append(kept, t)
		}
	}
	return kept, dropped, nil
}

func quoteOr(toks []string) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(t)
		b.WriteByte('"')
	}
	return b.String()
}

// rank runs the seed's ranking query for a MATCH expression and returns
// up to limit rowids with their scores (-bm25, higher is better).
func (ix *Index) rank(ctx context.Context, tx *sql.Tx, expr string, f Filter, limit int) ([]int64, []float64, error) {
	clauses, args := f.where([]string{"memories_fts MATCH ?"}, []any{expr})
	clauses = append(clauses, "m.id NOT IN (SELECT superseded_id FROM memory_supersedes)")
	q := `SELECT m.rowid, bm25(memories_fts) AS s FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE ` +
		strings.Join(clauses, " AND ") + ` ORDER BY s, m.updated_at DESC LIMIT ?`
	args = append(args, limit)
	st, err := ix.stmt(ctx, q)
	if err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	defer rows.Close()
	rowids, scores := []int64{}, []float64{}
	for rows.Next() {
		var id int64
		var s float64
		if err := rows.Scan(&id, &s); err != nil {
			return nil, nil, ix.wrap("search", err)
		}
		rowids, scores = append(rowids, id), append(scores, -s)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	return rowids, scores, nil
}

// SeedSearch runs the recall seed's query unmodified (no pruning). It is
// the reference Search is tested against, and what eval can compare with.
func (ix *Index) SeedSearch(ctx context.Context, text string, f Filter) ([]Hit, error) {
	toks := wordRe.FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	k := f.Limit
	if k <= 0 {
		k = DefaultK
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	defer tx.Rollback()
	rowids, scores, err := ix.rank(ctx, tx, quoteOr(toks), f, k)
	if err != nil {
		return nil, err
	}
	hits, _, err := ix.load(ctx, tx, rowids)
	for i := range hits {
		hits[i].Score = scores[i]
	}
	return hits, err
}

const selectHit = `SELECT m.rowid, m.id, m.type, m.title, m.body_path, m.project, m.machine_id, m.scope, m.user_id,
 m.workspace_id, m.created_at, m.updated_at, m.prov_source, m.prov_model, m.prov_session, m.confidence, f.body,
 (SELECT group_concat(tag, char(31)) FROM (SELECT tag FROM memory_tags WHERE memory_id = m.id ORDER BY rowid)),
 (SELECT group_concat(superseded_id, char(31)) FROM (SELECT superseded_id FROM memory_supersedes WHERE memory_id = m.id ORDER BY rowid))
 FROM memories m JOIN memories_fts f ON f.rowid = m.rowid`

func scanHit(rows *sql.Rows) (Hit, int64, error) {
	var h Hit
	var rowid int64
	var bodyPath string
	var model, session, tags, sup sql.NullString
	err := rows.Scan(&rowid, &h.ID, &h.Type, &h.Title, &bodyPath, &h.Project, &h.MachineID, &h.Scope, &h.UserID,
		&h.WorkspaceID, &h.CreatedAt, &h.UpdatedAt, &h.ProvSource, &model, &session, &h.Confidence, &h.Body, &tags, &sup)
	if err != nil {
		return h, 0, err
	}
	h.ProvModel, h.ProvSession = model.String, session.String
	h.Tags = splitUnit(tags.String)
	h.Supersedes = splitUnit(sup.String)
	h.Path = note.TreeDir(h.Scope) + "/" + bodyPath
	return h, rowid, nil
}

func splitUnit(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\x1f")
}

// load fetches full hits for rowids, in the order given, with the rowid
// of each (a row deleted between the two queries is left out).
func (ix *Index) load(ctx context.Context, tx *sql.Tx, rowids []int64) ([]Hit, []int64, error) {
	if len(rowids) == 0 {
		return []Hit{}, nil, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(rowids)), ",")
	args := make([]any, len(rowids))
	for i, r := range rowids {
		args[i] = r
	}
	st, err := ix.stmt(ctx, selectHit+` WHERE m.rowid IN (`+ph+`)`)
	if err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	defer rows.Close()
	byRow := map[int64]Hit{}
	for rows.Next() {
		h, rowid, err := scanHit(rows)
		if err != nil {
			return nil, nil, ix.wrap("read", err)
		}
		byRow[rowid] = h
	}
	if err := rows.Err(); err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	out := make([]Hit, 0, len(rowids))
	found := make([]int64, 0, len(rowids))
	for _, r := range rowids {
		if h, ok := byRow[r]; ok {
			out, found = append(out, h), append(found, r)
		}
	}
	return out, found, nil
}

// List returns notes newest first (updated_at, then id, descending),
// superseded ones included.
func (ix *Index) List(ctx context.Context, f Filter) ([]Hit, error) {
	clauses, args := f.where(nil, nil)
	q := selectHit
	if len(clauses) > 0 {
		q += " WHERE " + strings.Join(clauses, " AND ")
	}
	q += " ORDER BY m.updated_at DESC, m.id DESC"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	defer rows.Close()
	out := []Hit{}
	for rows.Next() {
		h, _, err := scanHit(rows)
		if err != nil {
			return nil, ix.wrap("list", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
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
	for col, m := range map[string]map[string]int{"type": s.ByType, "scope": s.ByScope, "project": s.ByProject} {
		rows, err := ix.db.QueryContext(ctx, `SELECT `+col+`, COUNT(*) FROM memories GROUP BY `+col)
		if err != nil {
			return s, ix.wrap("count", err)
		}
		for rows.Next() {
			var k string
			var c int
			if err := rows.Scan(&k, &c); err != nil {
				rows.Close()
				return s, ix.wrap("count", err)
			}
			m[k] = c
			if col == "type" {
				s.Total += c
			}
		}
		rows.Close()
	}
	return s, nil
}

// SupersededIDs returns the ids some note supersedes, sorted.
func (ix *Index) SupersededIDs(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT DISTINCT superseded_id FROM memory_supersedes`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, ix.wrap("read", err)
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out, rows.Err()
}
