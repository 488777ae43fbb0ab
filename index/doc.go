// Package index is the derived SQLite FTS5 index over a store's notes.
//
// The index is never synced and can always be rebuilt from the note files,
// so its schema is versioned and a mismatch simply drops and rebuilds it.
// Table and column names follow the Python tool (memories, memory_tags,
// memory_supersedes, memories_fts) because its dashboard reads them; our
// own bookkeeping lives in index_files (per-file size, mtime and content
// hash, which make reconcile cheap), index_meta (schema version, last
// indexed commit, note and token totals), and index_postings and index_df.
//
// Those two hold our own copy of FTS5's inverted index: per token, chunks
// of (rowid, count, note length), kept in the same transaction as
// memories_fts. Search scores FTS5's bm25 formula from them in Go, bit
// for bit (postings.go, score.go), because FTS5's bm25() costs about
// 2.5 µs for every note sharing a word with the query; memories_fts stays
// for the Python dashboard, for phrase matching, and as the reference the
// tests and doctor compare with.
//
// Every FTS row has the same rowid as its memories row. Updating or
// deleting one note therefore touches the FTS table by rowid, never by a
// scan of the UNINDEXED id column, which is what made the Python tool's
// rebuilds quadratic.
package index
