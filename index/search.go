package index

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/anamnesis-memory/anamnesis/note"
)

// DefaultK is how many notes a search returns unless asked otherwise.
const DefaultK = 8

// MaxK bounds k so a careless caller cannot ask for the whole store.
const MaxK = 1000

// Filter narrows search and list. Empty fields do not filter.
type Filter struct {
	Project string
	Type    string
	Types   []string // any of these types (list and count)
	Scope   string
	// ProvSource: only notes whose prov_source is this ("claude-auto-memory"
	// for notes imported from Claude Code's auto memory).
	ProvSource string
	// MachineID: only notes written on this machine.
	MachineID string
	Limit     int  // search: k (default DefaultK); list: 0 means no limit
	Live      bool // list and count: leave out superseded notes (search does unless WithSuperseded)
	// WithSuperseded (search and nearest vectors): rank superseded notes
	// too. Search leaves them out by default because their successor says
	// it better; a person looking for what a note used to say, or for a
	// note a consolidation replaced, asks for them. Live overrides it.
	WithSuperseded bool
	// ArrivedAfter (unix nanoseconds; list only): only notes that arrived
	// from another machine after it (Change.Arrived).
	ArrivedAfter int64
	// Before (list only): only notes listed after this one in List's
	// order, newest first; the cursor of a page that goes on where the
	// last one ended, so page N costs what page 1 does (an OFFSET would
	// step over every note before it).
	Before *Cursor
}

// Cursor is a note's place in List's order: its updated_at, then its id.
type Cursor struct {
	UpdatedAt string
	ID        string
}

// Hit is one note from the index with where it lives. Body and tags come
// from the index itself, so listing never re-reads note files.
type Hit struct {
	note.Note
	Path  string  // home-relative file path
	Score float64 // search only: -bm25, higher is better
	// ConflictOf names the note this one is a merge conflict copy of
	// ("" for an ordinary note).
	ConflictOf string
	// Why a hybrid search ranked it where it did: its rank in the BM25 and
	// the vector legs (0: not in that leg), its cosine to the query, and
	// the decay factor applied (0: none).
	BM25Rank, VecRank int
	Cosine, Decay     float64
	// LooksLike names live notes of the same project, among those
	// returned with it, whose title is so close to this one's that the
	// two look like versions of one fact neither supersedes (the root
	// package's MarkSameFact sets it).
	LooksLike []string
}

// ConflictKey is the frontmatter key of a merge conflict copy naming the
// note it conflicts with (gitsync writes it).
const ConflictKey = "conflict_of"

func (f Filter) where(clauses []string, args []any) ([]string, []any) {
	if f.Project != "" {
		clauses, args = append(clauses, "m.project = ?"), append(args, f.Project)
	}
	if f.Type != "" {
		clauses, args = append(clauses, "m.type = ?"), append(args, f.Type)
	}
	if f.Scope != "" {
		clauses, args = append(clauses, "m.scope = ?"), append(args, f.Scope)
	}
	if f.ProvSource != "" {
		clauses, args = append(clauses, "m.prov_source = ?"), append(args, f.ProvSource)
	}
	if f.MachineID != "" {
		clauses, args = append(clauses, "m.machine_id = ?"), append(args, f.MachineID)
	}
	if len(f.Types) > 0 {
		clauses = append(clauses, "m.type IN ("+params(len(f.Types))+")")
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	if f.Live {
		clauses = append(clauses, "m.id NOT IN (SELECT superseded_id FROM memory_supersedes)")
	}

	return clauses, args
}

// Search ranks notes against free text as the recall seed does: every
// word an OR'ed phrase, BM25 first, then most recently updated. Notes
// superseded by another note are left out unless f.WithSuperseded. Text without any word
// character returns no hits without touching the database.
//
// The ranking is the seed's, exactly; only the work differs, because
// FTS5 scoring every note that shares a word with the query costs about
// 2.5 µs a note:
//
//   - The index's own postings score FTS5's bm25 formula in Go, bit for
//     bit (rank_postings.go), at a few ns a posting. A word FTS5 splits into
//     several tokens (snake_case) is a phrase only FTS5's positions can
//     match: FTS5 finds and scores that phrase alone, and its counts are
//     recovered from those scores.
//   - Should that recovery fail, FTS5 ranks (ftsRank), with two prunings
//     used only when they provably return the seed's result: words in at
//     least half the notes are not scored, since FTS5 floors their IDF at
//     1e-6 and together they move a score by at most bm25Floor per word;
//     and MaxScore: the notes containing the rarest words are scored
//     exactly, and a note containing none of them scores at most the sum
//     of the other words' upper bounds (IDF times k1+1), so when the k-th
//     candidate beats that bound, no other note can enter the top k.
//
// On the postings path Score is -bm25 exactly; on the FTS5 path it is
// -bm25 over the words that were scored, so it can differ from the full
// query's figure by less than bm25Floor per common word.
func (ix *Index) Search(ctx context.Context, text string, f Filter) ([]Hit, error) {
	toks := wordRe().FindAllString(text, MaxQueryTokens)
	if len(toks) == 0 {
		return nil, nil
	}
	k := f.Limit
	if k <= 0 {
		k = DefaultK
	}
	if k > MaxK {
		k = MaxK
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, ix.wrap("search", err)
	}
	defer tx.Rollback()
	rowids, scores, err := ix.goRank(ctx, tx, phraseKeys(toks), f, k)
	if errors.Is(err, errNeedFTS5) {
		rowids, scores, err = ix.ftsRank(ctx, tx, toks, f, k)
	}
	if err != nil {
		return nil, err
	}
	rowids, scores, _ = trim(rowids, scores, k)
	hits, found, err := ix.load(ctx, tx, rowids)
	if err != nil {
		return nil, err
	}
	score := make(map[int64]float64, len(rowids))
	for i, r := range rowids {
		score[r] = scores[i]
	}
	for i := range hits {
		hits[i].Score = score[found[i]]
	}
	return hits, nil
}

const selectHit = `SELECT m.rowid, m.id, m.type, m.title, m.body_path, m.project, m.machine_id, m.scope, m.user_id,
 m.workspace_id, m.created_at, m.updated_at, m.prov_source, m.prov_model, m.prov_session, m.confidence, f.body,
 (SELECT group_concat(tag, char(31)) FROM (SELECT tag FROM memory_tags WHERE memory_id = m.id ORDER BY rowid)),
 (SELECT group_concat(superseded_id, char(31)) FROM (SELECT superseded_id FROM memory_supersedes WHERE memory_id = m.id ORDER BY rowid)),
 (SELECT conflict_of FROM memory_conflicts WHERE memory_id = m.id)
 FROM memories m JOIN memories_fts f ON f.rowid = m.rowid`

func scanHit(rows *sql.Rows) (Hit, int64, error) {
	var h Hit
	var rowid int64
	var bodyPath string
	var model, session, tags, sup, conflictOf sql.NullString
	err := rows.Scan(&rowid, &h.ID, &h.Type, &h.Title, &bodyPath, &h.Project, &h.MachineID, &h.Scope, &h.UserID,
		&h.WorkspaceID, &h.CreatedAt, &h.UpdatedAt, &h.ProvSource, &model, &session, &h.Confidence, &h.Body, &tags, &sup, &conflictOf)
	if err != nil {
		return h, 0, err
	}
	h.ProvModel, h.ProvSession = model.String, session.String
	h.Tags = splitUnit(tags.String)
	h.Supersedes = splitUnit(sup.String)
	h.ConflictOf = conflictOf.String
	h.Path = note.TreeDir(h.Scope) + "/" + bodyPath
	return h, rowid, nil
}

func splitUnit(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\x1f")
}

// load fetches full hits for rowids, in the order given, with the rowid
// of each (a row deleted between the two queries is left out).
func (ix *Index) load(ctx context.Context, tx *sql.Tx, rowids []int64) ([]Hit, []int64, error) {
	if len(rowids) == 0 {
		return []Hit{}, nil, nil
	}
	ph := params(len(rowids))
	args := make([]any, len(rowids))
	for i, r := range rowids {
		args[i] = r
	}
	st, err := ix.txStmt(ctx, tx, selectHit+` WHERE m.rowid IN (`+ph+`)`)
	if err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	defer rows.Close()
	byRow := map[int64]Hit{}
	for rows.Next() {
		h, rowid, err := scanHit(rows)
		if err != nil {
			return nil, nil, ix.wrap("read", err)
		}
		byRow[rowid] = h
	}
	if err := rows.Err(); err != nil {
		return nil, nil, ix.wrap("read", err)
	}
	out := make([]Hit, 0, len(rowids))
	found := make([]int64, 0, len(rowids))
	for _, r := range rowids {
		if h, ok := byRow[r]; ok {
			out, found = append(out, h), append(found, r)
		}
	}
	return out, found, nil
}
