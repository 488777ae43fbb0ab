package index

import (
	"context"
	"database/sql"
)

// MatchExpr turns free text into the FTS5 query of the recall seed: every
// Unicode word token double-quoted, joined by OR. Quoting each token makes
// FTS5 syntax in the input (AND, NEAR, *, :, unbalanced quotes) plain
// text. It returns "" when the text has no word characters.
func MatchExpr(text string) string {
	return quoteOr(wordRe().FindAllString(text, MaxQueryTokens))
}

// SeedSearch runs the recall seed's query unmodified (no pruning). It is
// the reference Search is tested against, and what eval can compare with.
func (ix *Index) SeedSearch(ctx context.Context, text string, f Filter) ([]Hit, error) {
	toks := wordRe().FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	k := f.Limit
	if k <= 0 {
		k = DefaultK
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	defer tx.Rollback()
	rowids, scores, err := ix.rank(ctx, tx, quoteOr(toks), "", f, k)
	if err != nil {
		return nil, err
	}
	hits, _, err := ix.load(ctx, tx, rowids)
	for i := range hits {
		hits[i].Score = scores[i]
	}
	return hits, err
}

// Rebuild replaces the whole index with changes (every file of both trees)
// in one transaction. Readers keep seeing the old index until it commits.
func (ix *Index) Rebuild(ctx context.Context, changes []Change) (Result, error) {
	return ix.RebuildFrom(ctx, func(yield func(Change) error) error {
		for _, c := range changes {
			if err := yield(c); err != nil {
				return err
			}
		}
		return nil
	})
}
