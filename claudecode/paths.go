package claudecode

import (
	"path/filepath"
	"strings"

	"github.com/anamnesis-memory/anamnesis/gitsync"
)

// projectRoot is the directory a session's file paths are shown relative
// to: the git top-level of cwd ([gitsync.Toplevel], which runs no git and
// opens nothing), else cwd itself. "" for an empty cwd.
func projectRoot(cwd string) string {
	if cwd == "" {
		return ""
	}
	if root, ok := gitsync.Toplevel(cwd); ok {
		return root
	}
	return filepath.Clean(cwd)
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
