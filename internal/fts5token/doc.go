// Package fts5token reproduces, in pure Go, the token stream of SQLite
// FTS5's tokenize='porter unicode61' (default options: remove_diacritics=1,
// categories "L* N* Co", no tokenchars or separators).
//
// It exists because we build our own BM25 postings next to the FTS5 index
// and need their scores to be bit-identical to FTS5's bm25(): term
// frequencies, document lengths and document frequencies all follow from
// the tokens, so any token that differs from FTS5's is a scoring bug.
// The tests therefore compare against the real FTS5 in modernc.org/sqlite,
// term by term, rather than against expectations written by hand.
//
// The algorithm (the separator/token scan, SQLite's own UTF-8 decoding,
// the Porter stemmer with FTS5's quirks, the 64-byte stemming limit and the
// index's 32768-byte token cut) follows fts5_tokenize.c. The Unicode data
// does not: SQLite carries its own, older, character tables, so which code
// points are token characters and what they fold to is probed from the
// real tokenizer by `go generate` (see gen/main.go) and stored in tables.go.
// Regenerate after upgrading modernc.org/sqlite; the tests fail if the
// tables no longer match the linked SQLite.
package fts5token

//go:generate go run ./gen -o tables.go
