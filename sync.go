package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// How long a write waits for memory/'s lock before leaving its note
// uncommitted for the next sync. Other writes hold it for tens of
// milliseconds each, so even a burst of a hundred parallel writes clears
// well within writeLockWait; a sync may hold it while it talks to the
// network, so a write gives up on a sync after syncLockWait.
const (
	writeLockWait = 60 * time.Second
	syncLockWait  = 2 * time.Second
)

// repo opens memory/'s git repository on first use, so commands that only
// read the index never touch git.
func (s *Store) repo(ctx context.Context) (*gitsync.Repo, error) {
	s.gitMu.Lock() // the MCP server calls in from several goroutines
	defer s.gitMu.Unlock()
	if s.git != nil {
		return s.git, nil
	}
	r, err := gitsync.Open(ctx, s.memory.Root, s.machineID, s.now)
	if err != nil {
		return nil, err
	}
	s.git = r
	return r, nil
}

// gitDir is memory/'s git directory.
func (s *Store) gitDir() string { return filepath.Join(s.memory.Root, ".git") }

// hasRepo reports whether memory/ has a git repository yet: before the
// first commit (init or sync makes one) there is no history, head or lock
// to read, and readers of those answer "none" rather than an error. A
// .git file (memory/ as a worktree or submodule) counts as well.
func (s *Store) hasRepo() bool {
	_, err := os.Stat(s.gitDir())
	return err == nil
}

// Remote is the remote sync uses: Options.Remote (env), else config.json.
func (s *Store) Remote() string {
	if s.remote != "" {
		return s.remote
	}
	return s.config.Remote
}

// commitWhat is the line a commit of n says: write, update or capture
// (a session note), the note's type, id and title.
func commitWhat(verb string, n *note.Note) string {
	if n.ProvSource == "session-end" {
		verb = "capture session (" + verb + ")"
	}
	return fmt.Sprintf("%s %s %s: %s", verb, n.Type, n.ID, n.Title)
}

// commitNew commits a portable note just written or updated, and tells
// the user, in one notice, when it could not: the note stays on disk and
// the next sync commits it (every sync commits everything first).
// indexed says whether the index took the change; only then may the
// index be recorded as up to date with the new commit.
func (s *Store) commitNew(ctx context.Context, rel, homePath string, indexed bool, what string) {
	if err := s.commitNotes(ctx, []string{rel}, indexed, what); err != nil {
		s.notice(fmt.Sprintf("note %s saved but not committed: %v; the next `anamnesis sync` commits it", homePath, err))
	}
}

// commitNotes commits the given memory/ paths (written or removed) in one
// commit, right after they were written, so they are durable in git
// before any sync; what says what happened (the message's body, as `git
// log` shows it). indexed as in commitNew.
func (s *Store) commitNotes(ctx context.Context, rels []string, indexed bool, what string) error {
	_, err := s.commitNotesAs(ctx, rels, indexed, func(r *gitsync.Repo) (gitsync.Hash, bool, error) {
		return r.CommitPathsSaying(ctx, rels, what)
	})
	return err
}

// commitNotesMessage commits rels with a whole message of the caller's
// ("": the usual one) and returns the new head (consolidation runs).
func (s *Store) commitNotesMessage(ctx context.Context, rels []string, indexed bool, msg string) (gitsync.Hash, error) {
	return s.commitNotesAs(ctx, rels, indexed, func(r *gitsync.Repo) (gitsync.Hash, bool, error) {
		return r.CommitPathsMessage(ctx, rels, msg)
	})
}

// commitNotesAs runs commit under memory/'s lock and moves the last
// indexed commit along with it when the index already holds the change.
func (s *Store) commitNotesAs(ctx context.Context, rels []string, indexed bool, commit func(*gitsync.Repo) (gitsync.Hash, bool, error)) (gitsync.Hash, error) {
	r, err := s.repo(ctx)
	if err != nil {
		return gitsync.Hash{}, err
	}
	lock, err := s.lockForCommit(ctx, r.GitDir())
	if err != nil {
		return gitsync.Hash{}, err
	}
	defer lock.Release()
	before, err := r.Head()
	if err != nil {
		return gitsync.Hash{}, err
	}
	head, _, err := commit(r)
	if err != nil {
		return gitsync.Hash{}, fmt.Errorf("commit %s: %w", strings.Join(rels, ", "), err)
	}
	if !indexed {
		return head, nil
	}
	return head, s.guard(ctx, func() error { return s.advanceIndexedCommit(ctx, before, head) })
}

// lockForCommit takes memory/'s lock for a write's commit. It waits as
// long as other writes hold it (writeLockWait at most) but only
// syncLockWait behind a sync or anything else, and then says who holds
// the lock and for what.
func (s *Store) lockForCommit(ctx context.Context, gitDir string) (*gitsync.Lock, error) {
	start := time.Now()
	for {
		lock, err := gitsync.AcquireAs(ctx, gitDir, 100*time.Millisecond, gitsync.PurposeWrite)
		if !errors.Is(err, gitsync.ErrBusy) {
			return lock, err
		}
		pid, purpose, held, _ := gitsync.HolderAs(gitDir)
		waited := time.Since(start)
		// pid 0: the holder has not recorded itself yet; wait and look again.
		if !held || (purpose == gitsync.PurposeWrite || pid == 0) && waited < writeLockWait || waited < syncLockWait {
			continue
		}
		what := "another anamnesis process"
		switch purpose {
		case gitsync.PurposeSync:
			what = "a sync"
		case gitsync.PurposeWrite:
			what = "another write"
		}
		return nil, fmt.Errorf("%s (process %d) held memory/'s lock for the %.0f s this write waited", what, pid, waited.Seconds())
	}
}

// SyncReport is what `anamnesis sync --json` prints.
type SyncReport struct {
	Committed      bool     `json:"committed"`
	Fetched        bool     `json:"fetched"`
	Merged         bool     `json:"merged"`
	ConflictCopies []string `json:"conflict_copies"`
	Pushed         bool     `json:"pushed"`
	Head           string   `json:"head"`
	Remote         string   `json:"remote"` // redacted: no password or token
	// Branch is the hub's branch synced with (main, or the hub's default
	// branch when it has no main); BranchNote says why when it is not main.
	Branch     string               `json:"branch,omitempty"`
	BranchNote string               `json:"branch_note,omitempty"`
	Peers      []gitsync.PeerResult `json:"peers,omitempty"`
	// Unreachable names the tailnet peers asked in vain, and why.
	Unreachable []string `json:"unreachable,omitempty"`
	// Warnings are lines the user should read although nothing failed
	// (a mesh sync that found no peer to ask).
	Warnings  []string      `json:"warnings,omitempty"`
	Reindexed ReindexCounts `json:"reindexed"`
	// PacksMerged counts the packs in .git this sync merged into one
	// (each fetch leaves a pack; gitsync keeps their number down).
	PacksMerged int `json:"packs_merged,omitempty"`
	// Native is what the import of Claude Code's auto memory before the
	// sync did (`anamnesis sync` runs it; Sync itself does not).
	Native *NativeReport `json:"native,omitempty"`
}

// ReindexCounts counts index changes.
type ReindexCounts struct {
	Added   int `json:"added"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
}

// SyncOptions tune Sync; zero values take gitsync's defaults.
type SyncOptions struct {
	Timeout  time.Duration
	LockWait time.Duration
}

// Sync commits local notes, exchanges them with the remote (if one is
// configured), merges, pushes, and reindexes exactly the paths that
// changed between the last indexed commit and the new head.
func (s *Store) Sync(ctx context.Context, opts SyncOptions) (SyncReport, error) {
	out := SyncReport{Remote: gitsync.Redact(s.Remote()), ConflictCopies: []string{}}
	if err := s.writable("sync"); err != nil {
		return out, err
	}
	defer s.progress("", 0, 0)
	r, err := s.repo(ctx)
	if err != nil {
		return out, err
	}
	hub, mesh, discoverErr := s.syncTargets(ctx)
	rep, err := r.Sync(ctx, gitsync.Options{Remote: hub, Peers: mesh.peers, Timeout: opts.Timeout, LockWait: opts.LockWait,
		Progress: func(stage string) { s.progress("sync: "+stage, 0, 0) }, Dial: mesh.dial})
	out.Committed, out.Fetched, out.Merged, out.Pushed, out.Head = rep.Committed, rep.Fetched, rep.Merged, rep.Pushed, rep.Head
	out.ConflictCopies = homePaths(rep.ConflictCopies)
	out.Peers = rep.Peers
	out.Unreachable = mesh.unreachable
	if mesh.warning != "" {
		out.Warnings = append(out.Warnings, mesh.warning)
	}
	out.Branch, out.BranchNote = rep.Branch, rep.BranchNote
	out.PacksMerged = rep.PacksMerged
	if rep.PackError != "" {
		out.Warnings = append(out.Warnings, "the synced notes are safe, but merging .git's packs failed: "+rep.PackError)
	}
	for _, p := range homePaths(rep.TooLarge) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s is over %d bytes, the most a note may be: not committed, so not synced (other machines would refuse it)", p, gitsync.MaxBlobBytes))
	}
	if err == nil {
		err = discoverErr
	}
	if err == nil && discoverErr == nil {
		// Peers asked or listed, and not one answered: the sync did
		// nothing the user asked for, which must not pass for success.
		why := append([]string{}, mesh.unreachable...)
		ok := 0
		for _, p := range rep.Peers {
			if p.Error == "" {
				ok++
			} else {
				why = append(why, p.URL+": "+p.Error)
			}
		}
		if ok == 0 && len(why) > 0 {
			n := mesh.probed
			if n == 0 {
				n = len(rep.Peers)
			}
			err = noneReachable(n, why)
		}
	}
	// Reindex what did change even when the network step failed: the
	// local commit and any merge that completed are real.
	res, rerr := guarded(ctx, s, func() (index.Result, error) { return s.reindexSince(ctx) })
	out.Reindexed = ReindexCounts{Added: res.Added, Updated: res.Updated, Deleted: res.Deleted}
	if err != nil {
		return out, err
	}
	return out, rerr
}

func homePaths(rel []string) []string {
	out := make([]string, 0, len(rel))
	for _, p := range rel {
		out = append(out, note.PortableDir+"/"+p)
	}
	return out
}

// conflictCopies lists indexed conflict copies (home-relative paths).
func (s *Store) conflictCopies(ctx context.Context) ([]string, error) {
	return s.idx().ConflictCopies(ctx)
}

// EnsureRepo creates memory/'s git repository if it does not exist yet.
func (s *Store) EnsureRepo(ctx context.Context) error {
	_, err := s.repo(ctx)
	return err
}

// LastCommits maps each machine id to the time of its newest commit in
// memory/ (among the last 2,000), as `anamnesis peers` shows it. A store
// without a repository yet has none.
func (s *Store) LastCommits(ctx context.Context) (map[string]string, error) {
	if !s.hasRepo() {
		return map[string]string{}, nil
	}
	r, err := s.repo(ctx)
	if err != nil {
		return nil, err
	}
	return r.LastCommitByMachine(ctx, 2000)
}
