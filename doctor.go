package anamnesis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
)

// Check states reported by Doctor.
const (
	CheckOK      = "ok"
	CheckWarn    = "warn"
	CheckProblem = "problem"
)

// Check is one finding of Doctor, written for a person.
type Check struct {
	Name   string   `json:"name"`
	State  string   `json:"state"`
	Detail string   `json:"detail"`
	Items  []string `json:"items,omitempty"`
	Fix    string   `json:"fix,omitempty"`
}

// Doctor inspects the store without changing it and explains what it
// finds: writable trees, whether the index agrees with the files, and
// note files that cannot be indexed.
func Doctor(ctx context.Context, s *Store) []Check {
	var out []Check
	for _, t := range []struct{ name, dir string }{{"memory tree", s.memory.Root}, {"local tree", s.local.Root}} {
		out = append(out, writableCheck(t.name, t.dir))
	}

	changes, err := s.Plan(ctx)
	switch {
	case err != nil:
		out = append(out, Check{Name: "index", State: CheckProblem, Detail: err.Error(),
			Fix: "delete " + filepath.Join(s.home, IndexFile) + " and run `anamnesis reindex --full`"})
	default:
		var changed, gone int
		for _, ch := range changes {
			switch {
			case ch.Delete:
				gone++
			case ch.StatOnly:
			case ch.Note != nil || ch.File.Error != "":
				changed++
			}
		}
		st, _ := s.ix.Stats(ctx)
		if n := changed + gone; n == 0 {
			out = append(out, Check{Name: "index", State: CheckOK, Detail: fmt.Sprintf("agrees with the note files (%d notes)", st.Total)})
		} else {
			out = append(out, Check{Name: "index", State: CheckWarn,
				Detail: fmt.Sprintf("%d note files changed since the last reindex (%d new or edited, %d removed)", n, changed, gone),
				Fix:    "run `anamnesis reindex`"})
		}
	}

	switch rep, err := s.ix.CheckPostings(ctx); {
	case err != nil:
		out = append(out, Check{Name: "search postings", State: CheckProblem, Detail: err.Error(),
			Fix: "run `anamnesis reindex --full`"})
	case rep.Differ > 0 || !rep.TotalOK:
		d := fmt.Sprintf("disagree with FTS5 for %d tokens", rep.Differ)
		if !rep.TotalOK {
			d += " and in the note or token totals"
		}
		out = append(out, Check{Name: "search postings", State: CheckProblem, Detail: d + ": search would rank differently",
			Items: rep.Mismatched, Fix: "run `anamnesis reindex --full`"})
	default:
		out = append(out, Check{Name: "search postings", State: CheckOK, Detail: fmt.Sprintf("agree with FTS5 (%d tokens)", rep.Tokens)})
	}

	if copies, err := s.conflictCopies(ctx); err == nil && len(copies) > 0 {
		out = append(out, Check{Name: "conflict copies", State: CheckWarn,
			Detail: fmt.Sprintf("%d notes were edited on two machines at once; both versions are kept", len(copies)),
			Items:  copies,
			Fix:    "merge each copy into the note named by its conflict_of, then delete the copy (or ask Claude to)"})
	} else if err == nil {
		out = append(out, Check{Name: "conflict copies", State: CheckOK, Detail: "none waiting"})
	}

	bad, err := s.ix.BadFiles(ctx)
	if err == nil {
		if len(bad) == 0 {
			out = append(out, Check{Name: "note files", State: CheckOK, Detail: "every note file parses"})
		} else {
			c := Check{Name: "note files", State: CheckWarn,
				Detail: fmt.Sprintf("%d files are skipped by the index", len(bad)),
				Fix:    "edit or remove each file named above, then run `anamnesis reindex`"}
			for _, f := range bad {
				c.Items = append(c.Items, f.Path+": "+f.Error)
			}
			out = append(out, c)
		}
	}
	return out
}

// SyncChecks looks at the git side: the sync lock (held, and by whom),
// the remote (configured, answering) and the tailnet when the remote is
// the mesh. It may take a few seconds (it asks the remote).
func SyncChecks(ctx context.Context, s *Store) []Check {
	var out []Check
	gitDir := filepath.Join(s.memory.Root, ".git")
	if _, err := os.Stat(gitDir); err != nil {
		return []Check{{Name: "git", State: CheckWarn, Detail: "memory/ is not a git repository yet", Fix: "run `anamnesis init` or `anamnesis sync`"}}
	}
	if pid, held, err := gitsync.Holder(gitDir); err == nil {
		if held {
			out = append(out, Check{Name: "sync lock", State: CheckWarn, Detail: fmt.Sprintf("held by process %d (a sync is running)", pid),
				Fix: "wait for it; the lock is released when that process exits, even if it crashes"})
		} else {
			out = append(out, Check{Name: "sync lock", State: CheckOK, Detail: "free (a lock is released by the kernel when its holder dies, so it is never stale)"})
		}
	}
	if stale, err := gitsync.StaleGitLocks(gitDir, StaleGitLockAge); err != nil {
		out = append(out, Check{Name: "git lock files", State: CheckWarn, Detail: err.Error()})
	} else if len(stale) > 0 {
		out = append(out, Check{Name: "git lock files", State: CheckWarn,
			Detail: fmt.Sprintf("%d left by a killed git process; a hand `git` in memory/ fails until they go", len(stale)),
			Items:  stale, Fix: "run `anamnesis doctor --fix` (it removes only lock files older than two minutes)"})
	} else {
		out = append(out, Check{Name: "git lock files", State: CheckOK, Detail: "none left behind"})
	}
	remote := s.Remote()
	switch {
	case remote == "":
		out = append(out, Check{Name: "remote", State: CheckWarn, Detail: "none: notes stay on this machine",
			Fix: "set one with `anamnesis init --remote PATH-OR-URL` or ANAMNESIS_GIT_REMOTE"})
	case remote == "tailnet" || strings.HasPrefix(remote, "peers:") || strings.Contains(remote, ","):
		st := TailnetState(ctx)
		state := CheckOK
		if !strings.HasPrefix(st, "running") && remote == "tailnet" {
			state = CheckProblem
		}
		out = append(out, Check{Name: "remote", State: state, Detail: "mesh (" + remote + "); tailnet: " + st})
	default:
		r, err := s.repo()
		if err == nil {
			err = r.Reachable(ctx, remote, 10*time.Second)
		}
		if err != nil {
			out = append(out, Check{Name: "remote", State: CheckProblem, Detail: remote + " does not answer: " + err.Error(),
				Fix: "check the path or URL and your network; local notes stay committed meanwhile"})
		} else {
			out = append(out, Check{Name: "remote", State: CheckOK, Detail: remote + " answers"})
		}
	}
	return out
}

func writableCheck(name, dir string) Check {
	f, err := os.CreateTemp(dir, ".tmp-anamnesis-doctor-*")
	if err != nil {
		return Check{Name: name, State: CheckProblem, Detail: fmt.Sprintf("%s is not writable: %v", dir, err),
			Fix: "check the permissions and free space of " + dir}
	}
	f.Close()
	os.Remove(f.Name())
	return Check{Name: name, State: CheckOK, Detail: dir + " is writable"}
}

// StaleGitLockAge is how old a git lock file must be before doctor calls
// it stale: git holds one for milliseconds, so minutes leave a wide margin
// for a slow hand `git` still at work.
const StaleGitLockAge = 2 * time.Minute // doctor's fix text says "two minutes"

// FixStaleGitLocks removes git lock files in memory/.git older than
// StaleGitLockAge and returns their paths. It is what `doctor --fix` does.
func FixStaleGitLocks(ctx context.Context, s *Store) ([]string, error) {
	gitDir := filepath.Join(s.memory.Root, ".git")
	if _, err := os.Stat(gitDir); err != nil {
		return nil, nil
	}
	removed, err := gitsync.RemoveStaleGitLocks(ctx, gitDir, StaleGitLockAge)
	if err != nil {
		return removed, fmt.Errorf("clear stale git locks in %s: %w", gitDir, err)
	}
	return removed, nil
}

// FixIndex rebuilds the index from the note files when its search
// postings disagree with FTS5 (what the "search postings" check reports),
// and says whether it did. It is the other half of `doctor --fix`.
func FixIndex(ctx context.Context, s *Store) (bool, error) {
	rep, err := s.ix.CheckPostings(ctx)
	if err == nil && rep.Differ == 0 && rep.TotalOK {
		return false, nil
	}
	if _, err := s.Rebuild(ctx); err != nil {
		return false, fmt.Errorf("rebuild the index: %w", err)
	}
	return true, nil
}
