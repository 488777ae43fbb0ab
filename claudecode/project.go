package claudecode

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/anamnesis-memory/anamnesis/gitsync"
)

// ProjectKey names the project a working directory belongs to, the way
// the Python tool does so that both write the same key: a
// .anamnesis/project marker in the directory or an ancestor (not $HOME or
// above), else the normalized origin URL (scp, ssh and https forms of one
// repository are equal), else the repository root's name, else the
// directory's name; lower-cased. home is the user's home directory.
func ProjectKey(cwd, home string) string {
	if cwd == "" {
		return "global"
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if key := markerKey(cwd, home); key != "" {
		return key
	}
	if root, origin, ok := gitsync.FindRoot(cwd); ok {
		if origin != "" {
			return NormalizeRemote(origin)
		}
		if root != "" {
			return strings.ToLower(filepath.Base(root))
		}
	}
	name := strings.ToLower(filepath.Base(cwd))
	if name == "" || name == "/" || name == "." {
		return "global"
	}
	return name
}

func markerKey(cwd, home string) string {
	home = filepath.Clean(home)
	for d := cwd; ; d = filepath.Dir(d) {
		if d == home || d == filepath.Dir(d) {
			return ""
		}
		data, err := os.ReadFile(filepath.Join(d, ".anamnesis", "project"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if l := strings.TrimSpace(line); l != "" {
					return l
				}
			}
		}
	}
}

var (
	schemeRe = lazyRegexp(`^\w+://`)
	userRe   = lazyRegexp(`^[^@/]+@`)
)

// NormalizeRemote reduces a git URL to host/path, lower-cased, without
// scheme, user, ".git" or trailing slash, exactly as the Python tool does.
func NormalizeRemote(u string) string {
	u = strings.TrimSpace(u)
	u = schemeRe().ReplaceAllString(u, "")
	u = userRe().ReplaceAllString(u, "")
	if i := strings.Index(u, ":"); i >= 0 && !strings.Contains(u[:i], "/") {
		u = u[:i] + "/" + u[i+1:]
	}
	u = strings.TrimSuffix(u, ".git")
	u = strings.TrimRight(u, "/")
	return strings.ToLower(u)
}
