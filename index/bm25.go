package index

import (
	"math"

	"modernc.org/libc"
)

// bm25Params returns FTS5's bm25 constants k1, k1+1 and b. They are
// float64 values, not untyped constants, so k1+1 is rounded as the C code
// rounds it (an untyped 1.2+1 would be computed exactly, then rounded).
func bm25Params() (k1, k1p1, b float64) {
	k1, b = 1.2, 0.75
	return k1, k1 + 1, b
}

// idf is FTS5's: log((N - nHit + 0.5) / (nHit + 0.5)), floored at 1e-6.
// libc.Xlog is the log SQLite's C code calls (musl's, compiled to Go),
// which can differ from math.Log in the last bit.
func idf(n, df int64) float64 {
	v := libc.Xlog(nil, (float64(n-df)+0.5)/(float64(df)+0.5))
	if v <= 0 {
		v = 1e-6
	}
	return v
}

// bm25Term is one phrase's part of a note's score.
func bm25Term(w float64, p posting, k1, k1p1, b, avgdl float64) float64 {
	f, d := float64(p.tf), float64(p.dl)
	return float64(w * (float64(f*k1p1) / (f + float64(k1*(1-b+float64(b*d)/avgdl)))))
}

// phraseCount returns the count f for which bm25Term gives exactly term.
func phraseCount(term, w float64, dl uint64, avgdl float64) (uint64, bool) {
	k1, k1p1, b := bm25Params()
	norm := k1 * (1 - b + b*float64(dl)/avgdl)
	est := math.Round(term * norm / (w*k1p1 - term))
	for _, d := range []float64{0, -1, 1, -2, 2} {
		f := est + d
		if f < 1 || f > 1<<40 {
			continue
		}
		if bm25Term(w, posting{tf: uint64(f), dl: dl}, k1, k1p1, b, avgdl) == term {
			return uint64(f), true
		}
	}
	return 0, false
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

// bm25Floor bounds what one phrase in at least half the notes adds to a
// score. FTS5's bm25 floors such a phrase's IDF at 1e-6, and a phrase adds
// at most IDF*(k1+1) = 2.2e-6: rounded up. Search leaves such phrases out
// when the other scores are further apart than the sum of these bounds,
// so they could not have changed the order. Document frequencies come from
// index_postings, which counts tokens exactly as FTS5 does (postings.go).
const bm25Floor = 3e-6
