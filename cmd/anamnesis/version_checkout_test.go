//go:build release

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestVersionOfACheckoutBuild builds the binary from a git checkout of
// this source tree, as `make build` does, and checks that --version names
// the commit and the uncommitted change instead of "dev". It compiles
// every package again (the copy has other paths): build tag release, with
// TestReleaseAndInstallScript (make release-test).
func TestVersionOfACheckoutBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary again")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not inside a git checkout: %v", err)
	}
	files, err := exec.Command("git", "-C", strings.TrimSpace(string(root)), "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), f))
		if err != nil {
			continue // listed but deleted in the working tree
		}
		os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755)
		if err := os.WriteFile(filepath.Join(src, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, src, "init", "-q", "-b", "main")
	testutil.Git(t, src, "add", "-A")
	testutil.Git(t, src, "commit", "-q", "-m", "snapshot")
	rev := strings.TrimSpace(testutil.Git(t, src, "rev-parse", "HEAD"))
	os.WriteFile(filepath.Join(src, "scratch.txt"), []byte("uncommitted\n"), 0o644)

	bin := filepath.Join(t.TempDir(), "anamnesis")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/anamnesis")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=") // a -buildvcs=false there would hide the commit
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(out))
	if !strings.HasPrefix(got, "anamnesis version v0.0.0-") || !strings.HasSuffix(got, "(commit "+rev[:12]+", modified)") {
		t.Errorf("--version printed %q; want a pseudo-version and (commit %s, modified)", got, rev[:12])
	}
}
