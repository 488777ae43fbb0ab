package index

// bm25Floor bounds what one phrase in at least half the notes adds to a
// score. FTS5's bm25 floors such a phrase's IDF at 1e-6, and a phrase adds
// at most IDF*(k1+1) = 2.2e-6: rounded up. Search leaves such phrases out
// when the other scores are further apart than the sum of these bounds,
// so they could not have changed the order. Document frequencies come from
// index_postings, which counts tokens exactly as FTS5 does (postings.go).
const bm25Floor = 3e-6
