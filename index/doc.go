// Package index is the derived SQLite FTS5 index over a store's notes.
//
// The index is never synced and can always be rebuilt from the note files,
// so its schema is versioned and a mismatch simply drops and rebuilds it.
// Table and column names follow the Python tool (memories, memory_tags,
// memory_supersedes, memories_fts) because its dashboard reads them; our
// own bookkeeping lives in index_files (per-file size, mtime and content
// hash, which make reconcile cheap) and index_meta (schema version,
// last indexed commit).
//
// Every FTS row has the same rowid as its memories row. Updating or
// deleting one note therefore touches the FTS table by rowid, never by a
// scan of the UNINDEXED id column, which is what made the Python tool's
// rebuilds quadratic.
package index
