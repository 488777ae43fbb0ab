//go:build !linux && !darwin

package gitsync

import "path/filepath"

// worktreeStatter is statFile for many paths below one root; here each
// path is joined to the root.
type worktreeStatter struct{ root string }

func openStatter(root string) (*worktreeStatter, error) { return &worktreeStatter{root: root}, nil }

func (s *worktreeStatter) close() {}

// stat is statFile of rel (forward slashes, below the root).
func (s *worktreeStatter) stat(rel string) (worktreeFile, error) {
	return statFile(filepath.Join(s.root, filepath.FromSlash(rel)))
}
