package index

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/fts5token"
)

// MaxQueryTokens bounds the OR query built from free text. A pasted log
// of a megabyte would otherwise become a query of a hundred thousand
// phrases; the first words of a prompt carry its subject.
const MaxQueryTokens = 256

var wordRe = lazyRegexp(`[\p{L}\p{N}_]+`)

// stopwords are never distinctive, however rare they are in a small store.
var stopwords = map[string]bool{
	"a": true, "about": true, "above": true, "after": true, "again": true, "all": true, "also": true,
	"am": true, "an": true, "and": true, "any": true, "are": true, "as": true, "at": true, "be": true,
	"because": true, "been": true, "before": true, "being": true, "below": true, "between": true,
	"both": true, "but": true, "by": true, "can": true, "could": true, "did": true, "do": true,
	"does": true, "doing": true, "done": true, "down": true, "during": true, "each": true,
	"few": true, "for": true, "from": true, "further": true, "get": true, "got": true, "had": true,
	"has": true, "have": true, "having": true, "he": true, "her": true, "here": true, "hers": true,
	"him": true, "his": true, "how": true, "i": true, "if": true, "in": true, "into": true,
	"is": true, "it": true, "its": true, "just": true, "let": true, "me": true, "more": true,
	"most": true, "my": true, "no": true, "nor": true, "not": true, "now": true, "of": true,
	"off": true, "on": true, "once": true, "only": true, "or": true, "other": true, "our": true,
	"ours": true, "out": true, "over": true, "own": true, "please": true, "same": true, "she": true,
	"should": true, "so": true, "some": true, "such": true, "than": true, "thank": true,
	"thanks": true, "that": true, "the": true, "their": true, "theirs": true, "them": true,
	"then": true, "there": true, "these": true, "they": true, "this": true, "those": true,
	"through": true, "to": true, "too": true, "under": true, "until": true, "up": true, "us": true,
	"very": true, "was": true, "we": true, "were": true, "what": true, "when": true, "where": true,
	"which": true, "while": true, "who": true, "whom": true, "why": true, "will": true, "with": true,
	"would": true, "yes": true, "yet": true, "you": true, "your": true, "yours": true, "ok": true,
	"okay": true, "sure": true, "hi": true, "hello": true, "hey": true,
}

// DistinctiveWords returns the query's words that few notes contain: at
// most frac of them (and at least one note), never a stopword or a word
// under three letters. Words that are not one FTS5 token (with
// '_') count as distinctive. Per-prompt recall uses them: a note shares
// an uncommon word with the prompt, or it is not recalled.
func (ix *Index) DistinctiveWords(ctx context.Context, text string, frac float64) ([]string, error) {
	toks := wordRe().FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaDocCount).Scan(&n); err != nil {
		return nil, ix.wrap("read", err)
	}
	limit := distinctiveLimit(n, frac)
	st, err := ix.txStmt(ctx, tx, dfSQL)
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range toks {
		low := strings.ToLower(t)
		if seen[low] || stopwords[low] || len([]rune(t)) < 3 {
			continue
		}
		seen[low] = true
		terms, ok := phraseTokens([]string{t})
		if !ok {
			out = append(out, t)
			continue
		}
		var c int64
		if err := st.QueryRowContext(ctx, terms[0]).Scan(&c); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, ix.wrap("read", err)
		}
		if c >= 1 && c <= limit {
			out = append(out, t)
		}
	}
	return out, nil
}

// minDistinctive is how many notes a word may be in and still count as
// distinctive in a small store, where frac of the notes is under one
// note: a question asked once and echoed by its session note is then in
// two notes, which made its words common and recall never brought the
// answer again.
const minDistinctive = 3

// distinctiveLimit is the most notes (of n) a distinctive word may be in:
// frac of them, at least minDistinctive, and never more than half (a word
// in more than half the notes carries no weight in bm25), though a word of
// the only note counts.
func distinctiveLimit(n int64, frac float64) int64 {
	limit := max(int64(float64(n)*frac), minDistinctive)
	return min(limit, max(n/2, 1))
}

// phraseTokens maps each query word (one quoted phrase of the seed's OR
// query) to its FTS5 token. ok is false when some word is not exactly one
// token (snake_case splits at '_').
func phraseTokens(words []string) (terms []string, ok bool) {
	terms = make([]string, 0, len(words))
	for _, w := range words {
		toks := fts5token.Tokens(w)
		if len(toks) != 1 {
			return nil, false
		}
		terms = append(terms, toks[0])
	}
	return terms, true
}

// multiPrefix marks the key of a phrase of several tokens: no token
// contains a NUL.
const multiPrefix = "\x00"

// phraseKeys maps each query word to the key of its postings: its FTS5
// token, or multiPrefix+word for a word FTS5 splits into several tokens
// (snake_case), whose postings loadStats asks FTS5 for, since only its
// positions can tell adjacent tokens. A word with no token (a lone '_')
// is dropped: FTS5's empty phrase matches nothing and adds nothing.
func phraseKeys(words []string) []string {
	keys := make([]string, 0, len(words))
	for _, w := range words {
		switch toks := fts5token.Tokens(w); len(toks) {
		case 0:
		case 1:
			keys = append(keys, toks[0])
		default:
			keys = append(keys, multiPrefix+w)
		}
	}
	return keys
}

// IsStopword reports whether w (lower case) is one of the function words
// that never make a query or a title distinctive.
func IsStopword(w string) bool { return stopwords[w] }
