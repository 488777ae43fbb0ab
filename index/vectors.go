package index

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
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

// PutVectors stores vectors by content hash (EmbedHash) for model, and
// keeps model's vector file (vectors_file.go) current: the new vectors
// are appended to it when it held exactly the vectors before this write,
// else it is written anew from the table once this write has committed.
//
// The append is what keeps a file's header true. Its blocks are written
// while the transaction holds index.db's write lock, so no other writer
// appends at the same time, and past the blocks the header counts, so no
// reader sees them; the header (the blocks and the new generation) is
// written only after the commit, through the file opened inside it. A
// crash between the two leaves the old header, naming a generation
// index.db no longer has: the file is rebuilt, never read wrong. A failed
// commit leaves the old header too, still true: the blocks past its count
// are never read, and the next append writes over them. A writer that
// comes between the commit and the header finds the old generation and
// rewrites the file instead of appending to it.
func (ix *Index) PutVectors(ctx context.Context, model string, vecs map[string][]float32) error {
	hashes := slices.Sorted(maps.Keys(vecs))
	for _, h := range hashes {
		if _, ok := hashBytes(h); !ok {
			return fmt.Errorf("put vectors: %q is not a content hash", h)
		}
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return ix.wrap("begin", err)
	}
	defer tx.Rollback()
	old, had, err := vectorGen(ctx, tx, model)
	if err != nil {
		return ix.wrap("read", err)
	}
	// A vector replaced (the same text embedded again) would be in the
	// file twice: the file is rewritten instead.
	replaced := false
	if had {
		if replaced, err = anyVector(ctx, tx, model, hashes); err != nil {
			return ix.wrap("read", err)
		}
	}
	for _, h := range hashes {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors(hash, model, vec) VALUES (?, ?, ?)`, h, model, encodeVec(vecs[h])); err != nil {
			return ix.wrap("write", err)
		}
	}
	// A new generation tells every process holding the model's vectors
	// (in memory, or in the vector file) to read them again. It is the
	// clock when that is later than the last one plus one, so an index
	// made anew, or one that lost its last commits to a power failure,
	// never repeats a generation a vector file may name.
	gen := max(old+1, time.Now().UnixNano())
	if _, err := tx.ExecContext(ctx, `INSERT INTO vector_models(model, gen) VALUES (?, ?)
 ON CONFLICT(model) DO UPDATE SET gen = excluded.gen`, model, gen); err != nil {
		return ix.wrap("write", err)
	}
	var app *vfAppend
	if had && !replaced {
		app = ix.appendVectors(model, old, hashes, vecs)
	}
	if err := tx.Commit(); err != nil {
		app.abort()
		return ix.wrap("commit", err)
	}
	if app != nil && app.finish(gen) == nil {
		return nil
	}
	// Best effort: a file left stale is rebuilt by the next search.
	ix.rewriteVectorFile(ctx, model)
	return nil
}

// vectorGen is model's generation in vector_models; had is false when
// model has no vectors.
func vectorGen(ctx context.Context, tx *sql.Tx, model string) (gen int64, had bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT gen FROM vector_models WHERE model = ?`, model).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return gen, err == nil, err
}

// anyVector reports whether model has a vector for any of hashes.
func anyVector(ctx context.Context, tx *sql.Tx, model string, hashes []string) (bool, error) {
	for start := 0; start < len(hashes); start += 500 {
		chunk := hashes[start:min(start+500, len(hashes))]
		args := []any{model}
		for _, h := range chunk {
			args = append(args, h)
		}
		var found bool
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM vectors WHERE model = ? AND hash IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`))`, args...).Scan(&found)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// appendVectors writes vecs past the blocks of model's vector file if it
// holds generation old (prepareAppend); nil if it does not.
func (ix *Index) appendVectors(model string, old int64, hashes []string, vecs map[string][]float32) *vfAppend {
	if len(hashes) == 0 {
		return nil
	}
	dims := len(vecs[hashes[0]])
	w := newBlockWriter(dims, len(hashes))
	for _, h := range hashes {
		if len(vecs[h]) != dims {
			return nil
		}
		b, _ := hashBytes(h)
		w.add(b, vecs[h])
	}
	return prepareAppend(vectorFilePath(ix.path, model), model, old, dims, w.blocks(), len(hashes))
}

// rewriteVectorFile writes model's vector file anew from the table (and
// keeps the set it read, which is current), unless writing it failed
// before in this process (saveVectorFile).
func (ix *Index) rewriteVectorFile(ctx context.Context, model string) {
	ix.vmu.Lock()
	prev := ix.vsets[model]
	ix.vmu.Unlock()
	if prev != nil && prev.noFile {
		return
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return
	}
	defer tx.Rollback()
	gen, had, err := vectorGen(ctx, tx, model)
	if err != nil || !had {
		return
	}
	ix.vload.Lock()
	defer ix.vload.Unlock()
	if set, err := ix.readVectorTable(ctx, tx, model, gen); err == nil {
		ix.keepSet(model, set)
	}
}

// Scored is a note's rowid with its cosine to a query.
type Scored struct {
	Rowid  int64
	Cosine float64
}

// vecSet is one model's vectors as the scan reads them: the blocks of its
// vector file (vectors_file.go), mapped from the file or, when the file
// had to be built, the blocks built in memory. Position i is lane i%8 of
// block i/8. A long-running process (the MCP server, the web UI) keeps it
// until vector_models.gen says another write changed the vectors.
type vecSet struct {
	gen      int64
	dims     int
	count    int
	nblocks  int
	blocks   []byte // nblocks × vfBlockSize(dims)
	fromFile bool   // blocks are the file's, checked as the scan reads them
	noFile   bool   // the file could not be written: do not try again for each batch
}

// hashAt is the content hash of the vector at position i.
func (s *vecSet) hashAt(i int32) string {
	off := int(i)/vfLanes*vfBlockSize(s.dims) + vfHeadSize + int(i)%vfLanes*vfMetaSize
	return hex.EncodeToString(s.blocks[off : off+16])
}

// vectorSet returns model's vectors as of tx: from memory when they have
// not changed since they were read, else from the vector file when it
// holds tx's generation, else from the table (writing the file anew).
func (ix *Index) vectorSet(ctx context.Context, tx *sql.Tx, model string) (*vecSet, error) {
	gen, had, err := vectorGen(ctx, tx, model)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	if !had {
		return &vecSet{}, nil
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
	set, err := openVectorFile(ix.path, model, gen)
	if err != nil {
		if set, err = ix.readVectorTable(ctx, tx, model, gen); err != nil {
			return nil, err
		}
	}
	ix.keepSet(model, set)
	return set, nil
}

// keepSet makes set the model's set in memory.
func (ix *Index) keepSet(model string, set *vecSet) {
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	if ix.vsets == nil {
		ix.vsets = map[string]*vecSet{}
	}
	if prev := ix.vsets[model]; prev != nil {
		set.noFile = set.noFile || prev.noFile
	}
	ix.vsets[model] = set
}

// dropSet forgets set if it is still model's set in memory.
func (ix *Index) dropSet(model string, set *vecSet) {
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	if ix.vsets[model] == set {
		delete(ix.vsets, model)
	}
}

// openVectorFile maps model's vector file if its header checks and names
// generation gen. The blocks are checked as the scan reads them.
func openVectorFile(dbPath, model string, gen int64) (*vecSet, error) {
	f, err := os.Open(vectorFilePath(dbPath, model))
	if err != nil {
		return nil, err
	}
	defer f.Close() // the map outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hb := make([]byte, vfHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, fmt.Errorf("%w: %v", errVectorFile, err)
	}
	h, err := decodeVFHeader(hb, model, fi.Size())
	if err != nil {
		return nil, err
	}
	if h.gen != gen {
		return nil, fmt.Errorf("%w: generation %d, index.db has %d", errVectorFile, h.gen, gen)
	}
	size := vfHeaderSize + h.blocks*vfBlockSize(h.dims)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, release, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	set := &vecSet{gen: gen, dims: h.dims, count: h.count, nblocks: h.blocks, blocks: data[vfHeaderSize:size:size], fromFile: true}
	// The map goes with the last reference to the set (runtime.KeepAlive
	// in NearestVectors holds it through a scan).
	runtime.AddCleanup(set, func(release func()) { release() }, release)
	return set, nil
}

// readVectorTable reads model's vectors from the table into blocks (as of
// tx, generation gen) and writes them as the model's vector file, unless
// writing failed before in this process. Vectors of another size than
// the first are left out: the server changed what the model name means.
// Hashes that are not content hashes cannot come from PutVectors and are
// left out too.
func (ix *Index) readVectorTable(ctx context.Context, tx *sql.Tx, model string, gen int64) (*vecSet, error) {
	// The count (from the key's index, not the vectors) sizes the blocks
	// once: growing 80 MB by appends copies it several times.
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
	var w *blockWriter
	var v []float32
	for rows.Next() {
		var h string
		var blob sql.RawBytes
		if err := rows.Scan(&h, &blob); err != nil {
			return nil, ix.wrap("read", err)
		}
		d := len(blob) / 4
		if w == nil && d > 0 && d <= vfMaxDims {
			set.dims, w, v = d, newBlockWriter(d, count), make([]float32, d)
		}
		hb, ok := hashBytes(h)
		if w == nil || d != set.dims || !ok {
			continue
		}
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:]))
		}
		w.add(hb, v)
		set.count++
	}
	if err := rows.Err(); err != nil {
		return nil, ix.wrap("read", err)
	}
	if w == nil {
		return set, nil
	}
	set.blocks = w.blocks()
	set.nblocks = len(set.blocks) / vfBlockSize(set.dims)
	ix.saveVectorFile(model, set)
	return set, nil
}

// saveVectorFile writes set as model's vector file, unless writing it
// failed before in this process (a read-only home): an embedding run
// would otherwise read the whole table again for each batch it puts.
func (ix *Index) saveVectorFile(model string, set *vecSet) {
	ix.vmu.Lock()
	prev := ix.vsets[model]
	ix.vmu.Unlock()
	if prev != nil && prev.noFile {
		set.noFile = true
		return
	}
	h := vfHeader{dims: set.dims, blocks: set.nblocks, count: set.count, gen: set.gen, model: modelSum(model)}
	set.noFile = writeVectorFile(vectorFilePath(ix.path, model), h, set.blocks) != nil
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
// reads them again: what a process that searches once pays (benchmarks
// measure both).
func (ix *Index) DropVectorCache() {
	ix.vmu.Lock()
	ix.vsets = nil
	ix.vmu.Unlock()
}

// NearestVectors returns the k live notes (superseded ones too with
// f.WithSuperseded) matching f whose vectors (for
// model) are closest to q by cosine, best first. q must have unit
// length, as stored vectors do.
//
// Every vector is scored, 8-bit (vectors_scan.go); the notes behind the
// best ones are then looked up, best first, in growing rounds, until k
// pass f. A loose filter is answered by the first round; a narrow one
// (a small project) reads further down the ranking. Each candidate looked
// up is scored again with its float32 vector from the table, so the
// cosines returned are exact and so is the order of the k returned; the
// 8-bit scores only choose which notes are looked up, the first round
// max(2k, 64) of them.
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
	if set.count == 0 || set.dims != len(q) || k <= 0 {
		return []Hit{}, nil, nil
	}
	best, err := ix.nearest(ctx, tx, model, set, q, f, k)
	if errors.Is(err, errVectorFile) && set.fromFile {
		// The file does not check, or names a vector the table lacks: it
		// is never trusted again; the table answers, and writes it anew.
		ix.dropSet(model, set)
		os.Remove(vectorFilePath(ix.path, model))
		if set, err = ix.readVectorTable(ctx, tx, model, set.gen); err == nil {
			ix.keepSet(model, set)
			best, err = ix.nearest(ctx, tx, model, set, q, f, k)
		}
	}
	runtime.KeepAlive(set)
	if err != nil {
		return nil, nil, err
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

// nearest is NearestVectors' ranking: the k best notes passing f, best
// first, each with its exact cosine.
func (ix *Index) nearest(ctx context.Context, tx *sql.Tx, model string, set *vecSet, q []float32, f Filter, k int) ([]Scored, error) {
	scores, err := scanSet(newQuery8(q), set.blocks, set.nblocks, set.count)
	if err != nil {
		return nil, err
	}
	clauses, args := f.where(nil, nil)
	looked := make([]bool, len(scores))
	var best []Scored
	for need := max(2*k, 64); ; need *= 8 {
		m := min(need, set.count)
		var todo []int32
		for _, i := range topIndices(scores, m) {
			if !looked[i] {
				todo = append(todo, i)
			}
		}
		for len(todo) > 0 && len(best) < k {
			chunk := todo[:min(500, len(todo))]
			todo = todo[len(chunk):]
			if err := ix.exactScores(ctx, tx, model, set, q, scores, chunk); err != nil {
				return nil, err
			}
			for _, i := range chunk {
				looked[i] = true
			}
			if best, err = ix.notesOf(ctx, tx, set, scores, chunk, clauses, args, best); err != nil {
				return nil, err
			}
		}
		if len(best) >= k || m == set.count {
			break
		}
	}
	slices.SortStableFunc(best, func(a, b Scored) int { return cmp.Compare(b.Cosine, a.Cosine) })
	return best[:min(k, len(best))], nil
}

// exactScores replaces the 8-bit scores at positions chunk by the dot
// products of q with the float32 vectors the table holds for them. A
// vector the file names but the table lacks means the file is not what
// its generation says: errVectorFile.
func (ix *Index) exactScores(ctx context.Context, tx *sql.Tx, model string, set *vecSet, q []float32, scores []float32, chunk []int32) error {
	at := make(map[string][]int32, len(chunk))
	args := make([]any, 0, len(chunk)+1)
	args = append(args, model)
	for _, i := range chunk {
		h := set.hashAt(i)
		if _, dup := at[h]; !dup {
			args = append(args, h)
		}
		at[h] = append(at[h], i)
	}
	rows, err := tx.QueryContext(ctx, `SELECT hash, vec FROM vectors WHERE model = ? AND hash IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(args)-1), ",")+")", args...)
	if err != nil {
		return ix.wrap("read", err)
	}
	defer rows.Close()
	v := make([]float32, len(q))
	for rows.Next() {
		var h string
		var blob sql.RawBytes
		if err := rows.Scan(&h, &blob); err != nil {
			return ix.wrap("read", err)
		}
		if len(blob) != 4*len(q) {
			continue // what the file has is not this vector: found missing below
		}
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:]))
		}
		s := dot(q, v)
		for _, i := range at[h] {
			scores[i] = s
		}
		delete(at, h)
	}
	if err := rows.Err(); err != nil {
		return ix.wrap("read", err)
	}
	if len(at) > 0 {
		return fmt.Errorf("%w: %d vectors the table does not have", errVectorFile, len(at))
	}
	return nil
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
		all = append(all, set.hashAt(i))
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
		for _, r := range byHash[set.hashAt(i)] {
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

// VectorCounts says how many notes have a vector for model, of all.
// memory_hashes has one row per note, written and deleted with it (and
// dropped with it by a rebuild), so it is counted without the notes
// themselves: looking each note up cost a search at 100,000 notes
// 0.3 s of CPU and 250 MB of index pages.
func (ix *Index) VectorCounts(ctx context.Context, model string) (with, total int, err error) {
	err = ix.db.QueryRowContext(ctx, `SELECT count(*), count(v.hash) FROM memory_hashes h
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
