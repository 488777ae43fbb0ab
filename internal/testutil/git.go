package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gitEnv gives the git CLI a fixed identity and never a prompt: tests run
// without a user's git configuration to lean on.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
	"GIT_TERMINAL_PROMPT=0",
}

// Git runs the git CLI in dir and returns its combined output, failing
// the test with that output if git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := TryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return out
}

// TryGit runs the git CLI in dir and returns its combined output and
// error, for tests that expect git to fail.
func TryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// BareHub creates an empty bare repository with branch main, as a user
// makes a hub on an always-on box (`git init --bare -b main`), and
// returns its path.
func BareHub(t testing.TB) string {
	t.Helper()
	hub := filepath.Join(t.TempDir(), "hub.git")
	Git(t, t.TempDir(), "init", "--bare", "-b", "main", hub)
	return hub
}
