package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

func TestVersionString(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		ldflags stamp
		bi      *debug.BuildInfo
		want    string
	}{
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"}, // go install …@v1.2.3
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}, Settings: vcs},
			"v0.0.0-20260101000000-0123456789ab+dirty (commit 0123456789ab, modified)"},
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:1]}, "devel (commit 0123456789ab)"},
		{stamp{version: "v9.9.9"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "v9.9.9 (commit 0123456789ab, modified)"}, // -ldflags wins
		{stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (no version or commit recorded in this build)"},
		{stamp{version: "dev"}, nil, "devel (no version or commit recorded in this build)"},
		// make release: everything stamped, whatever the go command recorded.
		{stamp{"v0.3.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-24"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"v0.3.0 (commit fedcba987654, built 2026-11-24)"},
		{stamp{"v0.3.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-24"}, nil, "v0.3.0 (commit fedcba987654, built 2026-11-24)"},
	} {
		if got := versionString(c.ldflags, c.bi); got != c.want {
			t.Errorf("versionString(%+v, %+v) = %q, want %q", c.ldflags, c.bi, got, c.want)
		}
	}
}

// TestVersionOfACheckoutBuild builds the binary from a git checkout of
// this source tree, as `make build` does, and checks that --version names
// the commit and the uncommitted change instead of "dev".
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
