package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
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
	Types   []string // any of these types (list and count)
	Scope   string
	Limit   int  // search: k (default DefaultK); list: 0 means no limit
	Live    bool // list and count: leave out superseded notes (search always does)
	// ArrivedAfter (unix nanoseconds; list and count): only notes that
	// arrived from another machine after it (Change.Arrived).
	ArrivedAfter int64
}

// Hit is one note from the index with where it lives. Body and tags come
// from the index itself, so listing never re-reads note files.
type Hit struct {
	note.Note
	Path  string  // home-relative file path
	Score float64 // search only: -bm25, higher is better
	// ConflictOf names the note this one is a merge conflict copy of
	// ("" for an ordinary note).
	ConflictOf string
}

// ConflictKey is the frontmatter key of a merge conflict copy naming the
// note it conflicts with (gitsync writes it).
const ConflictKey = "conflict_of"

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
	if len(f.Types) > 0 {
		clauses = append(clauses, "m.type IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Types)), ",")+")")
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	if f.Live {
		clauses = append(clauses, "m.id NOT IN (SELECT superseded_id FROM memory_supersedes)")
	}
	if f.ArrivedAfter > 0 {
		clauses = append(clauses, "m.id IN (SELECT memory_id FROM memory_arrivals WHERE arrived_ns > ?)")
		args = append(args, f.ArrivedAfter)
	}
	return clauses, args
}

// Count counts the notes a filter selects.
func (ix *Index) Count(ctx context.Context, f Filter) (int, error) {
	clauses, args := f.where(nil, nil)
	q := `SELECT count(*) FROM memories m`
	if len(clauses) > 0 {
		q += " WHERE " + strings.Join(clauses, " AND ")
	}
	var n int
	if err := ix.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, ix.wrap("count", err)
	}
	return n, nil
}

// Search ranks notes against free text as the recall seed does: every
// word an OR'ed phrase, BM25 first, then most recently updated. Notes
// superseded by another note are left out. Text without any word
// character returns no hits without touching the database.
//
// The ranking is the seed's, exactly; only the work differs, because
// FTS5 scoring every note that shares a word with the query costs about
// 2.5 µs a note:
//
//   - The index's own postings score FTS5's bm25 formula in Go, bit for
//     bit (score.go), at a few ns a posting. A word FTS5 splits into
//     several tokens (snake_case) is a phrase only FTS5's positions can
//     match: FTS5 finds and scores that phrase alone, and its counts are
//     recovered from those scores.
//   - Should that recovery fail, FTS5 ranks (ftsRank), with two prunings
//     used only when they provably return the seed's result: words in at
//     least half the notes are not scored, since FTS5 floors their IDF at
//     1e-6 and together they move a score by at most bm25Floor per word;
//     and MaxScore: the notes containing the rarest words are scored
//     exactly, and a note containing none of them scores at most the sum
//     of the other words' upper bounds (IDF times k1+1), so when the k-th
//     candidate beats that bound, no other note can enter the top k.
//
// On the postings path Score is -bm25 exactly; on the FTS5 path it is
// -bm25 over the words that were scored, so it can differ from the full
// query's figure by less than bm25Floor per common word.
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
	rowids, scores, err := ix.goRank(ctx, tx, phraseKeys(toks), f, k)
	if errors.Is(err, errNeedFTS5) {
		rowids, scores, err = ix.ftsRank(ctx, tx, toks, f, k)
	}
	if err != nil {
		return nil, err
	}
	rowids, scores, _ = trim(rowids, scores, k)
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

// ftsRank is the seed's ranking by FTS5 itself, pruned where provably
// exact: the path for a query the postings cannot answer.
func (ix *Index) ftsRank(ctx context.Context, tx *sql.Tx, toks []string, f Filter, k int) ([]int64, []float64, error) {
	p, err := ix.plan(ctx, tx, toks)
	if err != nil {
		return nil, nil, err
	}
	rowids, scores, err := ix.pruned(ctx, tx, p, f, k)
	if err != nil || rowids != nil {
		return rowids, scores, err
	}
	ix.paths.Full.Add(1)
	return ix.rank(ctx, tx, quoteOr(toks), "", f, k)
}

// Candidate budgets for MaxScore rounds, in notes (by our lower-bound
// counts): scoring a note costs about 2.5 µs.
var maxScoreBudgets = []int64{200, 1500}

// pruned returns the seed's top k without scoring every matching note,
// or nil when no pruning can be proven exact for this query.
func (ix *Index) pruned(ctx context.Context, tx *sql.Tx, p queryPlan, f Filter, k int) ([]int64, []float64, error) {
	if len(p.kept) == 0 {
		return nil, nil, nil
	}
	margin := float64(p.dropped) * bm25Floor
	kept := make([]string, len(p.kept))
	for i, w := range p.kept {
		kept[i] = w.tok
	}
	all := quoteOr(kept)
	// p.kept is sorted by upper bound, highest (rarest) first.
	tried := 0
	for _, budget := range maxScoreBudgets {
		j, total := 0, int64(0)
		for j < len(p.kept) && (j == 0 || total+p.kept[j].df <= budget) {
			total += p.kept[j].df
			j++
		}
		if j == len(p.kept) || j <= tried {
			break // every word essential: that is the next strategy
		}
		tried = j
		var rest float64
		for _, w := range p.kept[j:] {
			rest += w.ub
		}
		ess := make([]string, j)
		for i := range ess {
			ess[i] = p.kept[i].tok
		}
		rowids, scores, err := ix.rank(ctx, tx, all, quoteOr(ess), f, k+1)
		if err != nil {
			return nil, nil, err
		}
		if provenTop(scores, k, margin, rest) {
			ix.paths.MaxScore.Add(1)
			return trim(rowids, scores, k)
		}
	}
	if p.dropped > 0 {
		rowids, scores, err := ix.rank(ctx, tx, all, "", f, k+1)
		if err != nil {
			return nil, nil, err
		}
		if provenTop(scores, k, margin, 0) {
			ix.paths.Floored.Add(1)
			return trim(rowids, scores, k)
		}
	}
	return nil, nil, nil
}

func trim(rowids []int64, scores []float64, k int) ([]int64, []float64, error) {
	if len(rowids) > k {
		rowids, scores = rowids[:k], scores[:k]
	}
	return rowids, scores, nil
}

// provenTop reports whether the first k of candidate scores (best first,
// up to k+1 given) are the full ranking's top k, in order, when every
// candidate's true score lies in [s, s+margin) and every note outside the
// candidates scores below outside+margin. margin is zero when no word was
// left unscored: ties among candidates then order as in the seed's query.
func provenTop(scores []float64, k int, margin, outside float64) bool {
	if len(scores) < k {
		return false
	}
	const slack = 1e-9 // float rounding in FTS5's sum
	if margin > 0 {
		for i := 0; i+1 < len(scores); i++ {
			if scores[i]-scores[i+1] <= margin+slack {
				return false
			}
		}
	}
	return scores[k-1] > outside+margin+slack
}

type plannedWord struct {
	tok string
	df  int64   // notes containing it, a lower bound (0 when not countable)
	ub  float64 // upper bound of what its phrase adds to any score
}

type queryPlan struct {
	kept    []plannedWord // sorted by ub, highest first
	dropped int           // phrases left out as provably floored
}

// plan sorts query tokens into words to score (with upper bounds) and
// words present in at least half the notes, which FTS5 floors.
func (ix *Index) plan(ctx context.Context, tx *sql.Tx, toks []string) (queryPlan, error) {
	var p queryPlan
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaDocCount).Scan(&n); err != nil {
		return p, ix.wrap("search", err)
	}
	st, err := ix.stmt(ctx, `SELECT coalesce(max(df), 0) FROM index_df WHERE term = ?`)
	if err != nil {
		return p, ix.wrap("search", err)
	}
	st = tx.StmtContext(ctx, st)
	df := map[string]int64{}
	for _, t := range toks {
		var c int64
		if terms, ok := phraseTokens([]string{t}); ok {
			key := terms[0]
			var seen bool
			if c, seen = df[key]; !seen {
				if err := st.QueryRowContext(ctx, key).Scan(&c); err != nil && !errors.Is(err, sql.ErrNoRows) {
					return p, ix.wrap("search", err)
				}
				df[key] = c
			}
		}
		if n > 0 && 2*c >= n {
			p.dropped++
			continue
		}
		p.kept = append(p.kept, plannedWord{tok: t, df: c, ub: phraseBound(n, c)})
	}
	sort.SliceStable(p.kept, func(i, j int) bool { return p.kept[i].ub > p.kept[j].ub })
	return p, nil
}

// phraseBound is an upper bound of one phrase's bm25 term: FTS5 adds
// idf*f*(k1+1)/(f+k1*(1-b+b*len/avglen)) < idf*(k1+1), and idf falls as
// the phrase's note count grows, so a lower-bound count gives an upper
// bound. Inflated slightly against rounding.
func phraseBound(n, df int64) float64 {
	const k1 = 1.2
	idf := math.Log((float64(n) - float64(df) + 0.5) / (float64(df) + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	return idf * (k1 + 1) * (1 + 1e-9)
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
// up to limit rowids with their scores (-bm25, higher is better). A
// non-empty only restricts scoring to notes matching that expression; the
// unary + keeps FTS5 from seeking each candidate separately, which would
// recompute every phrase's IDF per note.
func (ix *Index) rank(ctx context.Context, tx *sql.Tx, expr, only string, f Filter, limit int) ([]int64, []float64, error) {
	clauses, args := []string{"memories_fts MATCH ?"}, []any{expr}
	if only != "" {
		clauses = append(clauses, "+f.rowid IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
		args = append(args, only)
	}
	clauses, args = f.where(clauses, args)
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
	rowids, scores, err := ix.rank(ctx, tx, quoteOr(toks), "", f, k)
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
 (SELECT group_concat(superseded_id, char(31)) FROM (SELECT superseded_id FROM memory_supersedes WHERE memory_id = m.id ORDER BY rowid)),
 (SELECT conflict_of FROM memory_conflicts WHERE memory_id = m.id)
 FROM memories m JOIN memories_fts f ON f.rowid = m.rowid`

func scanHit(rows *sql.Rows) (Hit, int64, error) {
	var h Hit
	var rowid int64
	var bodyPath string
	var model, session, tags, sup, conflictOf sql.NullString
	err := rows.Scan(&rowid, &h.ID, &h.Type, &h.Title, &bodyPath, &h.Project, &h.MachineID, &h.Scope, &h.UserID,
		&h.WorkspaceID, &h.CreatedAt, &h.UpdatedAt, &h.ProvSource, &model, &session, &h.Confidence, &h.Body, &tags, &sup, &conflictOf)
	if err != nil {
		return h, 0, err
	}
	h.ProvModel, h.ProvSession = model.String, session.String
	h.Tags = splitUnit(tags.String)
	h.Supersedes = splitUnit(sup.String)
	h.ConflictOf = conflictOf.String
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
// superseded ones included unless f.Live. Rowids are ordered and limited
// first and only that page is loaded: sorting whole rows would fetch every
// body and tag list of a project just to keep a few.
func (ix *Index) List(ctx context.Context, f Filter) ([]Hit, error) {
	clauses, args := f.where(nil, nil)
	q := `SELECT m.rowid FROM memories m`
	if len(clauses) > 0 {
		q += " WHERE " + strings.Join(clauses, " AND ")
	}
	q += " ORDER BY m.updated_at DESC, m.id DESC"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, ix.wrap("list", err)
	}
	var rowids []int64
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return nil, ix.wrap("list", err)
		}
		rowids = append(rowids, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
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
		err := ix.db.QueryRowContext(ctx, `SELECT coalesce(max(df), 0) FROM index_df WHERE term = ?`, terms[0]).Scan(&c)
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

// FindSession returns the id of the note captured for a Claude Code
// session (prov_session), or "" if there is none.
func (ix *Index) FindSession(ctx context.Context, session string) (string, error) {
	var id string
	err := ix.db.QueryRowContext(ctx, `SELECT id FROM memories WHERE prov_session = ? AND type = 'episodic' ORDER BY created_at LIMIT 1`, session).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", ix.wrap("read", err)
	}
	return id, nil
}

// stopwords are never distinctive, however rare they are in a small store.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each few for from further get got had has have
having he her here hers him his how i if in into is it its just let me more most my no nor not now of off on once only
or other our ours out over own please same she should so some such than thank thanks that the their theirs them then
there these they this those through to too under until up us very was we were what when where which while who whom why
will with would yes yet you your yours ok okay sure hi hello hey`) {
		stopwords[w] = true
	}
}

// DistinctiveWords returns the query's words that few notes contain: at
// most frac of them (and at least one note), never a stopword or a word
// under three letters. Words that are not one FTS5 token (with
// '_') count as distinctive. Per-prompt recall uses them: a note shares
// an uncommon word with the prompt, or it is not recalled.
func (ix *Index) DistinctiveWords(ctx context.Context, text string, frac float64) ([]string, error) {
	toks := wordRe.FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaDocCount).Scan(&n); err != nil {
		return nil, ix.wrap("read", err)
	}
	limit := distinctiveLimit(n, frac)
	st, err := ix.stmt(ctx, `SELECT coalesce(max(df), 0) FROM index_df WHERE term = ?`)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	st = tx.StmtContext(ctx, st)
	var out []string
	seen := map[string]bool{}
	for _, t := range toks {
		low := strings.ToLower(t)
		if seen[low] || stopwords[low] || len([]rune(t)) < 3 {
			continue
		}
		seen[low] = true
		terms, ok := phraseTokens([]string{t})
		if !ok {
			out = append(out, t)
			continue
		}
		var c int64
		if err := st.QueryRowContext(ctx, terms[0]).Scan(&c); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, ix.wrap("read", err)
		}
		if c >= 1 && c <= limit {
			out = append(out, t)
		}
	}
	return out, nil
}

// minDistinctive is how many notes a word may be in and still count as
// distinctive in a small store, where frac of the notes is under one
// note: a question asked once and echoed by its session note is then in
// two notes, which made its words common and recall never brought the
// answer again.
const minDistinctive = 3

// distinctiveLimit is the most notes (of n) a distinctive word may be in:
// frac of them, at least minDistinctive, and never more than half (a word
// in more than half the notes carries no weight in bm25), though a word of
// the only note counts.
func distinctiveLimit(n int64, frac float64) int64 {
	limit := max(int64(float64(n)*frac), minDistinctive)
	return min(limit, max(n/2, 1))
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
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var of, by string
		if err := rows.Scan(&of, &by); err != nil {
			return nil, ix.wrap("read", err)
		}
		out[of] = append(out[of], by)
	}
	return out, rows.Err()
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
		q += ` WHERE conflict_of IN (` + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + `)`
		for i, id := range ids {
			args[i] = id
		}
	}
	rows, err := ix.db.QueryContext(ctx, q+` ORDER BY conflict_of, memory_id`, args...)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer rows.Close()
	for rows.Next() {
		var of, c string
		if err := rows.Scan(&of, &c); err != nil {
			return nil, ix.wrap("read", err)
		}
		out[of] = append(out[of], c)
	}
	return out, rows.Err()
}
