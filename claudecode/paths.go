package claudecode

import (
	"os"
	"path/filepath"
	"strings"
)

// projectRoot is the directory a session's file paths are shown relative
// to: the git top-level of cwd, found by walking up to the nearest
// directory holding a .git directory or file (a worktree or submodule),
// without running git; else cwd itself. "" for an empty cwd.
func projectRoot(cwd string) string {
	if cwd == "" {
		return ""
	}
	cwd = filepath.Clean(cwd)
	for d := cwd; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return cwd
		}
	}
}

// displayPath shows a touched file so that it means something on the
// user's other machines: relative to root (slash-separated) when inside
// it, else as it is with the home directory written "~". A path that is
// already relative is kept.
func displayPath(p, root, home string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	p = filepath.Clean(p)
	if rel, ok := within(p, root); ok {
		return filepath.ToSlash(rel)
	}
	if rel, ok := within(p, home); ok && filepath.Clean(home) != string(filepath.Separator) {
		return "~/" + filepath.ToSlash(rel)
	}
	return p
}

// within returns p relative to dir when p is strictly inside dir.
func within(p, dir string) (string, bool) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}
