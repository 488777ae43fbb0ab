package gitsync

import (
	"path/filepath"

	"github.com/go-git/go-git/v5"
)

// FindRoot returns the work tree root of the git repository dir is in
// (dir or the nearest ancestor with a .git, as git itself looks) and the
// first URL of its origin remote ("" without one); ok is false when dir is
// in no repository. It is here, not in its caller (claudecode's project
// key), so that go-git stays inside this package.
func FindRoot(dir string) (root, origin string, ok bool) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", "", false
	}
	if rem, err := r.Remote("origin"); err == nil && len(rem.Config().URLs) > 0 {
		origin = rem.Config().URLs[0]
	}
	wt, err := r.Worktree()
	if err != nil {
		// A bare repository: no work tree, but still a repository (the
		// caller keys by its origin).
		return "", origin, true
	}
	return filepath.Clean(wt.Filesystem.Root()), origin, true
}
