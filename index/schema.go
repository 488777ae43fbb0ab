package index

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// SchemaVersion is this implementation's index layout. Bump it whenever
// the tables below change; opening an index with another version drops
// and rebuilds every derived table from the files.
const SchemaVersion = "go-12"

// pythonUserVersion is the PRAGMA user_version the Python tool writes for
// the same table layout; we set it so its dashboard accepts the file.
const pythonUserVersion = 3

var dropStatements = []string{
	`DROP TABLE IF EXISTS memories_fts`,
	`DROP TABLE IF EXISTS memory_tags`,
	`DROP TABLE IF EXISTS memory_supersedes`,
	`DROP TABLE IF EXISTS memory_conflicts`,
	`DROP TABLE IF EXISTS memory_arrivals`,
	`DROP TABLE IF EXISTS memory_hashes`,
	`DROP TABLE IF EXISTS memories`,
	`DROP TABLE IF EXISTS index_files`,
	`DROP TABLE IF EXISTS index_terms`, // go-2
	`DROP TABLE IF EXISTS index_postings`,
	`DROP TABLE IF EXISTS index_df`,
	`DROP TABLE IF EXISTS index_tail`,
	`DROP TABLE IF EXISTS index_stats`,
	`DROP TABLE IF EXISTS index_meta`,
}

const vectorsTable = `CREATE TABLE IF NOT EXISTS vectors (
  hash  TEXT NOT NULL,
  model TEXT NOT NULL,
  vec   BLOB NOT NULL,
  UNIQUE (hash, model)
)`

var schemaStatements = []string{
	`CREATE TABLE IF NOT EXISTS memories (
  id           TEXT PRIMARY KEY,
  type         TEXT NOT NULL CHECK (type IN ('procedural','semantic','episodic')),
  title        TEXT NOT NULL,
  body_path    TEXT NOT NULL,
  project      TEXT NOT NULL DEFAULT 'global',
  machine_id   TEXT NOT NULL,
  scope        TEXT NOT NULL DEFAULT 'portable' CHECK (scope IN ('portable','machine-local')),
  user_id      TEXT NOT NULL DEFAULT 'self',
  workspace_id TEXT NOT NULL DEFAULT 'personal',
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL,
  prov_source  TEXT NOT NULL DEFAULT 'human',
  prov_model   TEXT,
  prov_session TEXT,
  confidence   REAL NOT NULL DEFAULT 1.0
)`,
	`CREATE INDEX IF NOT EXISTS idx_mem_scope   ON memories(project, type, scope)`,
	`CREATE INDEX IF NOT EXISTS idx_mem_recency ON memories(updated_at DESC)`,
	// Covers what SessionStart asks of a project (go-9): how many live
	// notes it has and its newest of some types. Without id and
	// updated_at in the index, each of the project's notes cost a table
	// row lookup, and a hook's fresh connection reads each such page
	// first: 5.8 ms for a count of 500 notes, 0.55 ms with it.
	`CREATE INDEX IF NOT EXISTS idx_mem_live    ON memories(project, type, updated_at, id)`,
	`CREATE INDEX IF NOT EXISTS idx_mem_prov    ON memories(prov_source)`,
	// SessionEnd finds the note an earlier capture of its session wrote
	// (FindSession, go-10). Without an index that scanned the notes
	// table: 6% of a SessionEnd at 100,000 notes. Partial: only captured
	// notes carry a session, so the index stays as small as they are.
	`CREATE INDEX IF NOT EXISTS idx_mem_session ON memories(prov_session, type, created_at) WHERE prov_session IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS idx_mem_tenant  ON memories(user_id, workspace_id, project, type)`,
	`CREATE TABLE IF NOT EXISTS memory_tags (
  memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  tag       TEXT NOT NULL,
  PRIMARY KEY (memory_id, tag)
)`,
	`CREATE TABLE IF NOT EXISTS memory_supersedes (
  memory_id     TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  superseded_id TEXT NOT NULL,
  PRIMARY KEY (memory_id, superseded_id)
)`,
	`CREATE INDEX IF NOT EXISTS idx_sup_target ON memory_supersedes(superseded_id)`,
	// conflict_of of a merge conflict copy (go-6): the note it conflicts
	// with, so that injections and results can show the two together.
	`CREATE TABLE IF NOT EXISTS memory_conflicts (
  memory_id   TEXT PRIMARY KEY,
  conflict_of TEXT NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS idx_conflict_of ON memory_conflicts(conflict_of)`,
	// When a note last arrived from another machine through a sync (go-6,
	// unix nanoseconds): a session sees what arrived after it started.
	`CREATE TABLE IF NOT EXISTS memory_arrivals (
  memory_id  TEXT PRIMARY KEY,
  arrived_ns INTEGER NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS idx_arrivals_time ON memory_arrivals(arrived_ns)`,
	// The hash of what a note's vector is computed from (go-7): title,
	// body and tags (EmbedText).
	`CREATE TABLE IF NOT EXISTS memory_hashes (
  memory_id TEXT PRIMARY KEY,
  hash      TEXT NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS idx_hashes_hash ON memory_hashes(hash)`,
	// Embedding vectors by content hash and model (go-7). Not in
	// dropStatements: a rebuild keeps them, since a note whose text did
	// not change needs no new vector, and computing one is the slow part.
	// A rowid table with its key in a separate index (go-8): in a
	// WITHOUT ROWID table each 3 KB row sits in the key's b-tree, so every
	// lookup by hash read vectors it did not want (embedding 10,000 notes
	// spent minutes there).
	vectorsTable,
	// A generation per model, bumped with every write to its vectors
	// (go-8): a process that holds them in memory reads them again when it
	// changes. Kept through rebuilds, as the vectors are.
	`CREATE TABLE IF NOT EXISTS vector_models (
  model TEXT PRIMARY KEY,
  gen   INTEGER NOT NULL
)`,
	// Vectors kept from an index of an earlier version need a generation.
	`INSERT OR IGNORE INTO vector_models(model, gen) SELECT DISTINCT model, CAST(unixepoch('now', 'subsec') * 1000000000 AS INTEGER) FROM vectors`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
  id UNINDEXED, title, body, tags, tokenize='porter unicode61'
)`,
	// One row per note file seen in a tree, good or bad. path is relative to
	// the store home (memory/... or local/...). error is set for files that
	// could not be indexed; note_id is set for indexed files and for
	// duplicates of an indexed id (so they can take over if it goes away).
	`CREATE TABLE IF NOT EXISTS index_files (
  path     TEXT PRIMARY KEY,
  size     INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  hash     TEXT NOT NULL,
  note_id  TEXT,
  error    TEXT
) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS idx_files_note ON index_files(note_id)`,
	// The files not indexed, and why (go-11): every reconcile reports
	// them. Without it that report scanned index_files, and through the
	// memory map it touched pages of every table built beside it: 113 MB
	// of a reconcile's resident memory at 100,000 notes.
	`CREATE INDEX IF NOT EXISTS idx_files_bad ON index_files(path) WHERE error IS NOT NULL`,
	// Every FTS5 token's notes, with counts and note lengths, in chunks
	// (postings.go). first and last are the chunk's lowest and highest
	// rowids, n its entries; data is the last column so that reading the
	// others does not load it.
	`CREATE TABLE IF NOT EXISTS index_postings (
  term  TEXT NOT NULL,
  first INTEGER NOT NULL,
  n     INTEGER NOT NULL,
  last  INTEGER NOT NULL,
  data  BLOB NOT NULL,
  PRIMARY KEY (term, first)
) WITHOUT ROWID`,
	// How many notes hold each token: the sum of its chunks' n, kept apart
	// so the IDF of a common word costs one row, not hundreds.
	`CREATE TABLE IF NOT EXISTS index_df (
  term TEXT PRIMARY KEY,
  df   INTEGER NOT NULL
) WITHOUT ROWID`,
	// A token's newest entries in a large store, after its chunks
	// (tail.go): one row a token, shaped like a chunk.
	`CREATE TABLE IF NOT EXISTS index_tail (
  term  TEXT PRIMARY KEY,
  first INTEGER NOT NULL,
  n     INTEGER NOT NULL,
  last  INTEGER NOT NULL,
  data  BLOB NOT NULL
) WITHOUT ROWID`,
	// The stat cache (statcache.go): one row, a rowid table so that no
	// lookup compares a key with its blob.
	`CREATE TABLE IF NOT EXISTS index_stats (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  data BLOB NOT NULL
)`,
	`CREATE TABLE IF NOT EXISTS index_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID`,
}

// secondaryIndexes are the CREATE INDEX statements of the schema: all of
// them on derived tables, none needed while a rebuild inserts (it looks
// rows up by primary key only).
func secondaryIndexes() []string {
	var out []string
	for _, q := range schemaStatements {
		if strings.HasPrefix(q, "CREATE INDEX IF NOT EXISTS ") {
			out = append(out, q)
		}
	}
	return out
}

// withoutSecondaryIndexes drops the secondary indexes of the tables a
// rebuild has just emptied, and createSecondaryIndexes builds them again
// once the rows are in, inside the same transaction: one sort per index
// instead of 100,000 inserts at random places in each of eleven b-trees.
func withoutSecondaryIndexes(ctx context.Context, tx *sql.Tx) error {
	for _, q := range secondaryIndexes() {
		name := strings.Fields(q)[5]
		if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS `+name); err != nil {
			return fmt.Errorf("drop index %s: %w", name, err)
		}
	}
	return nil
}

func createSecondaryIndexes(ctx context.Context, tx *sql.Tx) error {
	for _, q := range secondaryIndexes() {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create index %s: %w", strings.Fields(q)[5], err)
		}
	}
	return nil
}
