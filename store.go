package anamnesis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// IndexFile is the derived index inside a home.
const IndexFile = "index.db"

// ErrInvalidID is returned for an argument that is not shaped like a note
// id; such strings never reach the file system.
var ErrInvalidID = errors.New("not a valid note id")

// ErrInvalid marks a request that no note or filter can satisfy (an
// unknown type or scope, an empty title, a negative limit): the caller's
// mistake, reported before anything is read or written. The error's text
// is the specific complaint; errors.Is(err, ErrInvalid) tells the kind.
var ErrInvalid = errors.New("invalid request")

type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

func invalidf(format string, args ...any) error {
	return invalidError{fmt.Errorf(format, args...)}
}

// ErrNotFound is returned for an id the store does not hold.
var ErrNotFound = errors.New("no note with that id")

// Options tune Open. The zero value is usable.
type Options struct {
	// MachineID stamps new notes; empty resolves from config.json or the hostname.
	MachineID string
	// Notice receives one-line notices the user should see (an index that
	// had to be rebuilt). Nil discards them.
	Notice func(string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Remote overrides config.json's remote (ANAMNESIS_GIT_REMOTE).
	Remote string
	// TailscaleSocket overrides config.json's tailscale_socket
	// (--tailscale-socket, ANAMNESIS_TAILSCALE_SOCKET).
	TailscaleSocket string
	// Tailnet finds peers on the tailnet for a mesh sync and reports
	// tailscaled's state; nil: a remote of "tailnet" cannot sync, and peer
	// URLs are dialled directly.
	Tailnet Tailnet
	// BusyTimeout bounds waits for another process's index lock (0: 10 s).
	BusyTimeout time.Duration
	// DecayDays overrides config.json's recall_decay_days: > 0 sets the
	// decay constant in days, < 0 turns decay off, 0 keeps the config.
	DecayDays float64
	// Progress receives progress of long work (a rebuild of the index, a
	// large reindex, the stages of a sync): stage names what is being done,
	// done of total items (total 0: a stage without a count); an empty
	// stage means the work is over (a printer clears its line). Nil
	// discards it. It is called from the goroutine doing the work.
	Progress func(stage string, done, total int)
	// Create makes Open set up a new store at home (its directories) when
	// there is none. Without it, Open of a directory that holds no store
	// fails with ErrNoStore, so a mistyped home is an error, not a new
	// empty store that later notes silently go to.
	Create bool
	// DeferRebuild makes Open fail with ErrNeedsRebuild instead of
	// rebuilding an index that needs it (a new schema after an upgrade,
	// damage): for callers on a latency budget, such as hooks, which start
	// the rebuild in the background instead (17 s at 100,000 notes).
	DeferRebuild bool
}

// ErrNoStore is Open's answer, without Options.Create, for a home that
// holds no store.
var ErrNoStore = errors.New("no store")

// storeMarkers are the entries of which any one makes a directory a store
// (a store made by this tool has all of them after its first write; the
// Python tool's, or one whose index was deleted, may lack some).
var storeMarkers = []string{note.PortableDir, note.LocalDir, ConfigFile, IndexFile}

// IsStore reports whether home holds a store: a directory with memory/,
// local/, config.json or index.db in it.
func IsStore(home string) bool {
	for _, m := range storeMarkers {
		if _, err := os.Lstat(filepath.Join(home, m)); err == nil {
			return true
		}
	}
	return false
}

// ErrNeedsRebuild is Open's answer with Options.DeferRebuild when the
// index must be rebuilt from the note files before it can answer.
var ErrNeedsRebuild = errors.New("the index must be rebuilt from the note files")

// Store is an opened memory home.
type Store struct {
	home      string
	machineID string
	config    Config
	memory    note.Tree
	local     note.Tree
	ix        *index.Index
	git       *gitsync.Repo // opened on first use
	gitMu     sync.Mutex
	remote    string
	tsSocket  string
	tailnet   Tailnet
	busy      time.Duration
	notice    func(string)
	progress  func(stage string, done, total int)
	now       func() time.Time

	deferRebuild bool
	decayDays    float64 // > 0: recency decay in Search (see decay)

	readOnly bool   // the home cannot be written (indexguard.go)
	tmpIndex string // directory of a temporary index of a read-only home

	noticeMu sync.Mutex
	noticed  map[string]bool // notices sent once per Store
}

// Open opens the store at home; with Options.Create it sets one up when
// home holds none. A missing, outdated or corrupt index.db is rebuilt
// from the note files.
func Open(ctx context.Context, home string, opts Options) (*Store, error) {
	if !opts.Create && !IsStore(home) {
		return nil, fmt.Errorf("%w at %s; run `anamnesis init`", ErrNoStore, home)
	}
	cfg, err := LoadConfig(home)
	if err != nil {
		return nil, err
	}
	machineID, err := ResolveMachineID(opts.MachineID, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{
		home:      home,
		machineID: machineID,
		config:    cfg,
		memory:    note.Tree{Root: filepath.Join(home, note.PortableDir), Scope: note.ScopePortable},
		local:     note.Tree{Root: filepath.Join(home, note.LocalDir), Scope: note.ScopeMachineLocal},
		notice:    opts.Notice,
		progress:  opts.Progress,
		now:       opts.Now,
		remote:    strings.TrimSpace(opts.Remote),
		tsSocket:  strings.TrimSpace(opts.TailscaleSocket),
		tailnet:   opts.Tailnet,
		busy:      opts.BusyTimeout,
		decayDays: cfg.DecayDays,

		deferRebuild: opts.DeferRebuild,
	}
	if opts.DecayDays != 0 {
		s.decayDays = opts.DecayDays
	}
	if s.busy <= 0 {
		s.busy = 10 * time.Second
	}
	if s.notice == nil {
		s.notice = func(string) {}
	}
	if s.progress == nil {
		s.progress = func(string, int, int) {}
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, d := range []string{home, s.memory.Root, s.local.Root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create store directory %s: %w", d, err)
		}
	}
	if err := s.openIndex(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the index.
func (s *Store) Close() error {
	err := s.ix.Close()
	if s.tmpIndex != "" {
		os.RemoveAll(s.tmpIndex)
	}
	return err
}

// Home is the store directory.
func (s *Store) Home() string { return s.home }

// MachineID is the id stamped on notes written here.
func (s *Store) MachineID() string { return s.machineID }

// Config is the machine-local configuration read at Open.
func (s *Store) Config() Config { return s.config }

// Index exposes the index for read-only reporting and benchmarks.
func (s *Store) Index() *index.Index { return s.ix }

func (s *Store) tree(scope string) note.Tree {
	if scope == note.ScopeMachineLocal {
		return s.local
	}
	return s.memory
}

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
	path, err := s.put(ctx, n)
	if err != nil {
		return nil, "", err
	}
	return n, path, nil
}

// checkSuperseded refuses ids no note has: a mistyped id would hide
// nothing and leave the old note in every search while the user thinks it
// is replaced. A note counts if the index knows it or its file is on disk
// at <type>/<id>.md (written since the last reindex).
func (s *Store) checkSuperseded(ctx context.Context, ids []string) error {
	for _, id := range ids {
		_, err := guarded(ctx, s, func() (index.Hit, error) { return s.ix.Get(ctx, id) })
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
		for _, typ := range note.Types {
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
	ch := s.readChange(t, rel)
	if ch.Note == nil {
		os.Remove(t.Path(rel))
		return "", fmt.Errorf("re-read %s: %s", homePath, ch.File.Error)
	}
	// From here on the file is the note. The index is derived: if it
	// cannot take the note now, a reindex (or the next sync, which
	// re-reads what was committed since the index last caught up) will.
	indexErr := s.guard(ctx, func() error {
		_, err := s.ix.Apply(ctx, []index.Change{ch})
		return err
	})
	if indexErr != nil {
		s.notice(fmt.Sprintf("note %s saved but not indexed yet (%v); `anamnesis reindex` indexes it", homePath, indexErr))
	}
	if t.Scope == note.ScopePortable {
		s.commitNew(ctx, rel, homePath, indexErr == nil)
	}
	return homePath, nil
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
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.ix.Get(ctx, id) })
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

// Search ranks notes against free text (see index.Search).
func (s *Store) Search(ctx context.Context, query string, f index.Filter) ([]index.Hit, error) {
	if err := validateFilter(f); err != nil {
		return nil, err
	}
	return guarded(ctx, s, func() ([]index.Hit, error) { return s.search(ctx, query, f) })
}

func (s *Store) search(ctx context.Context, query string, f index.Filter) ([]index.Hit, error) {
	days := s.decayDays
	if days <= 0 {
		return s.ix.Search(ctx, query, f)
	}
	k := f.Limit
	if k <= 0 {
		k = index.DefaultK
	}
	pool := f
	pool.Limit = min(max(4*k, decayPool), index.MaxK)
	hits, err := s.ix.Search(ctx, query, pool)
	if err != nil {
		return nil, err
	}
	return decay(hits, s.now(), days, k), nil
}

// decayPool is the least number of BM25 candidates decay re-ranks: a note
// outside them is not considered, so decay is a re-ranking of the best
// matches, not a second ranking of the store.
const decayPool = 32

// decay multiplies each score by exp(-age/days), age from updated_at, and
// keeps the best k. The sort is stable, so equal scores keep the seed's
// newest-first order. A note with an unreadable or future timestamp is
// not penalized.
func decay(hits []index.Hit, now time.Time, days float64, k int) []index.Hit {
	for i := range hits {
		if t, err := time.Parse(time.RFC3339Nano, hits[i].UpdatedAt); err == nil && now.After(t) {
			hits[i].Score *= math.Exp(-now.Sub(t).Hours() / 24 / days)
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// List returns notes newest first, superseded ones included.
func (s *Store) List(ctx context.Context, f index.Filter) ([]index.Hit, error) {
	if err := validateFilter(f); err != nil {
		return nil, err
	}
	return guarded(ctx, s, func() ([]index.Hit, error) { return s.ix.List(ctx, f) })
}

func validateFilter(f index.Filter) error {
	if f.Type != "" && !note.ValidType(f.Type) {
		return invalidf("type %q is not one of %s", f.Type, strings.Join(note.Types, ", "))
	}
	if f.Scope != "" && !note.ValidScope(f.Scope) {
		return invalidf("scope %q is not %s or %s", f.Scope, note.ScopePortable, note.ScopeMachineLocal)
	}
	if f.Limit < 0 {
		return invalidf("limit %d is negative", f.Limit)
	}
	return nil
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
	h, err := guarded(ctx, s, func() (index.Hit, error) { return s.ix.Get(ctx, n.ID) })
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
	if err := note.WriteFileAtomic(t.Path(rel), note.Marshal(n)); err != nil {
		return "", err
	}
	ch := s.readChange(t, rel)
	if ch.Note == nil {
		return "", fmt.Errorf("re-read %s: %s", h.Path, ch.File.Error)
	}
	indexErr := s.guard(ctx, func() error {
		_, err := s.ix.Apply(ctx, []index.Change{ch})
		return err
	})
	if indexErr != nil {
		s.notice(fmt.Sprintf("note %s saved but not indexed yet (%v); `anamnesis reindex` indexes it", h.Path, indexErr))
	}
	if scope == note.ScopePortable {
		s.commitNew(ctx, rel, h.Path, indexErr == nil)
	}
	return h.Path, nil
}
