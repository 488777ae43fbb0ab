package index

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// EmbedText is what a note's vector is computed from: its title, body
// and tags, as search sees them.
func EmbedText(title, body string, tags []string) string {
	return title + "\n\n" + body + "\n\n" + strings.Join(tags, " ")
}

// EmbedHash identifies EmbedText: a vector is kept per hash and model, so
// an unchanged note is never embedded again, whatever its path or id.
func EmbedHash(title, body string, tags []string) string {
	sum := sha256.Sum256([]byte(EmbedText(title, body, tags)))
	return hex.EncodeToString(sum[:16])
}

// Pending is a note that has no vector for a model yet.
type Pending struct {
	Hash, Text string
}

// PendingVectors returns up to limit notes (one per distinct text) that
// have no vector for model, and how many there are in all.
func (ix *Index) PendingVectors(ctx context.Context, model string, limit int) ([]Pending, int, error) {
	const from = ` FROM memory_hashes h JOIN memories m ON m.id = h.memory_id
 WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = h.hash AND v.model = ?)`
	var total int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(DISTINCT h.hash)`+from, model).Scan(&total); err != nil {
		return nil, 0, ix.wrap("read", err)
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT h.hash, min(m.rowid)`+from+` GROUP BY h.hash LIMIT ?`, model, limit)
	if err != nil {
		return nil, 0, ix.wrap("read", err)
	}
	var hashes []string
	var rowids []int64
	for rows.Next() {
		var h string
		var r int64
		if err := rows.Scan(&h, &r); err != nil {
			rows.Close()
			return nil, 0, ix.wrap("read", err)
		}
		hashes, rowids = append(hashes, h), append(rowids, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, ix.wrap("read", err)
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, ix.wrap("read", err)
	}
	defer tx.Rollback()
	hits, found, err := ix.load(ctx, tx, rowids)
	if err != nil {
		return nil, 0, err
	}
	byRow := map[int64]string{}
	for i, r := range rowids {
		byRow[r] = hashes[i]
	}
	out := make([]Pending, 0, len(hits))
	for i, h := range hits {
		out = append(out, Pending{Hash: byRow[found[i]], Text: EmbedText(h.Title, h.Body, h.Tags)})
	}
	return out, total, nil
}

// PutVectors stores vectors by content hash for model.
func (ix *Index) PutVectors(ctx context.Context, model string, vecs map[string][]float32) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return ix.wrap("begin", err)
	}
	defer tx.Rollback()
	for h, v := range vecs {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors(hash, model, vec) VALUES (?, ?, ?)`, h, model, encodeVec(v)); err != nil {
			return ix.wrap("write", err)
		}
	}
	// A new generation tells every process holding the model's vectors in
	// memory to read them again. The first is the clock, not 1, so an
	// index made anew never repeats the generation of the one it replaced.
	if _, err := tx.ExecContext(ctx, `INSERT INTO vector_models(model, gen) VALUES (?, ?)
 ON CONFLICT(model) DO UPDATE SET gen = gen + 1`, model, time.Now().UnixNano()); err != nil {
		return ix.wrap("write", err)
	}
	if err := tx.Commit(); err != nil {
		return ix.wrap("commit", err)
	}
	return nil
}

// Scored is a note's rowid with its cosine to a query.
type Scored struct {
	Rowid  int64
	Cosine float64
}

// vecSet is one model's vectors in memory, row i of mat being hashes[i]'s
// unit vector. The scan reads them from here: a long-running process (the
// MCP server, the web UI) reads index.db's vectors once, and again only
// when vector_models.gen says another write changed them, since reading
// 10,000 vectors through SQLite costs ten times the scan itself.
type vecSet struct {
	gen    int64
	dims   int
	hashes []string
	mat    []float32
}

// vectorSet returns model's vectors as of tx, from memory when they have
// not changed since they were read.
func (ix *Index) vectorSet(ctx context.Context, tx *sql.Tx, model string) (*vecSet, error) {
	var gen int64
	err := tx.QueryRowContext(ctx, `SELECT gen FROM vector_models WHERE model = ?`, model).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return &vecSet{}, nil
	}
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	// One load at a time: a search that comes while WarmVectors reads
	// waits for that read instead of making a second.
	ix.vload.Lock()
	defer ix.vload.Unlock()
	ix.vmu.Lock()
	cached := ix.vsets[model]
	ix.vmu.Unlock()
	if cached != nil && cached.gen == gen {
		return cached, nil
	}
	// The count (from the key's index, not the vectors) sizes the matrix
	// once: growing 30 MB by appends copies it several times.
	var count int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM vectors WHERE model = ?`, model).Scan(&count); err != nil {
		return nil, ix.wrap("read", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT hash, vec FROM vectors WHERE model = ?`, model)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer rows.Close()
	set := &vecSet{gen: gen}
	if count > 0 {
		set.hashes = make([]string, 0, count)
	}
	for rows.Next() {
		var h string
		var blob sql.RawBytes
		if err := rows.Scan(&h, &blob); err != nil {
			return nil, ix.wrap("read", err)
		}
		d := len(blob) / 4
		if set.dims == 0 {
			set.dims = d
			set.mat = make([]float32, 0, count*d)
		}
		if d != set.dims || d == 0 {
			continue // a vector of another size: the server changed what the model name means
		}
		set.hashes = append(set.hashes, h)
		for i := 0; i < d; i++ {
			set.mat = append(set.mat, math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, ix.wrap("read", err)
	}
	ix.vmu.Lock()
	if ix.vsets == nil {
		ix.vsets = map[string]*vecSet{}
	}
	ix.vsets[model] = set
	ix.vmu.Unlock()
	return set, nil
}

// WarmVectors reads model's vectors into memory unless they are there
// already, so that a search that follows does not wait for them.
func (ix *Index) WarmVectors(ctx context.Context, model string) error {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ix.wrap("read", err)
	}
	defer tx.Rollback()
	_, err = ix.vectorSet(ctx, tx, model)
	return err
}

// DropVectorCache forgets the vectors held in memory, so the next search
// reads them from the database: what a process that searches once pays
// (benchmarks measure both).
func (ix *Index) DropVectorCache() {
	ix.vmu.Lock()
	ix.vsets = nil
	ix.vmu.Unlock()
}

// NearestVectors returns the k live notes (superseded ones too with
// f.WithSuperseded) matching f whose vectors (for
// model) are closest to q by cosine, best first: an exact scan, which at
// this scale beats an approximate index and needs no native extension.
// q must have unit length, as stored vectors do.
//
// Every vector is scored first; the notes behind the best ones are then
// looked up, best first, in growing rounds, until k pass f. A loose
// filter is answered by the first round; a narrow one (a small project)
// reads further down the ranking.
func (ix *Index) NearestVectors(ctx context.Context, model string, q []float32, f Filter, k int) ([]Hit, []float64, error) {
	f.Live = f.Live || !f.WithSuperseded
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	defer tx.Rollback()
	set, err := ix.vectorSet(ctx, tx, model)
	if err != nil {
		return nil, nil, err
	}
	n := len(set.hashes)
	if n == 0 || set.dims != len(q) || k <= 0 {
		return []Hit{}, nil, nil
	}
	scores := make([]float32, n)
	for i := range scores {
		scores[i] = dot(q, set.mat[i*set.dims:(i+1)*set.dims])
	}
	clauses, args := f.where(nil, nil)
	var best []Scored
	done := 0
	for need := max(2*k, 64); ; need *= 8 {
		order := topIndices(scores, min(need, n))
		for done < len(order) && len(best) < k {
			chunk := order[done:min(done+500, len(order))]
			done += len(chunk)
			if best, err = ix.notesOf(ctx, tx, set, scores, chunk, clauses, args, best); err != nil {
				return nil, nil, err
			}
		}
		if len(best) >= k || done == n {
			break
		}
	}
	if len(best) > k {
		best = best[:k]
	}
	rowids := make([]int64, len(best))
	cos := make(map[int64]float64, len(best))
	for i, b := range best {
		rowids[i] = b.Rowid
		cos[b.Rowid] = b.Cosine
	}
	hits, found, err := ix.load(ctx, tx, rowids)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float64, len(hits))
	for i := range hits {
		out[i] = cos[found[i]]
	}
	return hits, out, nil
}

// notesOf appends to best the notes passing the filter (clauses, args)
// whose content is one of set's vectors at positions chunk, in chunk's
// order (best first); notes sharing a text share its cosine.
func (ix *Index) notesOf(ctx context.Context, tx *sql.Tx, set *vecSet, scores []float32, chunk []int32, clauses []string, args []any, best []Scored) ([]Scored, error) {
	query := `SELECT m.rowid, h.hash FROM memory_hashes h JOIN memories m ON m.id = h.memory_id WHERE h.hash IN (` +
		strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + ")"
	if len(clauses) > 0 {
		query += " AND " + strings.Join(clauses, " AND ")
	}
	all := make([]any, 0, len(chunk)+len(args))
	for _, i := range chunk {
		all = append(all, set.hashes[i])
	}
	rows, err := tx.QueryContext(ctx, query+" ORDER BY m.rowid", append(all, args...)...)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer rows.Close()
	byHash := map[string][]int64{}
	for rows.Next() {
		var r int64
		var h string
		if err := rows.Scan(&r, &h); err != nil {
			return nil, ix.wrap("read", err)
		}
		byHash[h] = append(byHash[h], r)
	}
	if err := rows.Err(); err != nil {
		return nil, ix.wrap("read", err)
	}
	for _, i := range chunk {
		for _, r := range byHash[set.hashes[i]] {
			best = append(best, Scored{r, float64(scores[i])})
		}
	}
	return best, nil
}

// topIndices returns the positions of the m highest scores, highest first
// (ties: the lower position first), through a min-heap of m.
func topIndices(scores []float32, m int) []int32 {
	less := func(a, b int32) bool { // a ranks below b
		if scores[a] != scores[b] {
			return scores[a] < scores[b]
		}
		return a > b
	}
	h := make([]int32, 0, m)
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && less(h[c+1], h[c]) {
				c++
			}
			if !less(h[c], h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := range scores {
		x := int32(i)
		if len(h) < m {
			h = append(h, x)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if less(h[0], x) {
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b int32) int {
		if less(b, a) {
			return -1
		}
		return 1
	})
	return h
}

// dot is the dot product of two vectors of equal length, in four
// independent sums: the processor overlaps them, which makes the scan
// about twice as fast as one running sum.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// VectorCounts says how many live notes have a vector for model, of all.
func (ix *Index) VectorCounts(ctx context.Context, model string) (with, total int, err error) {
	err = ix.db.QueryRowContext(ctx, `SELECT count(*), count(v.hash) FROM memories m JOIN memory_hashes h ON h.memory_id = m.id
 LEFT JOIN vectors v ON v.hash = h.hash AND v.model = ?`, model).Scan(&total, &with)
	if err != nil {
		return 0, 0, ix.wrap("read", err)
	}
	return with, total, nil
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}
