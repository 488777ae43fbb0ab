package index

import "strings"

// Search prunes query words that appear in at least half the notes. FTS5's
// bm25 floors the IDF of such a phrase at 1e-6, so it adds less than
// 1e-6*(k1+1) to any note's score: it can reorder notes only where their
// other scores tie to within that margin. Knowing which words are that
// common needs document frequencies, which FTS5 does not expose cheaply, so
// the index keeps its own in index_terms.
//
// The counts must never exceed FTS5's own (a word wrongly judged common
// would change results), so the tokenizer here is deliberately
// conservative: it counts only runs of ASCII letters and digits bounded by
// ASCII separators, which FTS5's unicode61 tokenizer splits identically,
// and ignores every run touching a non-ASCII byte. Every note counted for
// a word therefore also matches the FTS5 phrase for it: our count is a
// lower bound of FTS5's, and "our count >= N/2" proves the IDF is floored.

// bm25Floor bounds what one floored phrase adds to a score:
// idf 1e-6 times (k1+1) = 2.2, rounded up.
const bm25Floor = 3e-6

// asciiRuns calls fn with each lower-cased run of ASCII letters/digits
// that is bounded by ASCII non-alphanumeric bytes or the ends of s. Runs
// containing non-ASCII bytes are skipped entirely. The string passed to
// fn may share memory with s.
func asciiRuns(s string, fn func(string)) {
	start, pure, upper := -1, true, false
	flush := func(end int) {
		if start >= 0 && pure {
			w := s[start:end]
			if upper {
				w = strings.ToLower(w)
			}
			fn(w)
		}
		start, pure, upper = -1, true, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			if start < 0 {
				start = i
			}
			pure = false
		case c >= 'A' && c <= 'Z':
			if start < 0 {
				start = i
			}
			upper = true
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if start < 0 {
				start = i
			}
		default:
			flush(i)
		}
	}
	flush(len(s))
}

// countableToken reports the df key of a query token, if it has one: only
// tokens of ASCII letters and digits can be judged common.
func countableToken(tok string) (string, bool) {
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	return strings.ToLower(tok), true
}
