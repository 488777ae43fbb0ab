package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"
)

// The scan scores a query against every vector of a set, 8-bit against
// 8-bit, 8 vectors at a time: word d of a block holds component d of its
// 8 vectors as bytes q+128 (0..255), and multiplying the word, split into
// two words of four 16-bit lanes, by the query's component q'+128 gives
// 8 products at the cost of 2, none over 16 bits (255 × 255 = 65,025).
// Each lane's sum, Σ(q'+128)(q+128), is kept in 32 bits (at most 65,536
// dimensions) and corrected after: Σq'q = sum − 128(Σq' + Σq) − 128²·dims.
// Go has no vector instructions of its own; this is about three times
// faster than a product per component.

// query8 is a query quantized for the scan.
type query8 struct {
	off   []uint64 // q'+128 per component
	scale float32
	sum   int32
}

func newQuery8(q []float32) query8 {
	q8 := make([]int8, len(q))
	scale, sum := quantize(q, q8)
	off := make([]uint64, len(q))
	for i, x := range q8 {
		off[i] = uint64(int(x) + 128)
	}
	return query8{off: off, scale: scale, sum: sum}
}

// scanBlock scores the vectors of one block (b: one whole block of
// len(q.off) dimensions) into out (8 scores; lanes the block does not
// use get -Inf). It returns the block's lane count, or an error if the
// block fails its checksum or holds a scale no unit vector has. buf is
// room for len(q.off) words, used where the bytes cannot be read as words
// in place (wordsOf).
func scanBlock(q query8, b []byte, out []float32, buf []uint64) (int, error) {
	dims := len(q.off)
	lanes := int(binary.LittleEndian.Uint32(b))
	if lanes < 1 || lanes > vfLanes {
		return 0, fmt.Errorf("%w: a block of %d vectors", errVectorFile, lanes)
	}
	meta := b[vfHeadSize : vfHeadSize+vfLanes*vfMetaSize]
	words := b[vfHeadSize+vfLanes*vfMetaSize : vfHeadSize+vfLanes*vfMetaSize+8*dims]
	const m16, m32 = 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF
	var s1, s2 uint64
	for i := 0; i < len(meta); i += 8 {
		s1 += binary.LittleEndian.Uint64(meta[i:])
		s2 += s1
	}
	var a0, a1, a2, a3 uint64
	ws := wordsOf(words, buf)
	ws = ws[:len(q.off)]
	for d, qd := range q.off {
		w := ws[d]
		s1 += w
		s2 += s1
		lo := (w & m16) * qd        // vectors 0, 2, 4, 6
		hi := ((w >> 8) & m16) * qd // vectors 1, 3, 5, 7
		a0 += lo & m32              // 0, 4
		a1 += (lo >> 16) & m32      // 2, 6
		a2 += hi & m32              // 1, 5
		a3 += (hi >> 16) & m32      // 3, 7
	}
	if s1 != binary.LittleEndian.Uint64(b[8:]) || s2 != binary.LittleEndian.Uint64(b[16:]) {
		return 0, fmt.Errorf("%w: block checksum", errVectorFile)
	}
	acc := [vfLanes]uint64{a0, a2, a1, a3, a0 >> 32, a2 >> 32, a1 >> 32, a3 >> 32}
	bias := 128*int64(q.sum) + 128*128*int64(dims)
	for l := 0; l < vfLanes; l++ {
		if l >= lanes {
			out[l] = float32(math.Inf(-1))
			continue
		}
		m := meta[l*vfMetaSize:]
		scale := math.Float32frombits(binary.LittleEndian.Uint32(m[16:]))
		if !(scale >= 0 && scale <= 1) { // NaN too
			return 0, fmt.Errorf("%w: scale %v", errVectorFile, scale)
		}
		sum := int64(int32(binary.LittleEndian.Uint32(m[20:])))
		dot := int64(acc[l]&0xFFFFFFFF) - 128*sum - bias
		out[l] = float32(dot) * q.scale * scale
	}
	return lanes, nil
}

// scanSet scores q against every block of a set (blocks of dims
// dimensions), on up to GOMAXPROCS goroutines, into one score per lane
// (-Inf for lanes no vector fills). It fails if a block does not check
// or the blocks hold another number of vectors than count. A fault on a
// mapped page (the file cut short under the map) is that error too, not
// a crash.
func scanSet(q query8, blocks []byte, nblocks, count int) ([]float32, error) {
	bs := vfBlockSize(len(q.off))
	scores := make([]float32, nblocks*vfLanes)
	workers := max(1, min(runtime.GOMAXPROCS(0), nblocks/512, 8))
	per := (nblocks + workers - 1) / workers
	lanes := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			buf := make([]uint64, len(q.off))
			defer wg.Done()
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					errs[w] = fmt.Errorf("%w: %v", errVectorFile, r)
				}
			}()
			for b := w * per; b < min((w+1)*per, nblocks); b++ {
				n, err := scanBlock(q, blocks[b*bs:(b+1)*bs], scores[b*vfLanes:(b+1)*vfLanes], buf)
				if err != nil {
					errs[w] = err
					return
				}
				lanes[w] += n
			}
		}()
	}
	wg.Wait()
	total := 0
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		total += lanes[w]
	}
	if total != count {
		return nil, fmt.Errorf("%w: %d vectors, the header says %d", errVectorFile, total, count)
	}
	return scores, nil
}

// littleEndian is whether this machine keeps words as the file does
// (amd64 and arm64, every platform the project builds for, do).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordsOf is b (a multiple of 8 bytes) as little-endian words: b itself,
// read in place, when the machine is little-endian and b is aligned to
// 8 bytes (the file's blocks are, mapped at a page or read into a fresh
// slice), which makes the scan a third faster than decoding each word;
// else b decoded into buf.
func wordsOf(b []byte, buf []uint64) []uint64 {
	n := len(b) / 8
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
	}
	buf = buf[:n]
	for i := range buf {
		buf[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return buf
}
