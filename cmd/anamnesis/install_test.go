//go:build release

package main

import (
	"bytes"
	"debug/elf"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseAndInstallScript builds a release for this machine with
// scripts/release.sh (what make release runs), serves it over loopback
// HTTP, installs it with the install.sh the release carries into a
// directory whose path has a space, and runs the installed binary. A
// release whose binary was changed after SHA256SUMS was written is
// refused, with nothing installed.
func TestReleaseAndInstallScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("install.sh needs a POSIX shell")
	}
	for _, tool := range []string{"sh", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.0.0-installtest"
	const commit = "0123456789abcdef0123456789abcdef01234567"
	dist := t.TempDir()
	rel := exec.Command("sh", filepath.Join(root, "scripts", "release.sh"))
	rel.Env = append(os.Environ(), "VERSION="+version, "COMMIT="+commit, "BUILT=2026-01-02T03:04:05Z",
		"DIST="+dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := rel.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	name := "anamnesis_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(sums)), "\n"); len(lines) != 1 || !strings.HasSuffix(lines[0], "  "+name) {
		t.Fatalf("SHA256SUMS:\n%s\nwant one line for %s", sums, name)
	}
	if runtime.GOOS == "linux" {
		// CGO_ENABLED=0: no dynamic loader, so one file runs on any libc.
		f, err := elf.Open(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the release binary is dynamically linked")
			}
		}
		if f.Section(".symtab") != nil {
			t.Error("the release binary has a symbol table (-s missing)")
		}
		f.Close()
	}
	wantVersion := "anamnesis version " + version + " (commit 0123456789ab, built 2026-01-02T03:04:05Z)"

	install := func(t *testing.T, base, dir string, env ...string) (string, error) {
		cmd := exec.Command("sh", filepath.Join(dist, "install.sh"), "-b", base)
		if dir != "" {
			cmd.Args = append(cmd.Args, "-d", dir)
		}
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	t.Run("http", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "my bin")
		out, err := install(t, srv.URL, dir)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		if !strings.Contains(out, "installed "+wantVersion) {
			t.Errorf("install.sh said:\n%s\nwant it to name %q", out, wantVersion)
		}
		got, err := exec.Command(filepath.Join(dir, "anamnesis"), "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(got)) != wantVersion {
			t.Errorf("installed --version = %q, want %q", got, wantVersion)
		}
	})
	t.Run("directory and environment", func(t *testing.T) {
		dir := t.TempDir()
		out, err := install(t, dist, "", "ANAMNESIS_INSTALL_DIR="+dir)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "anamnesis")); err != nil {
			t.Errorf("ANAMNESIS_INSTALL_DIR not used: %v\n%s", err, out)
		}
	})
	t.Run("corrupt binary refused", func(t *testing.T) {
		bad := t.TempDir()
		for _, f := range []string{"SHA256SUMS", name} {
			data, err := os.ReadFile(filepath.Join(dist, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == name {
				data[len(data)/2] ^= 0xff
			}
			if err := os.WriteFile(filepath.Join(bad, f), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		badSrv := httptest.NewServer(http.FileServer(http.Dir(bad)))
		defer badSrv.Close()
		dir := t.TempDir()
		out, err := install(t, badSrv.URL, dir)
		if err == nil || !strings.Contains(out, "checksum mismatch") {
			t.Errorf("install.sh of a changed binary: %v\n%s\nwant a checksum mismatch", err, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a refused install left %d files in %s", len(entries), dir)
		}
	})
	t.Run("no binary for this platform", func(t *testing.T) {
		other := t.TempDir()
		sum := bytes.Replace(sums, []byte("_"+runtime.GOOS+"_"), []byte("_plan9_"), 1)
		os.WriteFile(filepath.Join(other, "SHA256SUMS"), sum, 0o644)
		out, err := install(t, other, t.TempDir())
		if err == nil || !strings.Contains(out, "has no binary for "+runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("install.sh without our platform: %v\n%s", err, out)
		}
	})
}
