package index

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// The vector file: one model's vectors, 8-bit, beside index.db, so that
// a process's first semantic search maps them instead of reading 300 MB
// of float32 rows through SQLite (at 100,000 notes of 768 dimensions
// 0.9 to 1.7 s, over a prompt hook's whole budget).
//
// It is a cache of the vectors table, which stays the source of truth.
// The header names the vector_models generation whose vectors the file
// holds; a reader uses the file only when that is the generation it sees
// in index.db, and reads the table (and writes the file anew) in every
// other case: no file, another generation, a header or block that does
// not check, a size that does not match. Hence no fsync: whatever a crash
// or a power loss leaves (a header newer than its blocks, blocks of
// zeros, a file of another generation) fails a check and costs one read
// of the table, never a wrong vector. The writer's rules that keep a
// current header true are in PutVectors.
//
// Layout, little-endian: a 64-byte header, then blocks of 8 vectors.
//
//	header: magic [8] | dims u32 | 0 u32 | blocks u64 | count u64 |
//	        gen i64 | sha256(model)[:16] | 0 u32 | crc32 of the 60 bytes before
//	block:  lanes u32 | 0 u32 | sum1 u64 | sum2 u64 (Fletcher-64 of the
//	        rest of the block, as words) | 8 × (hash [16] | scale f32 |
//	        Σq i32) | dims × u64, word d holding component d of the
//	        block's 8 vectors, one byte each, q+128
//
// A vector v of unit length is kept as q = round(v/scale) in −127..127,
// scale = max|v|/127 (per vector, so a vector with one large component
// loses no more than it must). Blocks are written once and never changed:
// a write appends blocks (the last of a batch may hold fewer than 8
// vectors), so a reader that mapped the file sees the same bytes for the
// blocks its header counts whatever a writer does after.
const (
	vfMagic      = "anmvec1\n"
	vfHeaderSize = 64
	vfLanes      = 8
	vfMetaSize   = 24 // per vector: hash, scale, Σq
	vfHeadSize   = 24 // per block: lanes, checksum
	vfMaxDims    = 65536
)

// vfBlockSize is the size of one block of dims-dimensional vectors.
func vfBlockSize(dims int) int { return vfHeadSize + vfLanes*vfMetaSize + 8*dims }

// vfHeader is the decoded header of a vector file.
type vfHeader struct {
	dims   int
	blocks int
	count  int
	gen    int64
	model  [16]byte
}

func modelSum(model string) [16]byte {
	s := sha256.Sum256([]byte(model))
	return [16]byte(s[:16])
}

// vectorFilePath is model's vector file beside the index at dbPath.
func vectorFilePath(dbPath, model string) string {
	s := modelSum(model)
	return dbPath + ".vec-" + hex.EncodeToString(s[:8])
}

func (h vfHeader) encode() []byte {
	b := make([]byte, vfHeaderSize)
	copy(b, vfMagic)
	binary.LittleEndian.PutUint32(b[8:], uint32(h.dims))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.blocks))
	binary.LittleEndian.PutUint64(b[24:], uint64(h.count))
	binary.LittleEndian.PutUint64(b[32:], uint64(h.gen))
	copy(b[40:56], h.model[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.ChecksumIEEE(b[:60]))
	return b
}

// errVectorFile is a vector file that does not check: it is rebuilt.
var errVectorFile = errors.New("vector file does not check")

// decodeVFHeader checks a header against the model and the file's size:
// every count it returns addresses bytes the file has.
func decodeVFHeader(b []byte, model string, size int64) (vfHeader, error) {
	var h vfHeader
	if len(b) < vfHeaderSize || string(b[:8]) != vfMagic {
		return h, fmt.Errorf("%w: no header", errVectorFile)
	}
	if crc32.ChecksumIEEE(b[:60]) != binary.LittleEndian.Uint32(b[60:]) {
		return h, fmt.Errorf("%w: header checksum", errVectorFile)
	}
	dims := binary.LittleEndian.Uint32(b[8:])
	blocks := binary.LittleEndian.Uint64(b[16:])
	count := binary.LittleEndian.Uint64(b[24:])
	h.gen = int64(binary.LittleEndian.Uint64(b[32:]))
	copy(h.model[:], b[40:56])
	if h.model != modelSum(model) {
		return h, fmt.Errorf("%w: another model's", errVectorFile)
	}
	if dims == 0 || dims > vfMaxDims {
		return h, fmt.Errorf("%w: %d dimensions", errVectorFile, dims)
	}
	h.dims = int(dims)
	room := uint64(size-vfHeaderSize) / uint64(vfBlockSize(h.dims))
	if size < vfHeaderSize || blocks > room || count > vfLanes*blocks || count < blocks {
		return h, fmt.Errorf("%w: %d vectors in %d blocks, room for %d blocks", errVectorFile, count, blocks, room)
	}
	h.blocks, h.count = int(blocks), int(count)
	return h, nil
}

// hashBytes is a content hash (EmbedHash: 32 lowercase hex digits) as the
// file keeps it; ok is false for any other string.
func hashBytes(h string) (b [16]byte, ok bool) {
	if len(h) != 32 {
		return b, false
	}
	for i := 0; i < 32; i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return b, false
		}
	}
	_, err := hex.Decode(b[:], []byte(h))
	return b, err == nil
}

// blockWriter packs vectors into blocks.
type blockWriter struct {
	dims int
	out  []byte // whole blocks
	cur  []byte // the block being filled (vfBlockSize(dims) bytes)
	n    int    // vectors in cur
	q    []int8
}

func newBlockWriter(dims, capacity int) *blockWriter {
	bs := vfBlockSize(dims)
	return &blockWriter{dims: dims, out: make([]byte, 0, (capacity+vfLanes-1)/vfLanes*bs), cur: make([]byte, bs), q: make([]int8, dims)}
}

// add appends one vector (len(v) == dims) under its hash.
func (w *blockWriter) add(hash [16]byte, v []float32) {
	scale, sum := quantize(v, w.q)
	lane := w.n
	m := w.cur[vfHeadSize+lane*vfMetaSize:]
	copy(m, hash[:])
	binary.LittleEndian.PutUint32(m[16:], math.Float32bits(scale))
	binary.LittleEndian.PutUint32(m[20:], uint32(sum))
	words := w.cur[vfHeadSize+vfLanes*vfMetaSize:]
	for d, x := range w.q {
		words[8*d+lane] = byte(int(x) + 128)
	}
	w.n++
	if w.n == vfLanes {
		w.flush()
	}
}

// flush closes the block being filled, if it holds any vector.
func (w *blockWriter) flush() {
	if w.n == 0 {
		return
	}
	binary.LittleEndian.PutUint32(w.cur, uint32(w.n))
	s1, s2 := fletcher(w.cur[vfHeadSize:])
	binary.LittleEndian.PutUint64(w.cur[8:], s1)
	binary.LittleEndian.PutUint64(w.cur[16:], s2)
	w.out = append(w.out, w.cur...)
	clear(w.cur)
	w.n = 0
}

// blocks returns the whole blocks written, flushing a partial one.
func (w *blockWriter) blocks() []byte {
	w.flush()
	return w.out
}

// fletcher is the Fletcher-64 checksum of b (a multiple of 8 bytes) read
// as words: cheap enough to check every block in the scan that reads it,
// and a torn, zeroed or shifted block fails it.
func fletcher(b []byte) (s1, s2 uint64) {
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += binary.LittleEndian.Uint64(b[i:])
		s2 += s1
	}
	return s1, s2
}

// quantize writes round(v/scale) into q and returns scale (max|v|/127)
// and the sum of q. NaN and infinite components count as zero.
func quantize(v []float32, q []int8) (scale float32, sum int32) {
	var m float32
	for _, x := range v {
		if a := float32(math.Abs(float64(x))); a > m && a <= math.MaxFloat32 {
			m = a
		}
	}
	if m == 0 {
		clear(q)
		return 0, 0
	}
	scale = m / 127
	inv := 1 / scale
	for i, x := range v {
		r := math.Round(float64(x * inv))
		if r != r { // NaN
			r = 0
		}
		r = max(-127, min(127, r))
		q[i] = int8(r)
		sum += int32(q[i])
	}
	return scale, sum
}

// writeVectorFile writes a whole vector file to path through a temporary
// file renamed over it, so a reader sees the old file or the new one.
func writeVectorFile(path string, h vfHeader, blocks []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-"+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return fmt.Errorf("write vector file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(h.encode()); err != nil {
		return fmt.Errorf("write vector file %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(blocks); err != nil {
		return fmt.Errorf("write vector file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write vector file %s: %w", tmp.Name(), err)
	}
	if err := platform.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write vector file %s: %w", path, err)
	}
	return nil
}

// vfAppend is an append to a vector file prepared inside a write
// transaction: the blocks are written past those the header counts, the
// header is rewritten once the transaction has committed.
type vfAppend struct {
	f *os.File
	h vfHeader
}

// prepareAppend writes blocks (of count vectors) after those of the file
// at path, if the file holds exactly generation gen of model's vectors in
// dims dimensions; nil if it does not (the caller rebuilds it).
func prepareAppend(path, model string, gen int64, dims int, blocks []byte, count int) *vfAppend {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	hb := make([]byte, vfHeaderSize)
	if err == nil {
		_, err = f.ReadAt(hb, 0)
	}
	var h vfHeader
	if err == nil {
		h, err = decodeVFHeader(hb, model, fi.Size())
	}
	if err != nil || h.gen != gen || h.dims != dims || sparse(h.blocks+len(blocks)/vfBlockSize(dims), h.count+count) {
		f.Close()
		return nil
	}
	end := int64(vfHeaderSize) + int64(h.blocks)*int64(vfBlockSize(dims))
	if _, err := f.WriteAt(blocks, end); err != nil {
		f.Close()
		return nil
	}
	// Bytes a failed append left past these blocks go.
	if err := f.Truncate(end + int64(len(blocks))); err != nil {
		f.Close()
		return nil
	}
	h.blocks += len(blocks) / vfBlockSize(dims)
	h.count += count
	return &vfAppend{f: f, h: h}
}

// sparse reports whether blocks holding count vectors leave more than
// half their lanes empty (beyond a few blocks' slack): each append starts
// a block, so notes embedded one at a time (a background embed after each
// write) would each cost a scan of 8; the file is then written anew,
// dense, which amortized over the appends that emptied it costs a few
// vectors' read each.
func sparse(blocks, count int) bool {
	return blocks*vfLanes > 2*count+8*vfLanes
}

// finish makes the appended blocks part of the file as generation gen.
func (a *vfAppend) finish(gen int64) error {
	a.h.gen = gen
	_, err := a.f.WriteAt(a.h.encode(), 0)
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort leaves the file as it was: the blocks written past its header's
// count are never read.
func (a *vfAppend) abort() {
	if a != nil {
		a.f.Close()
	}
}
