package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrCorrupt means the file at the index path is not a usable SQLite
// database, or some of its pages are damaged (a torn write, a bad disk).
// The index is derived data: callers rebuild it from the note files.
var ErrCorrupt = errors.New("index database is corrupt")

// ErrBusy means another process kept the index's write lock for longer
// than the busy timeout.
var ErrBusy = errors.New("index database is busy")

// ErrReadOnly means the index cannot be written: its file or directory is
// read-only, or it was opened with OpenReadOnly.
var ErrReadOnly = errors.New("index database is read-only")

// ErrNotFound is returned by Get for an id the index does not hold.
var ErrNotFound = errors.New("note not found")

// Meta keys kept in index_meta.
const (
	metaSchema       = "schema_version"
	metaNeedsRebuild = "needs_rebuild"
	metaDocCount     = "doc_count"
	metaTokenCount   = "token_count" // tokens in all notes, FTS5's xColumnTotalSize(-1)
	// MetaLastIndexedCommit is the memory/ commit the index reflects.
	MetaLastIndexedCommit = "last_indexed_commit"
)

// Index is an open index database. It is safe for concurrent use; several
// processes may open the same file (WAL, busy timeout, immediate write
// transactions).
type Index struct {
	db         *sql.DB
	path       string
	busy       time.Duration // the busy timeout, for error messages
	cacheStmts bool          // see Options.CacheStatements

	mu      sync.Mutex
	stmts   map[string]*sql.Stmt  // with cacheStmts
	txStmts map[string]txPrepared // without: each statement of the latest transaction to use it

	paths SearchPaths
	accs  sync.Pool // *[]float64 score arrays (rank_postings.go)

	chunkMax, chunkTarget int   // posting chunk sizes (postings.go)
	tailFrom, tailRows    int64 // when pulls append to index_tail, and its rows (tail.go)
	readyBudget           int   // complete chunks a rebuild holds, in bytes (bulk.go; 0: the default)

	vmu   sync.Mutex
	vsets map[string]*vecSet // by model (vectors.go)
	vload sync.Mutex         // held while vectors are read into vsets
}

// SearchPaths counts which strategy answered each search (see Search).
type SearchPaths struct {
	Postings, MaxScore, Floored, Full atomic.Int64
}

// PathCounts is a snapshot of SearchPaths.
type PathCounts struct {
	Postings int64 // scored from our postings (rank_postings.go)
	MaxScore int64 // FTS5, restricted to notes holding the rarest words
	Floored  int64 // FTS5, words in half the notes left out
	Full     int64 // FTS5, the seed's query unmodified
}

// Paths reports how searches on this index were answered so far.
func (ix *Index) Paths() PathCounts {
	return PathCounts{ix.paths.Postings.Load(), ix.paths.MaxScore.Load(), ix.paths.Floored.Load(), ix.paths.Full.Load()}
}

// Options tune Open.
type Options struct {
	// Busy bounds how long any statement waits for another process's write
	// lock (0: 10 s). Hooks use a short one: Claude Code gives SessionEnd
	// 1.5 s in all.
	Busy time.Duration
	// CacheStatements keeps prepared statements for the life of the Index,
	// for a process that serves many queries (the MCP server, the web UI).
	// Without it a statement is prepared in the transaction that runs it,
	// on that transaction's connection: preparing for the cache while a
	// transaction holds the only connection opens a second one, which
	// reads the schema and the pages again (3 ms and more in a hook), and
	// the transaction then prepares the statement once more anyway.
	CacheStatements bool
}

// Open opens or creates the index at path. needsRebuild reports that the
// derived tables are empty or stale (new file, schema change, an earlier
// rebuild that never finished): the caller must Rebuild from the files.
// A file that is not a SQLite database yields ErrCorrupt.
func Open(ctx context.Context, path string, o Options) (ix *Index, needsRebuild bool, err error) {
	busy := o.Busy
	if busy <= 0 {
		busy = 10 * time.Second
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "cache_size(-16000)")
	// No memory map (SQLite's default): it served the first vector search
	// of a process, which read every vector row, and the vectors now have
	// a mapped file of their own (vectors.go). Mapped, every page a write
	// touched (FTS5's segments) stayed in the process's RSS: a pull of 100
	// notes into 100,000 showed 300 MB, of which 165 MB were index pages,
	// for the same CPU time.
	q.Add("_pragma", "mmap_size(0)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, false, fmt.Errorf("open index %s: %w", path, err)
	}
	ix = &Index{db: db, path: path, busy: busy, cacheStmts: o.CacheStatements, stmts: map[string]*sql.Stmt{}, chunkMax: defaultChunkMax, chunkTarget: defaultChunkTarget,
		tailFrom: defaultTailFrom, tailRows: defaultTailRows}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if err := db.PingContext(ctx); err != nil {
		return nil, false, ix.wrap("open", err)
	}
	needsRebuild, err = ix.ensureSchema(ctx)
	if err != nil {
		return nil, false, err
	}
	return ix, needsRebuild, nil
}

// OpenReadOnly opens an existing index without writing anything next to
// it, for a home on a read-only file system: SQLite cannot create the
// WAL's shared-memory file there, so the file is opened immutable (no
// locks, the WAL not consulted; nobody can be writing it). needsRebuild
// reports an index of another schema version or one marked for a rebuild.
func OpenReadOnly(ctx context.Context, path string) (ix *Index, needsRebuild bool, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, false, fmt.Errorf("open index %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	q.Add("_pragma", "cache_size(-16000)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, false, fmt.Errorf("open index %s: %w", path, err)
	}
	ix = &Index{db: db, path: path, stmts: map[string]*sql.Stmt{}, chunkMax: defaultChunkMax, chunkTarget: defaultChunkTarget,
		tailFrom: defaultTailFrom, tailRows: defaultTailRows}
	needsRebuild, err = ix.NeedsRebuild(ctx)
	if err != nil {
		db.Close()
		return nil, false, err
	}
	return ix, needsRebuild, nil
}

// NeedsRebuild reports whether the index must be rebuilt from the files
// before it can answer: another schema version, or the needs_rebuild
// mark (a new file, an interrupted rebuild, damage found by a search).
// Another process may have rebuilt it since this one opened it.
func (ix *Index) NeedsRebuild(ctx context.Context) (bool, error) {
	version, err := ix.meta(ctx, metaSchema)
	if errors.Is(err, sql.ErrNoRows) || err != nil && strings.Contains(err.Error(), "no such table") {
		return true, nil
	}
	if err != nil {
		return false, ix.wrap("read", err)
	}
	if version != SchemaVersion {
		return true, nil
	}
	flag, err := ix.meta(ctx, metaNeedsRebuild)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, ix.wrap("read", err)
	}
	return flag == "1", nil
}

// IsCorrupt reports whether err means damage to the index database,
// whether or not it went through wrap: queries that scan tables can meet
// a damaged page anywhere, long after the file opened cleanly.
func IsCorrupt(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrCorrupt) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return false
}

// Explain gives a SQLite error that reached a caller unclassified the
// same wording wrap gives, so no raw "(5)" or "(14)" reaches the user.
func (ix *Index) Explain(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrBusy) || errors.Is(err, ErrReadOnly) {
		return err
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	return ix.wrap("use", err)
}

// wrap classifies SQLite errors: corruption becomes ErrCorrupt so the
// caller can rebuild instead of failing forever; a timeout on the write
// lock becomes ErrBusy, a write refused by the file system ErrReadOnly,
// each with a sentence instead of SQLite's code.
func (ix *Index) wrap(op string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%s index %s: %w (damaged pages)", op, ix.path, ErrCorrupt)
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%s index %s: %w (not a SQLite database)", op, ix.path, ErrCorrupt)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%s index %s: %w: another anamnesis process kept it locked for more than %s", op, ix.path, ErrBusy, ix.busy)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%s index %s: %w", op, ix.path, ErrReadOnly)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("%s index %s: cannot open the file (is %s missing or not writable?)", op, ix.path, filepath.Dir(ix.path))
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%s index %s: the disk is full", op, ix.path)
		}
	}
	return fmt.Errorf("%s index %s: %w", op, ix.path, err)
}

func (ix *Index) ensureSchema(ctx context.Context) (bool, error) {
	version, err := ix.meta(ctx, metaSchema)
	if err == nil && version == SchemaVersion {
		flag, _ := ix.meta(ctx, metaNeedsRebuild)
		return flag == "1", nil
	}
	if err != nil && !strings.Contains(err.Error(), "no such table") && !errors.Is(err, sql.ErrNoRows) {
		return false, ix.wrap("read", err)
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return false, ix.wrap("begin", err)
	}
	defer tx.Rollback()
	// Another process may have created the schema while we waited for the lock.
	var v string
	if err := tx.QueryRowContext(ctx, `SELECT value FROM index_meta WHERE key = ?`, metaSchema).Scan(&v); err == nil && v == SchemaVersion {
		return true, tx.Commit()
	}
	if err := createSchema(ctx, tx, true); err != nil {
		return false, ix.wrap("create schema in", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, '1')`, metaNeedsRebuild); err != nil {
		return false, ix.wrap("write", err)
	}
	if err := tx.Commit(); err != nil {
		return false, ix.wrap("commit", err)
	}
	return true, nil
}

func createSchema(ctx context.Context, tx *sql.Tx, dropMeta bool) error {
	for _, s := range dropStatements {
		if !dropMeta && strings.Contains(s, "index_meta") {
			continue
		}
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if err := migrateVectors(ctx, tx); err != nil {
		return err
	}
	for _, s := range schemaStatements {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, pythonUserVersion)); err != nil {
		return err
	}
	for _, k := range []string{metaDocCount, metaTokenCount} {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, '0')`, k); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)`, metaSchema, SchemaVersion)
	return err
}

// migrateVectors moves the vectors of a go-7 index, kept in a WITHOUT
// ROWID table, into the rowid table that replaced it: computing them is
// the slow part of the semantic leg, so a schema change keeps them.
func migrateVectors(ctx context.Context, tx *sql.Tx) error {
	var def string
	err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'vectors'`).Scan(&def)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !strings.Contains(def, "WITHOUT ROWID")) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, s := range []string{
		`ALTER TABLE vectors RENAME TO vectors_go7`,
		vectorsTable,
		`INSERT OR REPLACE INTO vectors(hash, model, vec) SELECT hash, model, vec FROM vectors_go7`,
		`DROP TABLE vectors_go7`,
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("move vectors to the go-8 table: %w", err)
		}
	}
	return nil
}

// Path is the database file.
func (ix *Index) Path() string { return ix.path }

// Close releases the database.
func (ix *Index) Close() error {
	ix.mu.Lock()
	for _, s := range ix.stmts {
		s.Close()
	}
	ix.stmts, ix.txStmts = nil, nil
	ix.mu.Unlock()
	return ix.db.Close()
}

// txPrepared is a statement prepared in one transaction.
type txPrepared struct {
	tx *sql.Tx
	st *sql.Stmt
}

// txStmt returns q prepared in tx: from the cache with
// Options.CacheStatements, else prepared on tx's connection. The
// transaction closes it.
func (ix *Index) txStmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	if !ix.cacheStmts {
		// Kept for the rest of tx: some statements run once per posting
		// looked up. A map entry keeps its transaction reachable, so a
		// later transaction cannot have the same address.
		ix.mu.Lock()
		defer ix.mu.Unlock()
		if p, ok := ix.txStmts[q]; ok && p.tx == tx {
			return p.st, nil
		}
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return nil, err
		}
		if ix.txStmts == nil {
			ix.txStmts = map[string]txPrepared{}
		}
		ix.txStmts[q] = txPrepared{tx, st}
		return st, nil
	}
	st, err := ix.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// stmt returns a cached prepared statement: search runs on every prompt,
// and preparing its SQL costs as much as running it.
func (ix *Index) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if s, ok := ix.stmts[q]; ok {
		return s, nil
	}
	s, err := ix.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	ix.stmts[q] = s
	return s, nil
}

func (ix *Index) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM index_meta WHERE key = ?`, key).Scan(&v)
	return v, err
}

// Meta returns a value from index_meta ("" when unset).
func (ix *Index) Meta(ctx context.Context, key string) (string, error) {
	v, err := ix.meta(ctx, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", ix.wrap("read", err)
	}
	return v, nil
}

// MarkStale makes the next Open report needsRebuild. It is for damage
// found while reading (a malformed posting list), which only a rebuild
// from the note files repairs.
func (ix *Index) MarkStale(ctx context.Context) error {
	return ix.SetMeta(ctx, metaNeedsRebuild, "1")
}

// SetMeta stores a value in index_meta.
func (ix *Index) SetMeta(ctx context.Context, key, value string) error {
	if _, err := ix.db.ExecContext(ctx, `INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)`, key, value); err != nil {
		return ix.wrap("write", err)
	}
	return nil
}
