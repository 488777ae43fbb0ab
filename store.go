package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	// Embedder computes the vectors of the semantic search leg; nil: the
	// one config.json's "embedder" names, if any (NewEmbedder builds it).
	Embedder Embedder
	// NewEmbedder builds an Embedder from config.json's "embedder"; nil
	// leaves the vector leg off unless Embedder is set.
	NewEmbedder func(EmbedderConfig) (Embedder, error)
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
	// DeferRebuild makes Open, and an operation that meets damage, fail
	// with [ErrNeedsRebuild] instead of rebuilding an index that needs it
	// (a new schema after an upgrade, damage): for callers on a latency
	// budget, such as hooks, which start the rebuild in the background
	// instead (17 s at 100,000 notes).
	DeferRebuild bool
	// Server marks a process that answers many requests (the MCP server,
	// the web UI, serve): its index keeps prepared statements for its
	// life. A command or hook prepares each in the transaction that runs
	// it, on one connection (index.Options.CacheStatements).
	Server bool
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

// Store is an opened memory home. It is safe for concurrent use by
// several goroutines (the web UI and the MCP server share one): the
// index may be replaced by a repair while others read it (see idx), the
// repository is opened once under a lock, and what Open set is not
// changed afterwards. Several processes share one home through file
// locks (the sync lock, the rebuild lock) and SQLite's own.
type Store struct {
	home      string
	machineID string
	config    Config
	memory    note.Tree
	local     note.Tree
	// ix is the open index. A repair may replace it while other
	// goroutines use the Store (the web UI and the MCP server share one):
	// readers load it once per operation through idx, replacements go
	// through setIndex.
	ix          atomic.Pointer[index.Index]
	ixMu        sync.Mutex    // serializes replacements, Close and tmpIndex
	git         *gitsync.Repo // opened on first use
	gitMu       sync.Mutex
	remote      string
	tsSocket    string
	tailnet     Tailnet
	embedder    Embedder
	embedderErr error // why config.json's embedder is not used, for doctor
	// The semantic leg of prompt recall: the cosine a note needs and how
	// long the prompt waits for its embedding.
	recallCosine  float64
	recallTimeout time.Duration
	busy          time.Duration
	notice        func(string)
	progress      func(stage string, done, total int)
	now           func() time.Time

	deferRebuild bool
	server       bool    // Options.Server
	decayDays    float64 // > 0: recency decay in Search (see decay)

	// builtAtOpen is what opening the Store rebuilt the index from, for
	// RebuildAfterOpen (indexguard.go): `reindex --full` after an upgrade
	// that changed the index's schema rebuilt it twice.
	builtAtOpen atomic.Pointer[index.Result]

	readOnly bool   // the home cannot be written (indexguard.go)
	tmpIndex string // directory of a temporary index of a read-only home

	noticeMu sync.Mutex
	noticed  map[string]bool // notices sent once per Store
}

// Open opens the store at home; with Options.Create it sets one up when
// home holds none. Its index is opened in one pass (openIndex, in
// indexguard.go, describes it): a missing, outdated or damaged index.db
// is rebuilt from the note files by the one owner of rebuilds (with
// [Options.DeferRebuild], Open fails with [ErrNeedsRebuild] instead); a
// healthy one is used as it is. Open never reads the note files to
// compare them with the index: a caller that wants edits made behind the
// index's back picked up asks for it with [Store.Reconcile].
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
		server:       opts.Server,
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
	s.setUpEmbedder(opts, cfg)
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

// setUpEmbedder sets up the semantic leg: the embedder Options gives, or
// the one config.json names, and the cosine and wait of prompt recall.
func (s *Store) setUpEmbedder(opts Options, cfg Config) {
	s.embedder = opts.Embedder
	if s.embedder == nil && cfg.Embedder != nil && opts.NewEmbedder != nil {
		e, err := opts.NewEmbedder(*cfg.Embedder)
		if err != nil {
			// The vector leg is an addition: without it search is BM25.
			s.embedderErr = err
			s.notice(fmt.Sprintf("embedder in %s not used: %v; search is BM25 only", filepath.Join(s.home, ConfigFile), err))
		} else {
			s.embedder = e
		}
	}
	s.recallCosine, s.recallTimeout = DefaultRecallCosine, DefaultRecallEmbedTimeout
	if e := cfg.Embedder; e != nil {
		if e.MinCosine > 0 {
			s.recallCosine = e.MinCosine
		}
		if e.PromptTimeoutMS > 0 {
			s.recallTimeout = time.Duration(e.PromptTimeoutMS) * time.Millisecond
		}
	}
}

// Close releases the index.
func (s *Store) Close() error {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	err := s.idx().Close()
	if s.tmpIndex != "" {
		os.RemoveAll(s.tmpIndex)
	}
	return err
}

// idx is the open index. An operation loads it once and keeps using that
// one: a repair that replaces it closes the old one only after the new
// one is in place, and an operation still on the old one fails cleanly
// ("database is closed") rather than racing.
func (s *Store) idx() *index.Index { return s.ix.Load() }

// setIndex makes ix the open index; the caller closes whatever it
// replaces (at Open there is none).
func (s *Store) setIndex(ix *index.Index) {
	s.ixMu.Lock()
	s.ix.Store(ix)
	s.ixMu.Unlock()
}

// Home is the store directory.
func (s *Store) Home() string { return s.home }

// Config is the machine-local configuration read at Open.
func (s *Store) Config() Config { return s.config }

func (s *Store) tree(scope string) note.Tree {
	if scope == note.ScopeMachineLocal {
		return s.local
	}
	return s.memory
}
