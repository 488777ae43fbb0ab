package index

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
)

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
	st, err := ix.txStmt(ctx, tx, dfSQL)
	if err != nil {
		return p, ix.wrap("search", err)
	}
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
	if !f.WithSuperseded {
		clauses = append(clauses, "m.id NOT IN (SELECT superseded_id FROM memory_supersedes)")
	}
	q := `SELECT m.rowid, bm25(memories_fts) AS s FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE ` +
		strings.Join(clauses, " AND ") + ` ORDER BY s, m.updated_at DESC LIMIT ?`
	args = append(args, limit)
	st, err := ix.txStmt(ctx, tx, q)
	if err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	rows, err := st.QueryContext(ctx, args...)
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
