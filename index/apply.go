package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// File is what the index remembers about one note file. Path is relative
// to the store home (memory/<type>/<name>.md or local/...).
type File struct {
	Path    string
	Size    int64
	MtimeNS int64
	Hash    string
	NoteID  string // the note indexed from this file, or the id it duplicates
	Error   string // why the file is not indexed; "" when it is
}

// Change is one file-level change to apply.
type Change struct {
	File File
	// Note is the parsed note for an indexed file; nil when File.Error says
	// why the file was skipped.
	Note *note.Note
	// Delete removes File.Path and the note indexed from it.
	Delete bool
	// StatOnly records a new size/mtime for a file whose content hash is
	// unchanged (touched, or rewritten with the same bytes).
	StatOnly bool
	// Arrived marks a note that came from another machine (a sync merged
	// it in); ArrivedSince finds it.
	Arrived bool
	// Claim makes this file the owner of its note's id even when another
	// file holds it now; that file is then recorded as the duplicate. The
	// caller decides which of several files claiming one id owns it
	// (Apply alone keeps whichever came first, which depends on order).
	Claim bool
}

// Result counts what Apply did. Freed lists ids whose file went away;
// a duplicate file of such an id may now be indexable. Duplicates lists
// ids a file was found to duplicate (kept from the index, recorded as a
// skipped file): the caller may settle which file owns each.
type Result struct {
	Added      int `json:"added"`
	Updated    int `json:"updated"`
	Deleted    int `json:"deleted"`
	Skipped    int `json:"skipped"`
	Freed      []string
	Duplicates []string
}

// Add folds another result into r.
func (r *Result) Add(o Result) {
	r.Added += o.Added
	r.Updated += o.Updated
	r.Deleted += o.Deleted
	r.Skipped += o.Skipped
	r.Freed = append(r.Freed, o.Freed...)
	r.Duplicates = append(r.Duplicates, o.Duplicates...)
}

// Apply applies changes in one transaction: either all of them land or
// none does.
func (ix *Index) Apply(ctx context.Context, changes []Change) (Result, error) {
	return ix.inTx(ctx, changes, newPostingEdits())
}

// RebuildFrom is Rebuild with changes produced while the transaction runs,
// so reading and parsing files overlaps with writing the index. Memory
// stays bounded whatever the number of notes: changes are applied as they
// come and dropped, and the postings are written chunk by chunk as they
// fill (bulkPostings).
func (ix *Index) RebuildFrom(ctx context.Context, produce func(yield func(Change) error) error) (Result, error) {
	var res Result
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return res, ix.wrap("begin", err)
	}
	defer tx.Rollback()
	if err := createSchema(ctx, tx, false); err != nil {
		return res, ix.wrap("reset", err)
	}
	if err := withoutSecondaryIndexes(ctx, tx); err != nil {
		return res, ix.wrap("reset", err)
	}
	bulk := ix.newBulkPostings()
	a := ix.newApplier(ctx, tx, bulk)
	defer a.close()
	var applyErr error
	err = produce(func(c Change) error {
		if err := a.apply(&c, &res); err != nil {
			applyErr = ix.wrap("apply "+c.File.Path+" to", err)
			return applyErr
		}
		if err := bulk.writeReady(a, false); err != nil {
			applyErr = ix.wrap("write postings to", err)
			return applyErr
		}
		return nil
	})
	if applyErr != nil {
		return Result{}, applyErr
	}
	if err != nil {
		return Result{}, err
	}
	if err := a.finish(); err != nil {
		return Result{}, ix.wrap("write", err)
	}
	if err := createSecondaryIndexes(ctx, tx); err != nil {
		return Result{}, ix.wrap("index", err)
	}
	if err := tx.Commit(); err != nil {
		return Result{}, ix.wrap("commit", err)
	}
	return res, nil
}

// inTx applies changes in one transaction, merging their postings
// through post.
func (ix *Index) inTx(ctx context.Context, changes []Change, post postingSink) (Result, error) {
	var res Result
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return res, ix.wrap("begin", err)
	}
	defer tx.Rollback()
	a := ix.newApplier(ctx, tx, post)
	defer a.close()
	for i := range changes {
		if err := a.apply(&changes[i], &res); err != nil {
			return Result{}, ix.wrap("apply "+changes[i].File.Path+" to", err)
		}
	}
	if err := a.finish(); err != nil {
		return Result{}, ix.wrap("write", err)
	}
	if err := tx.Commit(); err != nil {
		return Result{}, ix.wrap("commit", err)
	}
	return res, nil
}

// postingSink takes the postings of the notes an applier indexes and
// drops: postingEdits merges them into stored lists, bulkPostings builds
// the lists of a rebuild from empty.
type postingSink interface {
	add(rowid int64, title, body, tags string)
	drop(rowid int64, title, body, tags string) error
	// write stores what is still held, and the total token count.
	write(a *applier) error
	// wait stops any goroutine the sink runs.
	wait()
}

type applier struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	// rebuild starts from empty tables: the note count is set, not moved.
	rebuild bool
	post    postingSink
	docs    int    // change in the number of notes
	touched bool   // a change was applied: index_files moved on
	stats   []byte // a rebuild's files, encoded for the stat cache
	// statements counts the statements run, for tests of what a batch
	// costs.
	statements int

	chunkMax, chunkTarget int
	tailFrom, tailRows    int64 // see tail.go
}

func (ix *Index) newApplier(ctx context.Context, tx *sql.Tx, post postingSink) *applier {
	_, rebuild := post.(*bulkPostings)
	return &applier{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}, rebuild: rebuild, post: post,
		chunkMax: ix.chunkMax, chunkTarget: ix.chunkTarget, tailFrom: ix.tailFrom, tailRows: ix.tailRows}
}

// finish writes what was accumulated: the postings and the note count.
// Outside a rebuild, postings are collected for the whole transaction and
// written once per token: a batch of thousands of notes touches each list
// once.
func (a *applier) finish() error {
	if err := a.post.write(a); err != nil {
		return err
	}
	if a.touched || a.rebuild {
		// The stat cache of the generation before is stale now (statcache.go).
		if err := a.exec(`INSERT INTO index_meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`, metaFilesGen); err != nil {
			return err
		}
	}
	if a.rebuild {
		if err := a.saveBuiltStats(a.stats); err != nil {
			return err
		}
		if err := a.exec(`INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)`, metaDocCount, a.docs); err != nil {
			return err
		}
		return a.exec(`DELETE FROM index_meta WHERE key = ?`, metaNeedsRebuild)
	}
	if a.docs == 0 {
		return nil
	}
	return a.exec(`UPDATE index_meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?`, a.docs, metaDocCount)
}

// dropFTS deletes a note's FTS row and its postings.
func (a *applier) dropFTS(rowid int64) error {
	row, err := a.queryRow(`SELECT title, body, tags FROM memories_fts WHERE rowid = ?`, rowid)
	if err != nil {
		return err
	}
	var title, body, tags string
	if err := row.Scan(&title, &body, &tags); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	}
	if err := a.post.drop(rowid, title, body, tags); err != nil {
		return err
	}
	return a.exec(`DELETE FROM memories_fts WHERE rowid = ?`, rowid)
}

func (a *applier) close() {
	a.post.wait()
	for _, s := range a.stmts {
		s.Close()
	}
}

func (a *applier) stmt(q string) (*sql.Stmt, error) {
	if s, ok := a.stmts[q]; ok {
		return s, nil
	}
	s, err := a.tx.PrepareContext(a.ctx, q)
	if err != nil {
		return nil, err
	}
	a.stmts[q] = s
	return s, nil
}

func (a *applier) exec(q string, args ...any) error {
	s, err := a.stmt(q)
	if err != nil {
		return err
	}
	a.statements++
	_, err = s.ExecContext(a.ctx, args...)
	return err
}

func (a *applier) queryRow(q string, args ...any) (*sql.Row, error) {
	s, err := a.stmt(q)
	if err != nil {
		return nil, err
	}
	a.statements++
	return s.QueryRowContext(a.ctx, args...), nil
}

func (a *applier) query(q string, args ...any) (*sql.Rows, error) {
	s, err := a.stmt(q)
	if err != nil {
		return nil, err
	}
	a.statements++
	return s.QueryContext(a.ctx, args...)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (a *applier) putFile(f File) error {
	if a.rebuild {
		a.stats = appendStat(a.stats, f) // each path once: a rebuild reads each file once
	}
	return a.exec(`INSERT OR REPLACE INTO index_files(path, size, mtime_ns, hash, note_id, error) VALUES (?, ?, ?, ?, ?, ?)`,
		f.Path, f.Size, f.MtimeNS, f.Hash, nullable(f.NoteID), nullable(f.Error))
}

// fileNote returns the id indexed from path, if any.
func (a *applier) fileNote(path string) (string, error) {
	row, err := a.queryRow(`SELECT note_id FROM index_files WHERE path = ? AND error IS NULL`, path)
	if err != nil {
		return "", err
	}
	var id sql.NullString
	if err := row.Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	return id.String, nil
}

// owner returns the rowid of note id and the home-relative path it was
// indexed from.
func (a *applier) owner(id string) (rowid int64, path string, ok bool, err error) {
	row, err := a.queryRow(`SELECT rowid, scope, body_path FROM memories WHERE id = ?`, id)
	if err != nil {
		return 0, "", false, err
	}
	var scope, body string
	if err := row.Scan(&rowid, &scope, &body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, "", false, nil
		}
		return 0, "", false, err
	}
	return rowid, note.TreeDir(scope) + "/" + body, true, nil
}

// dropNoteOwnedBy deletes note id if it was indexed from path.
func (a *applier) dropNoteOwnedBy(id, path string, res *Result) error {
	if id == "" {
		return nil
	}
	rowid, owner, ok, err := a.owner(id)
	if err != nil || !ok || owner != path {
		return err
	}
	if err := a.dropFTS(rowid); err != nil {
		return err
	}
	if err := a.exec(`DELETE FROM memories WHERE rowid = ?`, rowid); err != nil {
		return err
	}
	a.docs--
	for _, q := range []string{
		`DELETE FROM memory_tags WHERE memory_id = ?`,
		`DELETE FROM memory_supersedes WHERE memory_id = ?`,
		`DELETE FROM memory_conflicts WHERE memory_id = ?`,
		`DELETE FROM memory_arrivals WHERE memory_id = ?`,
		`DELETE FROM memory_hashes WHERE memory_id = ?`,
	} {
		if err := a.exec(q, id); err != nil {
			return err
		}
	}
	res.Deleted++
	res.Freed = append(res.Freed, id)
	return nil
}

// DuplicateError is the reason recorded for a file that claims id while
// the file at owner holds it.
func DuplicateError(id, owner string) string {
	return "duplicate id " + id + ", already indexed from " + owner
}

func (a *applier) apply(c *Change, res *Result) error {
	a.touched = true
	path := c.File.Path
	switch {
	case c.Delete:
		prev, err := a.fileNote(path)
		if err != nil {
			return err
		}
		if err := a.exec(`DELETE FROM index_files WHERE path = ?`, path); err != nil {
			return err
		}
		return a.dropNoteOwnedBy(prev, path, res)
	case c.StatOnly:
		return a.exec(`UPDATE index_files SET size = ?, mtime_ns = ? WHERE path = ?`, c.File.Size, c.File.MtimeNS, path)
	}
	prev, err := a.fileNote(path)
	if err != nil {
		return err
	}
	n := c.Note
	if n == nil || prev != n.ID {
		// Unreadable now, or its id changed (edited by hand): the note
		// it had is gone.
		if err := a.dropNoteOwnedBy(prev, path, res); err != nil {
			return err
		}
	}
	if n == nil {
		res.Skipped++
		f := c.File
		if f.Error == "" {
			f.Error = "not a note"
		}
		return a.putFile(f)
	}
	rowid, exists, dup, err := a.claim(c, res)
	if err != nil || dup {
		return err
	}
	if rowid, err = a.writeNote(n, path, rowid, exists, res); err != nil {
		return err
	}
	if err := a.writeRelated(n, rowid, c.Arrived); err != nil {
		return err
	}
	f := c.File
	f.NoteID, f.Error = n.ID, ""
	return a.putFile(f)
}

// claim settles who owns the id of c's note: the note's rowid if it is
// indexed (exists), or dup when another live file holds it and c does
// not claim it, in which case c's file is recorded as the duplicate.
// With Claim the owner so far becomes the duplicate instead.
func (a *applier) claim(c *Change, res *Result) (rowid int64, exists, dup bool, err error) {
	path, id := c.File.Path, c.Note.ID
	rowid, owner, exists, err := a.owner(id)
	if err != nil || !exists || owner == path {
		return rowid, exists, false, err
	}
	alive, err := a.fileNote(owner)
	if err != nil || alive != id {
		return rowid, exists, false, err
	}
	if !c.Claim {
		res.Skipped++
		res.Duplicates = append(res.Duplicates, id)
		f := c.File
		f.NoteID = id
		f.Error = DuplicateError(id, owner)
		return 0, false, true, a.putFile(f)
	}
	// The owner so far becomes the duplicate; its row keeps its stat and
	// hash, so a reconcile does not read it again.
	return rowid, exists, false, a.exec(`UPDATE index_files SET error = ? WHERE path = ?`, DuplicateError(id, path), owner)
}

// writeNote writes n's memories row (updating the one at rowid when it
// exists) and its FTS5 row and postings, and returns its rowid.
func (a *applier) writeNote(n *note.Note, path string, rowid int64, exists bool, res *Result) (int64, error) {
	scope, bodyPath, ok := note.SplitHomePath(path)
	if !ok {
		return 0, fmt.Errorf("path %q is in neither tree", path)
	}
	args := []any{n.ID, n.Type, n.Title, bodyPath, n.Project, n.MachineID, scope, n.UserID, n.WorkspaceID,
		n.CreatedAt, n.UpdatedAt, n.ProvSource, nullable(n.ProvModel), nullable(n.ProvSession), n.Confidence}
	if exists {
		if err := a.exec(`UPDATE memories SET id = ?, type = ?, title = ?, body_path = ?, project = ?, machine_id = ?,
 scope = ?, user_id = ?, workspace_id = ?, created_at = ?, updated_at = ?, prov_source = ?, prov_model = ?,
 prov_session = ?, confidence = ? WHERE rowid = ?`, append(args, rowid)...); err != nil {
			return 0, err
		}
		if err := a.dropFTS(rowid); err != nil {
			return 0, err
		}
		res.Updated++
	} else {
		s, err := a.stmt(`INSERT INTO memories (id, type, title, body_path, project, machine_id, scope, user_id,
 workspace_id, created_at, updated_at, prov_source, prov_model, prov_session, confidence)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return 0, err
		}
		r, err := s.ExecContext(a.ctx, args...)
		if err != nil {
			return 0, err
		}
		if rowid, err = r.LastInsertId(); err != nil {
			return 0, err
		}
		a.docs++
		res.Added++
	}
	tags := strings.Join(n.Tags, " ")
	if err := a.exec(`INSERT INTO memories_fts(rowid, id, title, body, tags) VALUES (?, ?, ?, ?, ?)`,
		rowid, n.ID, n.Title, n.Body, tags); err != nil {
		return 0, err
	}
	a.post.add(rowid, n.Title, n.Body, tags)
	return rowid, nil
}

// writeRelated replaces the rows of n in the tables beside memories:
// tags, superseded ids, the embedding hash, the note it is a conflict
// copy of, and its arrival.
func (a *applier) writeRelated(n *note.Note, rowid int64, arrived bool) error {
	if err := a.exec(`DELETE FROM memory_tags WHERE memory_id = ?`, n.ID); err != nil {
		return err
	}
	for _, t := range n.Tags {
		if err := a.exec(`INSERT OR IGNORE INTO memory_tags(memory_id, tag) VALUES (?, ?)`, n.ID, t); err != nil {
			return err
		}
	}
	if err := a.exec(`DELETE FROM memory_supersedes WHERE memory_id = ?`, n.ID); err != nil {
		return err
	}
	for _, s := range n.Supersedes {
		if err := a.exec(`INSERT OR IGNORE INTO memory_supersedes(memory_id, superseded_id) VALUES (?, ?)`, n.ID, s); err != nil {
			return err
		}
	}
	if err := a.exec(`INSERT OR REPLACE INTO memory_hashes(memory_id, hash) VALUES (?, ?)`, n.ID, EmbedHash(n.Title, n.Body, n.Tags)); err != nil {
		return err
	}
	if err := a.exec(`DELETE FROM memory_conflicts WHERE memory_id = ?`, n.ID); err != nil {
		return err
	}
	if of, ok := n.ExtraValue(ConflictKey); ok && of != "" {
		if err := a.exec(`INSERT INTO memory_conflicts(memory_id, conflict_of) VALUES (?, ?)`, n.ID, of); err != nil {
			return err
		}
	}
	if arrived {
		return a.exec(`INSERT OR REPLACE INTO memory_arrivals(memory_id, arrived_ns) VALUES (?, ?)`, n.ID, time.Now().UnixNano())
	}
	return nil
}
