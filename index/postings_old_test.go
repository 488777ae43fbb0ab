package index

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// oldPostingEdits merges a transaction's postings the way postingEdits
// did before the merge read tokens' last chunks in batches (issue #29):
// token by token, each with its own SELECTs, UPDATE or INSERT and df
// upsert. It is kept, frozen, as the reference the batched merge must
// match byte for byte (TestBatchedMergeMatchesTokenByToken).
type oldPostingEdits struct{ *postingEdits }

func (e oldPostingEdits) write(a *applier) error {
	for term, t := range e.terms {
		if len(t.added) == 0 && len(t.removed) == 0 {
			continue
		}
		if err := oldTermWrite(t, a, term); err != nil {
			return fmt.Errorf("postings of %q: %w", term, err)
		}
	}
	if e.tokens == 0 {
		return nil
	}
	return a.exec(`UPDATE index_meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?`, e.tokens, metaTokenCount)
}

func oldTermWrite(t *termEdits, a *applier, term string) error {
	if done, err := oldAppendOnly(t, a, term); done || err != nil {
		return err
	}
	chunks, err := oldTouchedChunks(t, a, term)
	if err != nil {
		return err
	}
	oldRoute(t, chunks)
	var delta int64
	for _, c := range chunks {
		n, err := oldStore(c, a, term)
		if err != nil {
			return err
		}
		delta += int64(n - c.loaded)
	}
	return oldWriteDF(a, term, delta)
}

func oldTouchedChunks(t *termEdits, a *applier, term string) ([]*chunk, error) {
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
		if n := len(chunks); n > 0 && oldHolds(chunks[n-1], r) {
			continue
		}
		c, err := oldLoadChunk(a, term, r)
		if err != nil {
			return nil, err
		}
		if c == nil {
			break
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

func oldRoute(t *termEdits, chunks []*chunk) {
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

func oldStore(c *chunk, a *applier, term string) (int, error) {
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
		if err := a.exec(`DELETE FROM index_postings WHERE term = ? AND first = ?`, term, c.first); err != nil {
			return 0, err
		}
	}
	n := len(live)
	size := len(live)
	if size > a.chunkMax {
		size = a.chunkTarget
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
		if err := a.exec(`INSERT OR REPLACE INTO index_postings(term, first, n, last, data) VALUES (?, ?, ?, ?, ?)`,
			term, part[0].rowid, len(part), part[len(part)-1].rowid, data); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func oldAppendOnly(t *termEdits, a *applier, term string) (done bool, err error) {
	if len(t.removed) > 0 || len(t.added) == 0 {
		return false, nil
	}
	for i := 1; i < len(t.added); i++ {
		if t.added[i].rowid <= t.added[i-1].rowid {
			return false, nil
		}
	}
	row, err := a.queryRow(`SELECT first, n, last FROM index_postings WHERE term = ? ORDER BY first DESC LIMIT 1`, term)
	if err != nil {
		return false, err
	}
	var first, n, last int64
	switch err := row.Scan(&first, &n, &last); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	if t.added[0].rowid <= last || n+int64(len(t.added)) > int64(a.chunkMax) {
		return false, nil
	}
	var data []byte
	prev := last
	for _, p := range t.added {
		data = appendPosting(data, prev, p)
		prev = p.rowid
	}
	if err := a.exec(`UPDATE index_postings SET n = n + ?, last = ?, data = data || ? WHERE term = ? AND first = ?`,
		len(t.added), prev, data, term, first); err != nil {
		return false, err
	}
	return true, oldWriteDF(a, term, int64(len(t.added)))
}

func oldWriteDF(a *applier, term string, delta int64) error {
	switch {
	case delta > 0:
		return a.exec(`INSERT INTO index_df(term, df) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET df = df + excluded.df`, term, delta)
	case delta < 0:
		if err := a.exec(`UPDATE index_df SET df = df + ? WHERE term = ?`, delta, term); err != nil {
			return err
		}
		return a.exec(`DELETE FROM index_df WHERE term = ? AND df <= 0`, term)
	}
	return nil
}

func oldHolds(c *chunk, r int64) bool {
	for _, p := range c.entries {
		if p.rowid == r {
			return true
		}
	}
	return false
}

func oldLoadChunk(a *applier, term string, r int64) (*chunk, error) {
	c := &chunk{stored: true}
	var data []byte
	row, err := a.queryRow(`SELECT first, data FROM index_postings WHERE term = ? AND first <= ? ORDER BY first DESC LIMIT 1`, term, r)
	if err != nil {
		return nil, err
	}
	err = row.Scan(&c.first, &data)
	if errors.Is(err, sql.ErrNoRows) {
		if row, err = a.queryRow(`SELECT first, data FROM index_postings WHERE term = ? ORDER BY first LIMIT 1`, term); err != nil {
			return nil, err
		}
		err = row.Scan(&c.first, &data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if c.entries, err = decodePostings(data, nil); err != nil {
		return nil, err
	}
	c.loaded = len(c.entries)
	return c, nil
}
