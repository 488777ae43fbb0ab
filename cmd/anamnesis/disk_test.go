package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %v not permitted here (%v: %s); run as root to test this fault", args, err, out)
	}
}

func umount(dir string) { exec.Command("umount", "-l", dir).Run() }

// TestFullDisk: a home on a tiny tmpfs fills up. Every write either
// succeeds or fails with one clear line; no partial note is left; after
// space is freed the next write works and the index agrees with the files.
func TestFullDisk(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(home, 0o755)
	mount(t, "-t", "tmpfs", "-o", "size=1m", "tmpfs", home)
	defer umount(home)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "first", "--body", "fits"))
	body := strings.Repeat("filler text that eats the disk\n", 3000) // ~90 KB per note
	var failed result
	for i := 0; i < 40; i++ {
		// Distinct titles: write returns a note it would repeat instead of writing it again.
		r := anm(t, home, body, "write", "--type", "semantic", "--title", fmt.Sprintf("filler %d", i), "--body-file", "-")
		if r.code != 0 {
			failed = r
			break
		}
	}
	if failed.code == 0 {
		t.Fatal("the disk never filled up")
	}
	if strings.Count(strings.TrimSpace(failed.stderr), "\n") != 0 || !(strings.Contains(failed.stderr, "space") || strings.Contains(failed.stderr, "full")) {
		t.Errorf("full disk should be one clear line, got %q", failed.stderr)
	}
	// Free space: delete filler notes by hand, then everything recovers.
	matches, _ := filepath.Glob(filepath.Join(home, "memory", "semantic", "*.md"))
	for _, m := range matches {
		if data, _ := os.ReadFile(m); strings.Contains(string(data), "filler text") {
			os.Remove(m)
		}
	}
	os.RemoveAll(filepath.Join(home, "memory", ".git"))
	mustOK(t, anm(t, home, "", "reindex"))
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "after", "--body", "recovered"))
	r := mustOK(t, anm(t, home, "", "reindex", "--json"))
	if !strings.Contains(r.stdout, `"indexed": 2`) || !strings.Contains(r.stdout, `"skipped": []`) {
		t.Errorf("after recovery: %s", r.stdout)
	}
}

// TestReadOnlyMemory: memory/ mounted read-only. A portable write fails
// with a clear error and leaves nothing; machine-local notes, search and
// status still work; once writable again, writes and sync work.
func TestReadOnlyMemory(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	mustOK(t, anmRemote(t, home, "box", hub, "", "write", "--type", "semantic", "--title", "before", "--body", "heron"))
	mem := filepath.Join(home, "memory")
	mount(t, "--bind", mem, mem)
	defer umount(mem)
	mount(t, "-o", "remount,ro,bind", mem)
	r := anmRemote(t, home, "box", hub, "", "write", "--type", "semantic", "--title", "blocked", "--body", "x")
	if r.code != 1 || !strings.Contains(r.stderr, "read-only") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("portable write on a read-only memory/: exit %d %q", r.code, r.stderr)
	}
	mustOK(t, anmRemote(t, home, "box", hub, "", "write", "--type", "semantic", "--scope", "machine-local", "--title", "local still works", "--body", "x"))
	if r := mustOK(t, anmRemote(t, home, "box", hub, "", "search", "heron")); !strings.Contains(r.stdout, "before") {
		t.Error("search broke")
	}
	mustOK(t, anmRemote(t, home, "box", hub, "", "status"))
	if r := anmRemote(t, home, "box", hub, "", "sync"); r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("sync on a read-only memory/: exit %d %q", r.code, r.stderr)
	}
	umount(mem)
	mustOK(t, anmRemote(t, home, "box", hub, "", "write", "--type", "semantic", "--title", "after", "--body", "writable again"))
	mustOK(t, anmRemote(t, home, "box", hub, "", "sync"))
	if n := strings.Count(testutil.Git(t, hub, "ls-tree", "-r", "--name-only", "main"), ".md"); n != 2 {
		t.Errorf("hub has %d notes, want 2", n)
	}
}

func TestMissingLocalTreeIsRecreated(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--scope", "machine-local", "--title", "gpu", "--body", "x"))
	os.RemoveAll(filepath.Join(home, "local"))
	r := mustOK(t, anm(t, home, "", "reindex", "--json"))
	if !strings.Contains(r.stdout, `"deleted": 1`) {
		t.Errorf("reindex after local/ vanished: %s", r.stdout)
	}
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--scope", "machine-local", "--title", "again", "--body", "y"))
}

func TestHostileInputs(t *testing.T) {
	home := t.TempDir()
	// (one argument is limited to 128 KiB by the kernel; the Store test checks 1 MB)
	r := anm(t, home, "", "write", "--type", "semantic", "--title", strings.Repeat("t", 100000), "--body", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "title is 100000 characters") {
		t.Errorf("huge title: exit %d %q", r.code, r.stderr)
	}
	// A remote whose git-upload-pack answers garbage: one clear line, the note stays committed.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "git-upload-pack"), []byte("#!/bin/sh\nhead -c 2000 /dev/urandom\n"), 0o755)
	cmd := exec.Command(binary, "sync", "--timeout", "5s")
	cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_GIT_REMOTE="+testutil.BareHub(t), "PATH="+dir+":"+os.Getenv("PATH"))
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "kept", "--body", "safe"))
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "local notes are committed") {
		t.Errorf("garbage remote: %v %q", err, out)
	}
	if log := testutil.Git(t, filepath.Join(home, "memory"), "log", "--oneline"); !strings.Contains(log, "sync from") {
		t.Error("note not committed")
	}
}
