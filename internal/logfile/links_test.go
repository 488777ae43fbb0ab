package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// TestLinksInTheStateDirectoryAreRefused: state/ as a link to a directory
// outside, or a log as a link to a user's file: PrivateDir, OpenLog and
// AppendLog refuse, and nothing is written where the links point. The
// home (state/'s parent) may be a link.
func TestLinksInTheStateDirectoryAreRefused(t *testing.T) {
	base := t.TempDir()
	realHome := filepath.Join(base, "disk")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(realHome, 0o755)
	os.MkdirAll(outside, 0o755)
	home := filepath.Join(base, "home")
	if err := os.Symlink(realHome, home); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	state := filepath.Join(home, "state")
	if err := PrivateDir(state); err != nil {
		t.Fatalf("state directory in a home that is a link: %v", err)
	}
	if err := AppendLog(filepath.Join(state, "sync.log"), []byte("ok\n"), MaxLogSize); err != nil {
		t.Fatal(err)
	}

	// A log that is a link to the user's file.
	mine := filepath.Join(outside, "bashrc")
	os.WriteFile(mine, []byte("mine"), 0o644)
	logPath := filepath.Join(state, "reindex.log")
	if err := os.Symlink(mine, logPath); err != nil {
		t.Fatal(err)
	}
	if err := AppendLog(logPath, []byte("theirs\n"), MaxLogSize); !errors.Is(err, platform.ErrLink) {
		t.Errorf("AppendLog to a linked log: %v", err)
	}
	if f, err := OpenLog(logPath); !errors.Is(err, platform.ErrLink) {
		f.Close()
		t.Errorf("OpenLog of a linked log: %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Errorf("the linked file changed: %q", b)
	}

	// state/ itself a link.
	os.RemoveAll(state)
	if err := os.Symlink(outside, state); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(state); !errors.Is(err, platform.ErrLink) {
		t.Errorf("PrivateDir of a linked state directory: %v", err)
	}
	if err := AppendLog(filepath.Join(state, "sync.log"), []byte("x\n"), MaxLogSize); !errors.Is(err, platform.ErrLink) {
		t.Errorf("AppendLog in a linked state directory: %v", err)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() == 0o700 {
		t.Error("PrivateDir changed the mode of the directory the link points to")
	}
	if es, _ := os.ReadDir(outside); len(es) != 1 {
		t.Errorf("where the link points: %v", es)
	}
}
