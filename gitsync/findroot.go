package gitsync

import (
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
)

// Toplevel returns the work tree root of the git repository dir is in:
// dir or its nearest ancestor holding a .git directory or a .git file (a
// linked worktree, a submodule), as git looks; ok is false when dir is in
// no repository. A repository nested in another's work tree is its own
// root. It opens nothing, so a hook can ask it cheaply; it is the one
// answer to "which repository is this directory in" (project keys, file
// paths shown relative to the project, Claude Code's project folder), so
// they cannot disagree.
func Toplevel(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for d := dir; ; d = filepath.Dir(d) {
		// Stat, not Lstat: a .git symlink to a repository counts, as for
		// git; a dangling one does not.
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

// FindRoot returns [Toplevel] of dir and the first URL of its
// repository's origin remote ("" without one, or when the repository
// cannot be read); ok is false when dir is in no repository. The remote is
// read from the common directory, so a linked worktree has its main
// repository's origin (go-git alone reads the worktree's own config,
// which has none). It is here, not in its caller (claudecode's project
// key), so that go-git stays inside this package.
func FindRoot(dir string) (root, origin string, ok bool) {
	root, ok = Toplevel(dir)
	if !ok {
		return "", "", false
	}
	r, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return root, "", true
	}
	if rem, err := r.Remote("origin"); err == nil && len(rem.Config().URLs) > 0 {
		origin = rem.Config().URLs[0]
	}
	return root, origin, true
}
