package githooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/anamnesis-memory/anamnesis/internal/shellquote"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Names returns the hooks installed: together they cover merge and
// fast-forward pulls, checkouts, rebases and amends, and the commit that
// resolves a conflicted pull (which fires no post-merge). The slice is
// fresh on each call, so no caller can change what is installed.
func Names() []string {
	return []string{"post-merge", "post-checkout", "post-rewrite", "post-commit"}
}

// Marker identifies a hook script written by anamnesis.
const Marker = "# anamnesis-hook v1"

const prevSuffix = ".anamnesis-prev"

// localHooksDir is used when core.hooksPath points outside the repository
// (a global hooks directory shared by every repo): we do not write there,
// but give memory/ its own directory whose scripts chain to the shared ones.
const localHooksDir = "anamnesis-hooks"

// Plan says where hooks go for one repository.
type Plan struct {
	Dir string // directory the scripts are written to
	// Chain is a directory whose same-named hooks run after ours (the
	// global core.hooksPath), or "" to chain <hook>.anamnesis-prev.
	Chain string
	// SetLocalHooksPath means Dir must become the repository's own
	// core.hooksPath.
	SetLocalHooksPath bool
}

// Where decides the hooks directory of the repository at repoDir: the
// repository's own core.hooksPath if it sets one, a private directory
// chaining to a global core.hooksPath if only that is set, else .git/hooks.
func Where(repoDir string) (Plan, error) {
	r, err := git.PlainOpen(repoDir)
	if err != nil {
		return Plan{}, fmt.Errorf("open git repository %s: %w", repoDir, err)
	}
	gitDir := filepath.Join(repoDir, ".git")
	local, err := r.Config()
	if err != nil {
		return Plan{}, fmt.Errorf("read git config of %s: %w", repoDir, err)
	}
	if p := local.Raw.Section("core").Option("hooksPath"); p != "" {
		return Plan{Dir: resolve(repoDir, p)}, nil
	}
	// Each scope's own file: go-git's ConfigScoped merges typed fields
	// only, and hooksPath is not one of them.
	for _, scope := range []config.Scope{config.GlobalScope, config.SystemScope} {
		c, err := config.LoadConfig(scope)
		if err != nil {
			continue // an unreadable global config must not stop the install
		}
		if p := c.Raw.Section("core").Option("hooksPath"); p != "" {
			return Plan{Dir: filepath.Join(gitDir, localHooksDir), Chain: resolve(repoDir, p), SetLocalHooksPath: true}, nil
		}
	}
	return Plan{Dir: filepath.Join(gitDir, "hooks")}, nil
}

func resolve(repoDir, p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(repoDir, p)
	}
	return p
}

// script is the hook body. It reads post-rewrite's stdin once so the
// chained hook still gets it, ignores every failure of ours, and exits
// with the chained hook's status only (post-* hooks cannot fail git
// anyway, but a user's hook keeps its behaviour).
func script(hook, binary, home, chain string) string {
	prev := `"${0%/*}/` + hook + prevSuffix + `"`
	if chain != "" {
		prev = shellquote.Quote(filepath.Join(chain, hook))
	}
	return `#!/bin/sh
` + Marker + ` (managed by anamnesis; ` + "`anamnesis hooks uninstall`" + ` removes it)
hook=` + hook + `
prev=` + prev + `
if [ "$hook" = post-rewrite ]; then input=$(cat); fi
bin=` + shellquote.Quote(binary) + `
[ -x "$bin" ] || bin=$(command -v anamnesis 2>/dev/null) || bin=
if [ -n "$bin" ]; then
  printf '%s' "${input-}" | "$bin" --home ` + shellquote.Quote(home) + ` hook "$hook" "$@" >/dev/null 2>&1 || :
fi
if [ -x "$prev" ]; then
  if [ "$hook" = post-rewrite ]; then printf '%s\n' "$input" | "$prev" "$@"; else "$prev" "$@"; fi
  exit $?
fi
exit 0
`
}

// State of one hook.
type State struct {
	Hook    string `json:"hook"`
	Path    string `json:"path"`
	Status  string `json:"status"` // installed, missing, foreign, outdated
	Chained string `json:"chained,omitempty"`
}

func isOurs(path string) (bool, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return strings.Contains(string(data), Marker), true, nil
}

// Install writes the hooks for the repository at repoDir. binary is the
// anamnesis executable the hooks call and home the store they reconcile.
// A foreign hook is moved to <hook>.anamnesis-prev and chained; if that
// name is taken too, Install refuses rather than overwrite either.
// Running it again changes nothing.
func Install(repoDir, binary, home string) ([]State, error) {
	plan, err := Where(repoDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(plan.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create hooks directory %s: %w", plan.Dir, err)
	}
	out, err := plan.each(func(h hook) (State, error) {
		p := h.path
		if h.exists && !h.ours {
			prev := p + prevSuffix
			if _, err := os.Lstat(prev); err == nil {
				return State{}, fmt.Errorf("%s is not ours and %s already exists; move one of them away and run `anamnesis hooks install` again", p, prev)
			}
			if err := os.Rename(p, prev); err != nil {
				return State{}, fmt.Errorf("keep existing hook %s as %s: %w", p, prev, err)
			}
		}
		if err := writeExecutable(p, script(h.name, binary, home, plan.Chain)); err != nil {
			return State{}, err
		}
		return State{Hook: h.name, Path: p, Status: "installed", Chained: plan.chained(h)}, nil
	})
	if err != nil {
		return out, err
	}
	if plan.SetLocalHooksPath {
		if err := setLocalHooksPath(repoDir, plan.Dir); err != nil {
			return out, err
		}
	}
	return out, nil
}

func writeExecutable(p, content string) error {
	if err := note.WriteFileAtomic(p, []byte(content)); err != nil {
		return err
	}
	if err := os.Chmod(p, 0o755); err != nil {
		return fmt.Errorf("make %s executable: %w", p, err)
	}
	return nil
}

func setLocalHooksPath(repoDir, dir string) error {
	r, err := git.PlainOpen(repoDir)
	if err != nil {
		return fmt.Errorf("open git repository %s: %w", repoDir, err)
	}
	cfg, err := r.Config()
	if err != nil {
		return fmt.Errorf("read git config of %s: %w", repoDir, err)
	}
	if dir == "" {
		cfg.Raw.Section("core").RemoveOption("hooksPath")
	} else {
		cfg.Raw.Section("core").SetOption("hooksPath", dir)
	}
	data, err := cfg.Marshal()
	if err != nil {
		return fmt.Errorf("encode git config of %s: %w", repoDir, err)
	}
	// Atomically: a sync or the git CLI may be reading it.
	if err := note.WriteFileAtomic(filepath.Join(repoDir, ".git", "config"), data); err != nil {
		return fmt.Errorf("write git config of %s: %w", repoDir, err)
	}
	return nil
}

// Uninstall removes our hooks and puts back any hook they had replaced.
func Uninstall(repoDir string) ([]State, error) {
	plan, err := Where(repoDir)
	if err != nil {
		return nil, err
	}
	out, err := plan.each(func(h hook) (State, error) {
		p := h.path
		st := State{Hook: h.name, Path: p, Status: "missing"}
		if h.exists && !h.ours {
			st.Status = "foreign"
			return st, nil
		}
		if h.ours {
			if err := os.Remove(p); err != nil {
				return State{}, fmt.Errorf("remove %s: %w", p, err)
			}
		}
		if _, err := os.Lstat(p + prevSuffix); err == nil {
			if err := os.Rename(p+prevSuffix, p); err != nil {
				return State{}, fmt.Errorf("restore %s: %w", p, err)
			}
			st.Status = "restored"
		}
		return st, nil
	})
	if err != nil {
		return out, err
	}
	if filepath.Base(plan.Dir) == localHooksDir {
		if err := setLocalHooksPath(repoDir, ""); err != nil {
			return out, err
		}
		os.Remove(plan.Dir) // only if empty
	}
	return out, nil
}

// Status reports each hook's state.
func Status(repoDir string) ([]State, error) {
	plan, err := Where(repoDir)
	if err != nil {
		return nil, err
	}
	return plan.each(func(h hook) (State, error) {
		st := State{Hook: h.name, Path: h.path, Status: "missing", Chained: plan.chained(h)}
		switch {
		case h.ours:
			st.Status = "installed"
			if fi, err := os.Stat(h.path); err == nil && fi.Mode()&0o111 == 0 {
				st.Status = "not executable"
			}
		case h.exists:
			st.Status = "foreign"
		}
		return st, nil
	})
}

// hook is one of Names in a plan's directory, as found there.
type hook struct {
	name, path   string
	ours, exists bool // the file is there, and written by anamnesis
}

// each reads each of Names in plan.Dir and collects the State do makes
// of it: Install, Uninstall and Status share this walk and differ only
// in do. On an error the states so far are returned with it, so a
// caller can say which hooks were already changed.
func (plan Plan) each(do func(hook) (State, error)) ([]State, error) {
	var out []State
	for _, name := range Names() {
		p := filepath.Join(plan.Dir, name)
		ours, exists, err := isOurs(p)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", p, err)
		}
		st, err := do(hook{name: name, path: p, ours: ours, exists: exists})
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, nil
}

// chained is the hook our script for h runs after: the same-named hook
// of plan.Chain, else the foreign hook Install moved aside, else "".
func (plan Plan) chained(h hook) string {
	if plan.Chain != "" {
		return filepath.Join(plan.Chain, h.name)
	}
	if _, err := os.Stat(h.path + prevSuffix); err == nil {
		return h.path + prevSuffix
	}
	return ""
}
