package githooks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// fakeBinary records every call's arguments and stdin, one line each.
func fakeBinary(t *testing.T) (bin, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "calls.log")
	bin = filepath.Join(dir, "anamnesis")
	os.WriteFile(bin, []byte("#!/bin/sh\nin=$(cat)\necho \"$* | $in\" >> '"+log+"'\nexit 3\n"), 0o755)
	return bin, log
}

func newRepo(t *testing.T) string {
	t.Setenv("HOME", t.TempDir()) // no global git config of the machine leaks in
	t.Setenv("XDG_CONFIG_HOME", "")
	dir := filepath.Join(t.TempDir(), "memory")
	testutil.Git(t, t.TempDir(), "init", "-b", "main", dir)
	return dir
}

func TestInstallRunsOnCommitAndChainsUserHook(t *testing.T) {
	repo := newRepo(t)
	bin, log := fakeBinary(t)
	userRan := filepath.Join(t.TempDir(), "user")
	os.WriteFile(filepath.Join(repo, ".git", "hooks", "post-commit"), []byte("#!/bin/sh\necho ran > '"+userRan+"'\n"), 0o755)
	states, err := Install(repo, bin, "/store/home")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 4 || !strings.HasSuffix(states[3].Chained, "post-commit.anamnesis-prev") {
		t.Fatalf("states %+v", states)
	}
	again, err := Install(repo, bin, "/store/home")
	if err != nil || len(again) != 4 {
		t.Fatalf("second install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-commit.anamnesis-prev.anamnesis-prev")); err == nil {
		t.Fatal("second install moved our own hook aside")
	}
	os.WriteFile(filepath.Join(repo, "a.md"), []byte("x"), 0o644)
	testutil.Git(t, repo, "add", "a.md")
	testutil.Git(t, repo, "commit", "-m", "first") // our hook exits 3 inside; git must not care
	calls, _ := os.ReadFile(log)
	if !strings.Contains(string(calls), "--home /store/home hook post-commit") {
		t.Errorf("hook did not call the binary: %q", calls)
	}
	if _, err := os.Stat(userRan); err != nil {
		t.Error("the user's post-commit did not run")
	}
	testutil.Git(t, repo, "commit", "--amend", "-m", "amended")
	calls, _ = os.ReadFile(log)
	if !strings.Contains(string(calls), "hook post-rewrite amend | ") {
		t.Errorf("post-rewrite not called with its args and stdin: %q", calls)
	}
	st, _ := Status(repo)
	for _, s := range st {
		if s.Status != "installed" {
			t.Errorf("status %+v", s)
		}
	}
	if _, err := Uninstall(repo); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(repo, ".git", "hooks", "post-commit"))
	if !strings.Contains(string(data), "echo ran") {
		t.Errorf("user hook not restored: %s", data)
	}
	for _, h := range []string{"post-merge", "post-checkout", "post-rewrite"} {
		if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", h)); err == nil {
			t.Errorf("%s left behind", h)
		}
	}
}

func TestInstallRefusesWhenPrevTaken(t *testing.T) {
	repo := newRepo(t)
	bin, _ := fakeBinary(t)
	hooks := filepath.Join(repo, ".git", "hooks")
	os.WriteFile(filepath.Join(hooks, "post-merge"), []byte("#!/bin/sh\necho mine\n"), 0o755)
	os.WriteFile(filepath.Join(hooks, "post-merge.anamnesis-prev"), []byte("#!/bin/sh\necho older\n"), 0o755)
	if _, err := Install(repo, bin, "/h"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("want a refusal, got %v", err)
	}
	for name, want := range map[string]string{"post-merge": "mine", "post-merge.anamnesis-prev": "older"} {
		if data, _ := os.ReadFile(filepath.Join(hooks, name)); !strings.Contains(string(data), want) {
			t.Errorf("%s changed: %s", name, data)
		}
	}
}

func TestRepoHooksPathIsHonoured(t *testing.T) {
	repo := newRepo(t)
	bin, log := fakeBinary(t)
	testutil.Git(t, repo, "config", "core.hooksPath", ".githooks")
	states, err := Install(repo, bin, "/h")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(states[0].Path, filepath.Join(repo, ".githooks")) {
		t.Fatalf("installed at %s", states[0].Path)
	}
	os.WriteFile(filepath.Join(repo, "a.md"), []byte("x"), 0o644)
	testutil.Git(t, repo, "add", "a.md")
	testutil.Git(t, repo, "commit", "-m", "c")
	if calls, _ := os.ReadFile(log); !strings.Contains(string(calls), "hook post-commit") {
		t.Error("hook in core.hooksPath did not run")
	}
}

func TestGlobalHooksPathGetsAPrivateDirThatChains(t *testing.T) {
	repo := newRepo(t)
	bin, log := fakeBinary(t)
	global := t.TempDir()
	globalRan := filepath.Join(t.TempDir(), "global-ran")
	os.WriteFile(filepath.Join(global, "post-commit"), []byte("#!/bin/sh\ntouch '"+globalRan+"'\n"), 0o755)
	os.WriteFile(filepath.Join(os.Getenv("HOME"), ".gitconfig"), []byte("[core]\n\thooksPath = "+global+"\n"), 0o644)
	states, err := Install(repo, bin, "/h")
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(states[0].Path, global) {
		t.Fatal("wrote into the shared global hooks directory")
	}
	if got := strings.TrimSpace(testutil.Git(t, repo, "config", "--local", "core.hooksPath")); got != filepath.Join(repo, ".git", localHooksDir) {
		t.Fatalf("local hooksPath %q", got)
	}
	os.WriteFile(filepath.Join(repo, "a.md"), []byte("x"), 0o644)
	testutil.Git(t, repo, "add", "a.md")
	testutil.Git(t, repo, "commit", "-m", "c")
	if calls, _ := os.ReadFile(log); !strings.Contains(string(calls), "hook post-commit") {
		t.Error("our hook did not run")
	}
	if _, err := os.Stat(globalRan); err != nil {
		t.Error("the global hook was not chained")
	}
	if _, err := Uninstall(repo); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--local", "core.hooksPath")
	cmd.Dir = repo
	if out, err := cmd.Output(); err == nil {
		t.Errorf("local hooksPath not removed: %s", out)
	}
}
