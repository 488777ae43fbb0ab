package index

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
)

// errNeedFTS5 sends a query back to FTS5's own ranking.
var errNeedFTS5 = errors.New("query needs FTS5's ranking")

// termList is one token's stored postings.
type termList struct {
	df     int64
	firsts []int64  // chunk keys, read with chunks
	chunks [][]byte // read only when the token is scored, the tail row last
	// The tail row alone, read by a lookup before chunks are (tail.go).
	tail              tailRow
	hasTail, tailRead bool
}

// postingScorer holds one query's state: FTS5's table statistics and the
// score of every note touched so far.
type postingScorer struct {
	avgdl  float64 // FTS5's average note length
	acc    []float64
	sparse map[int64]float64 // instead of acc when rowids are sparse
	docs   []int64           // rowids with a non-zero score, in first-touch order
}

// add scores one phrase's postings, as fts5Bm25Function's loop does for
// every row: score += idf * (f*(k1+1)) / (f + k1*(1 - b + b*D/avgdl)).
// The explicit conversions keep the compiler from fusing a multiply and
// an add, so every step rounds as in C; phrases are added in query order,
// so each note's sum is FTS5's, bit for bit.
func (s *postingScorer) add(chunks [][]byte, w float64) error {
	for _, c := range chunks {
		if err := s.addChunk(c, w); err != nil {
			return err
		}
	}
	return nil
}

func (s *postingScorer) addChunk(list []byte, w float64) error {
	k1, k1p1, b := bm25Params()
	r := postingReader{b: list}
	for {
		p, ok, err := r.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		c := bm25Term(w, p, k1, k1p1, b, s.avgdl)
		if s.sparse != nil {
			old, seen := s.sparse[p.rowid]
			if !seen {
				s.docs = append(s.docs, p.rowid)
			}
			s.sparse[p.rowid] = old + c
			continue
		}
		if p.rowid < 0 || p.rowid >= int64(len(s.acc)) {
			return errBadPostings
		}
		if s.acc[p.rowid] == 0 {
			s.docs = append(s.docs, p.rowid)
		}
		s.acc[p.rowid] = s.acc[p.rowid] + c
	}
}

// accumulator returns a zeroed score array of at least n entries, reused
// between searches: at 100,000 notes a fresh one is 800 KB of garbage
// per query.
func (ix *Index) accumulator(n int) []float64 {
	if p, ok := ix.accs.Get().(*[]float64); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float64, n)
}

// release zeroes what the query touched and returns the array.
func (s *postingScorer) release(ix *Index) {
	if s == nil || s.acc == nil {
		return
	}
	for _, r := range s.docs {
		s.acc[r] = 0
	}
	acc := s.acc
	s.acc = nil
	ix.accs.Put(&acc)
}

func (s *postingScorer) score(rowid int64) float64 {
	if s.sparse != nil {
		return s.sparse[rowid]
	}
	return s.acc[rowid]
}

// queryStats is what scoring one query needs from the index: FTS5's row
// count and total token count, and each query token's postings.
type queryStats struct {
	n, total int64
	lists    map[string]*termList
	maxRowid int64
}

func (ix *Index) loadStats(ctx context.Context, tx *sql.Tx, terms []string) (*queryStats, error) {
	q := &queryStats{lists: make(map[string]*termList, len(terms))}
	rows, err := tx.QueryContext(ctx, `SELECT key, CAST(value AS INTEGER) FROM index_meta WHERE key IN (?, ?)`, metaDocCount, metaTokenCount)
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	for rows.Next() {
		var key string
		var v int64
		if err := rows.Scan(&key, &v); err != nil {
			rows.Close()
			return nil, ix.wrap("search", err)
		}
		if key == metaDocCount {
			q.n = v
		} else {
			q.total = v
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, ix.wrap("search", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM memories`).Scan(&q.maxRowid); err != nil {
		return nil, ix.wrap("search", err)
	}
	st, err := ix.txStmt(ctx, tx, dfSQL)
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	for _, t := range terms {
		if _, ok := q.lists[t]; ok {
			continue
		}
		if strings.HasPrefix(t, multiPrefix) {
			l, err := ix.phraseList(ctx, tx, q, strings.TrimPrefix(t, multiPrefix))
			if err != nil {
				return nil, err
			}
			q.lists[t] = l
			continue
		}
		l := &termList{}
		if err := st.QueryRowContext(ctx, t).Scan(&l.df); err != nil {
			return nil, ix.wrap("search", err)
		}
		q.lists[t] = l
	}
	return q, nil
}

// phraseList builds the postings of a phrase of several tokens: FTS5
// finds the notes holding the tokens adjacently and scores that phrase
// alone; each note's count is the integer that gives back exactly that
// score with the note's length from the postings of the phrase's first
// token. It returns errNeedFTS5 when no count does (it never should).
func (ix *Index) phraseList(ctx context.Context, tx *sql.Tx, q *queryStats, word string) (*termList, error) {
	st, err := ix.txStmt(ctx, tx, `SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid`)
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	rows, err := st.QueryContext(ctx, `"`+word+`"`)
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	type hit struct {
		rowid int64
		term  float64
	}
	var hits []hit
	for rows.Next() {
		var h hit
		var bm float64
		if err := rows.Scan(&h.rowid, &bm); err != nil {
			rows.Close()
			return nil, ix.wrap("search", err)
		}
		h.term = -bm
		hits = append(hits, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, ix.wrap("search", err)
	}
	l := &termList{df: int64(len(hits))}
	if len(hits) == 0 {
		return l, nil
	}
	// The lengths come from the first token's list: read whole when many
	// notes hold the phrase, else one chunk per note.
	first := &termList{}
	tok := fts5token.Tokens(word)[0]
	if len(hits) > 64 {
		if first.firsts, first.chunks, err = ix.chunks(ctx, tx, tok); err != nil {
			return nil, err
		}
	}
	w := idf(q.n, l.df)
	avgdl := float64(q.total) / float64(q.n)
	var data []byte
	var prev int64
	for _, h := range hits {
		p, ok, err := ix.lookup(ctx, tx, tok, first, h.rowid)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errNeedFTS5
		}
		if p.tf, ok = phraseCount(h.term, w, p.dl, avgdl); !ok {
			return nil, errNeedFTS5
		}
		data = appendPosting(data, prev, p)
		prev = p.rowid
	}
	l.firsts, l.chunks = []int64{hits[0].rowid}, [][]byte{data}
	return l, nil
}

// chunks reads a token's postings and their chunk keys.
func (ix *Index) chunks(ctx context.Context, tx *sql.Tx, term string) ([]int64, [][]byte, error) {
	st, err := ix.txStmt(ctx, tx, `SELECT first, data FROM index_postings WHERE term = ? ORDER BY first`)
	if err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	rows, err := st.QueryContext(ctx, term)
	if err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	defer rows.Close()
	var firsts []int64
	var out [][]byte
	for rows.Next() {
		var first int64
		var b []byte
		if err := rows.Scan(&first, &b); err != nil {
			return nil, nil, ix.wrap("search", err)
		}
		firsts, out = append(firsts, first), append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, ix.wrap("search", err)
	}
	// The token's tail row comes after its chunks (tail.go).
	r, ok, err := ix.tailRow(ctx, tx, term)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		firsts, out = append(firsts, r.first), append(out, r.data)
	}
	return firsts, out, nil
}

// tailRow reads a token's tail row; ok is false when it has none.
func (ix *Index) tailRow(ctx context.Context, tx *sql.Tx, term string) (r tailRow, ok bool, err error) {
	st, err := ix.txStmt(ctx, tx, `SELECT first, data FROM index_tail WHERE term = ?`)
	if err != nil {
		return r, false, ix.wrap("search", err)
	}
	err = st.QueryRowContext(ctx, term).Scan(&r.first, &r.data)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, ix.wrap("search", err)
	}
	return r, true, nil
}

// floored reports whether FTS5 floors the IDF of a token in df notes.
func (q *queryStats) floored(df int64) bool { return df > 0 && 2*df >= q.n }

// score scores the query's phrases in order, leaving out floored ones
// when skipFloored. Postings are read as first needed.
func (q *queryStats) score(ctx context.Context, ix *Index, tx *sql.Tx, terms []string, skipFloored bool) (*postingScorer, error) {
	s := &postingScorer{avgdl: float64(q.total) / float64(q.n)}
	if q.maxRowid > 8*q.n+1024 {
		s.sparse = map[int64]float64{}
	} else {
		s.acc = ix.accumulator(int(q.maxRowid) + 1)
	}
	for _, t := range terms {
		l := q.lists[t]
		if l.df == 0 || skipFloored && q.floored(l.df) {
			continue
		}
		if l.chunks == nil {
			var err error
			if l.firsts, l.chunks, err = ix.chunks(ctx, tx, t); err != nil {
				return nil, err
			}
		}
		if err := s.add(l.chunks, idf(q.n, l.df)); err != nil {
			s.release(ix)
			return nil, ix.wrap("search", err)
		}
	}
	return s, nil
}

// goRank answers the seed's query from the postings: the top k (plus one)
// notes passing f, by score then updated_at, with their scores.
//
// Words in at least half the notes are scored last and only where they
// can matter: each adds less than bm25Floor to a score, so ranking by
// the other words first, every note that can still reach the top k is
// one whose partial score is within floored*bm25Floor of the k-th. Those
// few are then scored with every word, in the query's order, from the
// chunks holding them. Only when fewer than k notes contain a rarer word
// are the common words' whole lists scored.
func (ix *Index) goRank(ctx context.Context, tx *sql.Tx, terms []string, f Filter, k int) ([]int64, []float64, error) {
	q, err := ix.loadStats(ctx, tx, terms)
	if err != nil {
		return nil, nil, err
	}
	if q.n <= 0 {
		return []int64{}, []float64{}, nil
	}
	floored := 0
	for _, t := range terms {
		if q.floored(q.lists[t].df) {
			floored++
		}
	}
	if floored > 0 && floored < len(terms) {
		s, err := q.score(ctx, ix, tx, terms, true)
		if err != nil {
			return nil, nil, err
		}
		cands, err := ix.passing(ctx, tx, s, f, k+1, float64(floored)*bm25Floor)
		s.release(ix)
		if err != nil {
			return nil, nil, err
		}
		if len(cands) >= k+1 {
			if err := q.rescore(ctx, ix, tx, terms, cands); err != nil {
				return nil, nil, err
			}
			ix.paths.Postings.Add(1)
			rowids, scores := best(cands, k+1)
			return rowids, scores, nil
		}
	}
	s, err := q.score(ctx, ix, tx, terms, false)
	if err != nil {
		return nil, nil, err
	}
	cands, err := ix.passing(ctx, tx, s, f, k+1, 0)
	s.release(ix)
	if err != nil {
		return nil, nil, err
	}
	ix.paths.Postings.Add(1)
	rowids, scores := best(cands, k+1)
	return rowids, scores, nil
}

// cand is a note that passed the filter, with its score so far.
type cand struct {
	rowid   int64
	score   float64
	updated string
}

// best orders candidates as the seed does (score, then updated_at newest
// first; rowid only to make full ties deterministic) and keeps limit.
func best(cands []cand, limit int) ([]int64, []float64) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.updated != b.updated {
			return a.updated > b.updated
		}
		return a.rowid < b.rowid
	})
	cands = cands[:min(len(cands), limit)]
	rowids, scores := make([]int64, len(cands)), make([]float64, len(cands))
	for i, c := range cands {
		rowids[i], scores[i] = c.rowid, c.score
	}
	return rowids, scores
}

// rescore replaces each candidate's partial score with its full score:
// every phrase, in query order, exactly as FTS5 sums them.
func (q *queryStats) rescore(ctx context.Context, ix *Index, tx *sql.Tx, terms []string, cands []cand) error {
	k1, k1p1, b := bm25Params()
	avgdl := float64(q.total) / float64(q.n)
	found := make(map[string]map[int64]posting, len(q.lists))
	for t, l := range q.lists {
		if l.df == 0 {
			continue
		}
		m := make(map[int64]posting, len(cands))
		for _, c := range cands {
			p, ok, err := ix.lookup(ctx, tx, t, l, c.rowid)
			if err != nil {
				return err
			}
			if ok {
				m[c.rowid] = p
			}
		}
		found[t] = m
	}
	for i := range cands {
		var score float64
		for _, t := range terms {
			if p, ok := found[t][cands[i].rowid]; ok {
				score = score + bm25Term(idf(q.n, q.lists[t].df), p, k1, k1p1, b, avgdl)
			}
		}
		cands[i].score = score
	}
	return nil
}

// chunkOf reads the chunk of term's list that would hold rowid into
// data (nil when there is none).
func (ix *Index) chunkOf(ctx context.Context, tx *sql.Tx, term string, rowid int64, data *[]byte) error {
	st, err := ix.txStmt(ctx, tx, `SELECT data FROM index_postings WHERE term = ? AND first <= ? ORDER BY first DESC LIMIT 1`)
	if err != nil {
		return ix.wrap("search", err)
	}
	err = st.QueryRowContext(ctx, term, rowid).Scan(data)
	if errors.Is(err, sql.ErrNoRows) {
		*data = nil
		return nil
	}
	if err != nil {
		return ix.wrap("search", err)
	}
	return nil
}

// lookup finds rowid's entry in a token's list: in its chunks when they
// were read, else in the one chunk that would hold it.
func (ix *Index) lookup(ctx context.Context, tx *sql.Tx, term string, l *termList, rowid int64) (posting, bool, error) {
	var data []byte
	if l.chunks != nil {
		i, found := slices.BinarySearch(l.firsts, rowid)
		if !found {
			i--
		}
		if i < 0 {
			return posting{}, false, nil
		}
		data = l.chunks[i]
	} else {
		if !l.tailRead {
			var err error
			if l.tail, l.hasTail, err = ix.tailRow(ctx, tx, term); err != nil {
				return posting{}, false, err
			}
			l.tailRead = true
		}
		if l.hasTail && rowid >= l.tail.first {
			data = l.tail.data
		} else if err := ix.chunkOf(ctx, tx, term, rowid, &data); err != nil || data == nil {
			return posting{}, false, err
		}
	}
	r := postingReader{b: data}
	for {
		p, ok, err := r.next()
		if err != nil {
			return posting{}, false, ix.wrap("search", err)
		}
		if !ok || p.rowid > rowid {
			return posting{}, false, nil
		}
		if p.rowid == rowid {
			return p, true, nil
		}
	}
}

// passing returns the notes passing f (and not superseded, unless
// f.WithSuperseded) whose score is
// at least the limit-th best passing score minus margin (all passing
// notes when fewer than limit pass). Filters live in SQL, so candidates
// are checked best first in growing rounds; every note tied with the
// limit-th (or within margin of it) is included.
func (ix *Index) passing(ctx context.Context, tx *sql.Tx, s *postingScorer, f Filter, limit int, margin float64) ([]cand, error) {
	clauses, args := f.where([]string{"m.rowid IN (SELECT value FROM json_each(?))"}, []any{nil})
	if !f.WithSuperseded {
		clauses = append(clauses, "m.id NOT IN (SELECT superseded_id FROM memory_supersedes)")
	}
	st, err := ix.txStmt(ctx, tx, `SELECT m.rowid, m.updated_at FROM memories m WHERE `+strings.Join(clauses, " AND "))
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	checked := make(map[int64]bool, 4*limit)
	var pass []cand
	m := 2*limit + 8
	if f.Project != "" || f.Type != "" || f.Scope != "" || len(f.Types) > 0 {
		m = 8*limit + 64
	}
	const slack = 1e-9 // float rounding in the sums
	for {
		t := math.Inf(-1)
		if m < len(s.docs) {
			t = s.nthLargest(m)
		}
		var batch []int64
		for _, r := range s.docs {
			if s.score(r) >= t && !checked[r] {
				batch = append(batch, r)
				checked[r] = true
			}
		}
		for len(batch) > 0 {
			chunk := batch[:min(len(batch), 2000)]
			batch = batch[len(chunk):]
			var js strings.Builder
			js.WriteByte('[')
			for i, r := range chunk {
				if i > 0 {
					js.WriteByte(',')
				}
				js.WriteString(strconv.FormatInt(r, 10))
			}
			js.WriteByte(']')
			args[0] = js.String()
			rows, err := st.QueryContext(ctx, args...)
			if err != nil {
				return nil, ix.wrap("search", err)
			}
			for rows.Next() {
				var c cand
				if err := rows.Scan(&c.rowid, &c.updated); err != nil {
					rows.Close()
					return nil, ix.wrap("search", err)
				}
				c.score = s.score(c.rowid)
				pass = append(pass, c)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, ix.wrap("search", err)
			}
		}
		if m >= len(s.docs) {
			return pass, nil // every scored note was checked
		}
		if len(pass) >= limit {
			// The limit-th passing score, and the cut below which no note
			// can reach it: every unchecked note scores below t.
			ps := make([]float64, len(pass))
			for i, c := range pass {
				ps[i] = c.score
			}
			slices.Sort(ps)
			cut := ps[len(ps)-limit]
			if margin > 0 {
				cut -= margin + slack
			}
			if t <= cut {
				keep := pass[:0]
				for _, c := range pass {
					if c.score >= cut {
						keep = append(keep, c)
					}
				}
				return keep, nil
			}
		}
		m *= 8
	}
}

// nthLargest returns the m-th largest score of the notes touched, in one
// pass with a min-heap of the m best so far.
func (s *postingScorer) nthLargest(m int) float64 {
	h := make([]float64, 0, m)
	for _, r := range s.docs {
		v := s.score(r)
		if len(h) < m {
			h = append(h, v)
			for i := len(h) - 1; i > 0; { // sift up
				p := (i - 1) / 2
				if h[p] <= h[i] {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			continue
		}
		if v <= h[0] {
			continue
		}
		h[0] = v
		for i := 0; ; { // sift down
			l, small := 2*i+1, i
			if l < m && h[l] < h[small] {
				small = l
			}
			if l+1 < m && h[l+1] < h[small] {
				small = l + 1
			}
			if small == i {
				break
			}
			h[i], h[small] = h[small], h[i]
			i = small
		}
	}
	return h[0]
}
