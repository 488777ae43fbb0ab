package index

import (
	"context"
)

// PostingsReport compares the postings with FTS5's own index.
type PostingsReport struct {
	Tokens     int64    // distinct tokens FTS5 holds
	Mismatched []string // tokens whose note count differs (at most 10 named)
	Differ     int      // how many tokens differ
	TotalOK    bool     // note and token totals agree
}

// CheckPostings reads FTS5's vocabulary (fts5vocab 'row': each token and
// how many notes hold it) and compares it with index_df and index_tail
// and the totals
// search scores with. Any difference means search ranks differently from
// FTS5: a rebuild repairs it. It reads every token of the index once.
func (ix *Index) CheckPostings(ctx context.Context) (PostingsReport, error) {
	var r PostingsReport
	conn, err := ix.db.Conn(ctx)
	if err != nil {
		return r, ix.wrap("check", err)
	}
	defer conn.Close()
	// A temp table lives in this connection only; nothing is written to
	// the index file.
	if _, err := conn.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_vocab USING fts5vocab(main, 'memories_fts', 'row')`); err != nil {
		return r, ix.wrap("check", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.check_vocab`)
	ours := map[string]int64{}
	// A token's count is its chunks' plus its tail row's (tail.go).
	rows, err := conn.QueryContext(ctx, `SELECT term, df FROM index_df UNION ALL SELECT term, n FROM index_tail`)
	if err != nil {
		return r, ix.wrap("check", err)
	}
	for rows.Next() {
		var t string
		var df int64
		if err := rows.Scan(&t, &df); err != nil {
			rows.Close()
			return r, ix.wrap("check", err)
		}
		ours[t] += df
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, ix.wrap("check", err)
	}
	var tokens int64
	rows, err = conn.QueryContext(ctx, `SELECT term, doc, cnt FROM temp.check_vocab`)
	if err != nil {
		return r, ix.wrap("check", err)
	}
	differ := func(t string) {
		r.Differ++
		if len(r.Mismatched) < 10 {
			r.Mismatched = append(r.Mismatched, t)
		}
	}
	for rows.Next() {
		var t string
		var doc, cnt int64
		if err := rows.Scan(&t, &doc, &cnt); err != nil {
			rows.Close()
			return r, ix.wrap("check", err)
		}
		r.Tokens++
		tokens += cnt
		if ours[t] != doc {
			differ(t)
		}
		delete(ours, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, ix.wrap("check", err)
	}
	for t := range ours {
		differ(t)
	}
	var n, total, ftsRows int64
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?),
 (SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?), (SELECT count(*) FROM memories_fts)`,
		metaDocCount, metaTokenCount).Scan(&n, &total, &ftsRows); err != nil {
		return r, ix.wrap("check", err)
	}
	r.TotalOK = n == ftsRows && total == tokens
	return r, nil
}
