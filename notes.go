package anamnesis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ProvModelMCP is the prov_model of notes Claude writes through the MCP
// server's memory_write. Their prov_source stays "human" (a note
// written on purpose), one of the values the Python tool's index
// accepts, so both tools read the same memory/.
const ProvModelMCP = "claude-code (memory_write)"

// WriteRequest describes a new note.
type WriteRequest struct {
	Type       string
	Title      string
	Body       string
	Project    string   // "" means global
	Tags       []string // kept in order; blanks and repeats dropped
	Scope      string   // "" means portable
	Supersedes []string
	// Provenance; empty means a human wrote it.
	ProvSource  string
	ProvModel   string
	ProvSession string
	Confidence  float64 // 0 means 1.0
	// Once returns the live note this one would repeat (same type,
	// project, scope, title, body and supersedes) instead of writing a
	// second: what `write` and memory_write ask, where a retried call or
	// a model repeating itself would leave two notes of one fact.
	Once bool
}

// Write creates a note file, indexes it and commits it if portable.
// Validation errors name the field and leave nothing on disk. Once the
// file is written it is the note: if indexing or committing fails the
// write still succeeds, and a notice says what is pending and why.
func (s *Store) Write(ctx context.Context, req WriteRequest) (*note.Note, string, error) {
	n := note.New(req.Type, strings.TrimSpace(req.Title), req.Body, s.now())
	n.MachineID = s.machineID
	if p := strings.TrimSpace(req.Project); p != "" {
		n.Project = p
	}
	if req.Scope != "" {
		n.Scope = req.Scope
	}
	n.Tags = cleanList(req.Tags)
	n.Supersedes = cleanList(req.Supersedes)
	if req.ProvSource != "" {
		n.ProvSource = req.ProvSource
	}
	n.ProvModel, n.ProvSession = req.ProvModel, req.ProvSession
	if req.Confidence != 0 {
		n.Confidence = req.Confidence
	}
	if err := n.Validate(); err != nil {
		return nil, "", invalidError{err}
	}
	if err := s.writable("write a note"); err != nil {
		return nil, "", err
	}
	if err := s.checkSuperseded(ctx, n.Supersedes); err != nil {
		return nil, "", err
	}
	if req.Once {
		if same, path, ok := s.sameLiveNote(ctx, n); ok {
			return same, path, nil
		}
	}
	path, err := s.put(ctx, n)
	if err != nil {
		return nil, "", err
	}
	return n, path, nil
}

// sameLiveNote finds a live note n would repeat: same type, project,
// scope, title, body and supersedes (a retried tool call, a model writing
// what it already wrote). Writing it again would make two notes of one
// fact, both injected and searched ever after. Any failure to look counts
// as none: the write goes ahead.
func (s *Store) sameLiveNote(ctx context.Context, n *note.Note) (*note.Note, string, bool) {
	hits, err := guarded(ctx, s, func() ([]index.Hit, error) {
		return s.idx().Search(ctx, n.Title, index.Filter{Project: n.Project, Type: n.Type, Live: true, Limit: 5})
	})
	if err != nil {
		return nil, "", false
	}
	for _, h := range hits {
		if h.Title == n.Title && strings.TrimSpace(h.Body) == strings.TrimSpace(n.Body) && h.Scope == n.Scope &&
			slices.Equal(h.Supersedes, n.Supersedes) && h.ConflictOf == "" && h.ProvSession == n.ProvSession {
			same := h.Note
			return &same, h.Path, true
		}
	}
	return nil, "", false
}

// checkSuperseded refuses ids no note has: a mistyped id would hide
// nothing and leave the old note in every search while the user thinks it
// is replaced. A note counts if the index knows it or its file is on disk
// at <type>/<id>.md (written since the last reindex).
func (s *Store) checkSuperseded(ctx context.Context, ids []string) error {
	for _, id := range ids {
		_, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, id) })
		if err == nil {
			continue
		}
		if s.noteFileExists(id) {
			continue
		}
		if !errors.Is(err, index.ErrNotFound) {
			return fmt.Errorf("look up superseded note %s: %w", id, err)
		}
		return invalidf("supersedes: no note has the id %s (`anamnesis list` shows the ids)", id)
	}
	return nil
}

func (s *Store) noteFileExists(id string) bool {
	for _, t := range []note.Tree{s.memory, s.local} {
		for _, typ := range note.Types() {
			if _, err := os.Stat(t.Path(typ + "/" + id + ".md")); err == nil {
				return true
			}
		}
	}
	return false
}

// put writes n into its scope's tree and indexes the file. It returns the
// home-relative path.
func (s *Store) put(ctx context.Context, n *note.Note) (string, error) {
	t := s.tree(n.Scope)
	rel, err := t.Write(n)
	if err != nil {
		return "", err
	}
	homePath := note.TreeDir(t.Scope) + "/" + rel
	if err := s.settle(ctx, t, rel, homePath, commitWhat("write", n)); err != nil {
		t.Remove(rel)
		return "", err
	}
	return homePath, nil
}

// settle indexes and commits the note file just written at rel in t. The
// file is re-read, so the index holds what is on disk; a file that does
// not read back is the one error returned. From there on the file is the
// note and the index is derived: if it cannot take the note now, a
// reindex (or the next sync, which re-reads what was committed since the
// index last caught up) will, and a notice says so.
func (s *Store) settle(ctx context.Context, t note.Tree, rel, homePath, message string) error {
	ch := s.readChange(t, rel)
	if ch.Note == nil {
		return fmt.Errorf("re-read %s: %s", homePath, ch.File.Error)
	}
	indexErr := s.guard(ctx, func() error {
		_, err := s.idx().Apply(ctx, []index.Change{ch})
		return err
	})
	if indexErr != nil {
		s.notice(fmt.Sprintf("note %s saved but not indexed yet (%v); `anamnesis reindex` indexes it", homePath, indexErr))
	}
	if t.Scope == note.ScopePortable {
		s.commitNew(ctx, rel, homePath, indexErr == nil, message)
	}
	return nil
}

func cleanList(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

// readChange reads, hashes and parses one file into an index change. A
// file that cannot be indexed yields a change with File.Error set.
func (s *Store) readChange(t note.Tree, rel string) index.Change {
	homePath := note.TreeDir(t.Scope) + "/" + rel
	data, fi, err := t.ReadFile(rel)
	ch := index.Change{File: index.File{Path: homePath}}
	if fi != nil {
		ch.File.Size, ch.File.MtimeNS = fi.Size(), fi.ModTime().UnixNano()
	}
	if err != nil {
		ch.File.Error = strings.TrimPrefix(err.Error(), note.ErrMalformed.Error()+": ")
		return ch
	}
	sum := sha256.Sum256(data)
	ch.File.Hash = hex.EncodeToString(sum[:])
	n, err := note.Parse(data)
	if err != nil {
		ch.File.Error = strings.TrimPrefix(err.Error(), note.ErrMalformed.Error()+": ")
		return ch
	}
	n.Scope = t.Scope // the tree decides
	ch.Note = n
	return ch
}

// Get returns the note with id, read fresh from its file.
func (s *Store) Get(ctx context.Context, id string) (*note.Note, string, error) {
	n, path, _, err := s.GetFile(ctx, id)
	return n, path, err
}

// GetFile is Get that also returns the file's bytes as they are on disk
// (`show` prints them: a re-rendering would reorder and requote keys).
func (s *Store) GetFile(ctx context.Context, id string) (*note.Note, string, []byte, error) {
	if !note.ValidID(id) {
		return nil, "", nil, fmt.Errorf("%q: %w", id, ErrInvalidID)
	}
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, id) })
	if errors.Is(err, index.ErrNotFound) {
		return nil, "", nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, "", nil, err
	}
	scope, rel, _ := note.SplitHomePath(h.Path)
	t := s.tree(scope)
	data, _, err := t.ReadFile(rel)
	var n *note.Note
	if err == nil {
		n, err = note.Parse(data)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("note %s is indexed from %s, but that file cannot be read now (%s); run `anamnesis reindex`",
			id, h.Path, strings.TrimPrefix(err.Error(), note.ErrMalformed.Error()+": "))
	}
	if n.ID != id {
		return nil, "", nil, fmt.Errorf("note %s is indexed from %s, which now holds note %s; run `anamnesis reindex`", id, h.Path, n.ID)
	}
	n.Scope = t.Scope // the tree decides
	return n, h.Path, data, nil
}

// Update rewrites an existing note (same id, same file) with new content,
// keeping created_at and stamping updated_at. The file is replaced
// atomically, reindexed, and committed if portable.
func (s *Store) Update(ctx context.Context, n *note.Note) (string, error) {
	if !note.ValidID(n.ID) {
		return "", fmt.Errorf("%q: %w", n.ID, ErrInvalidID)
	}
	if err := s.writable("update a note"); err != nil {
		return "", err
	}
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.idx().Get(ctx, n.ID) })
	if errors.Is(err, index.ErrNotFound) {
		return "", fmt.Errorf("%s: %w", n.ID, ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	scope, rel, _ := note.SplitHomePath(h.Path)
	n.Scope = scope
	n.CreatedAt = h.CreatedAt
	n.UpdatedAt = note.Now(s.now())
	if err := n.Validate(); err != nil {
		return "", invalidError{err}
	}
	t := s.tree(scope)
	if err := t.WriteFile(rel, note.Marshal(n)); err != nil {
		return "", err
	}
	if err := s.settle(ctx, t, rel, h.Path, commitWhat("update", n)); err != nil {
		return "", err
	}
	return h.Path, nil
}

// NoteJSON is one note as the CLI (`search`, `list`, `show --json`) and
// the MCP server print it: one shape for both.
type NoteJSON struct {
	ID         string   `json:"id"`
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Project    string   `json:"project"`
	Scope      string   `json:"scope"`
	MachineID  string   `json:"machine_id"`
	Tags       []string `json:"tags"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
	Supersedes []string `json:"supersedes"`
	// ConflictOf names the note this one is a conflict copy of.
	ConflictOf string `json:"conflict_of,omitempty"`
	// LooksLike names notes in the same result that look like another
	// version of the same fact (MarkSameFact).
	LooksLike []string `json:"looks_like,omitempty"`
	// Body is nil in a listing without bodies (MCP's memory_list).
	Body *string `json:"body,omitempty"`
	// Truncated says Body was cut to fit a result (MCP).
	Truncated bool   `json:"truncated,omitempty"`
	Path      string `json:"path"`
	// Score is the search score; nil outside search results.
	Score *float64 `json:"score,omitempty"`
	// Rank (1 for the best) and Relevance (Relevance: the score over the
	// best score) are set where a person or a model reads results (MCP).
	Rank      int     `json:"rank,omitempty"`
	Relevance float64 `json:"relevance,omitempty"`
	// Why a hybrid search ranked it there: its rank in the BM25 and vector
	// legs (absent: not in that leg), its cosine to the query, the decay
	// factor (absent: no decay). Score is then the fused score.
	BM25Rank Rank    `json:"bm25_rank,omitzero"`
	VecRank  Rank    `json:"vec_rank,omitzero"`
	Cosine   float64 `json:"cosine,omitempty"`
	Decay    float64 `json:"decay,omitempty"`
}

// NoteOf is h as NoteJSON, with its body, and with its score if
// withScore.
func NoteOf(h Hit, withScore bool) NoteJSON {
	body := h.Body
	out := NoteJSON{ID: h.ID, Type: h.Type, Title: h.Title, Project: h.Project, Scope: h.Scope, MachineID: h.MachineID,
		Tags: h.Tags, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt, Supersedes: h.Supersedes, ConflictOf: h.ConflictOf,
		Body: &body, Path: h.Path, LooksLike: h.LooksLike}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.Supersedes == nil {
		out.Supersedes = []string{}
	}
	if withScore {
		s := h.Score
		out.Score = &s
		if h.BM25Rank > 0 || h.VecRank > 0 { // a hybrid search: both keys, always
			out.BM25Rank, out.VecRank = Rank{Of: h.BM25Rank, Hybrid: true}, Rank{Of: h.VecRank, Hybrid: true}
		}
		out.Cosine, out.Decay = h.Cosine, h.Decay
	}
	return out
}

// Rank is a note's rank in one leg of a hybrid search, as JSON: its rank
// (1 is the best), null when the leg did not find it, and absent outside
// hybrid results, so a hybrid result always has the same keys.
type Rank struct {
	Of     int  // 0: not found by that leg
	Hybrid bool // set in hybrid results only
}

// IsZero leaves the key out of results that are not hybrid (omitzero).
func (r Rank) IsZero() bool { return !r.Hybrid }

// MarshalJSON is the rank, or null.
func (r Rank) MarshalJSON() ([]byte, error) {
	if r.Of <= 0 {
		return []byte("null"), nil
	}
	return []byte(strconv.Itoa(r.Of)), nil
}

// UnmarshalJSON reads a rank or null.
func (r *Rank) UnmarshalJSON(b []byte) error {
	r.Hybrid = true
	if string(b) == "null" {
		r.Of = 0
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("rank %s: %w", b, err)
	}
	r.Of = n
	return nil
}
