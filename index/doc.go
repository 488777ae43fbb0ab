// Package index is the derived SQLite FTS5 index over a store's notes.
//
// The index is never synced and can always be rebuilt from the note files,
// so its schema is versioned and a mismatch simply drops and rebuilds it.
// Table and column names follow the Python tool (memories, memory_tags,
// memory_supersedes, memories_fts) because its dashboard reads them; our
// own bookkeeping lives in index_files (per-file size, mtime and content
// hash, which make reconcile cheap), index_meta (schema version, last
// indexed commit, note and token totals), index_stats (the stat cache of
// statcache.go), and index_postings, index_df and index_tail.
//
// Those three hold our own copy of FTS5's inverted index: per token, chunks
// of (rowid, count, note length), and in a large store one row of the
// newest entries after them (tail.go), kept in the same transaction as
// memories_fts. Search scores FTS5's bm25 formula from them in Go, bit
// for bit (postings.go, bm25.go, rank_postings.go), because FTS5's bm25() costs about
// 2.5 µs for every note sharing a word with the query; memories_fts stays
// for the Python dashboard, for phrase matching, and as the reference the
// tests and doctor compare with.
//
// The seed is the recall query the project started from, and the
// reference every ranking here must reproduce: the query's words, each
// double-quoted, joined by OR, matched against memories_fts and ordered by
// bm25(memories_fts) then updated_at DESC (SeedSearch, in the tests). Our
// postings ranker (rank_postings.go) and FTS5's pruned rankings
// (rank_fts5.go) return the seed's notes in the seed's order with the
// seed's scores; the tests compare them query by query.
//
// Files by job: query.go (words, stopwords, distinctive words), search.go
// (Filter, Hit, Search), bm25.go (the formula), rank_postings.go and
// rank_fts5.go (the two rankers), read.go (list, get, counts and other
// reads), apply.go (changes and rebuilds), postings.go (the chunks),
// bulk.go (the chunks of a rebuild), statcache.go (sizes and mtimes in
// one row), tail.go (a large store's newest entries),
// check.go (postings against FTS5), schema.go, index.go (open, meta).
//
// Every FTS row has the same rowid as its memories row. Updating or
// deleting one note therefore touches the FTS table by rowid, never by a
// scan of the UNINDEXED id column, which is what made the Python tool's
// rebuilds quadratic.
package index
