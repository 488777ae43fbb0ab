package claudecode

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// TestSessionStateRefusesLinks: with state/sessions a link to a directory
// outside the store, saving a session's state is refused and pruning
// neither deletes old files there nor touches its marker; state/ as a
// link is refused the same way.
func TestSessionStateRefusesLinks(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	outside := t.TempDir()
	old := filepath.Join(outside, "old-photo.jpg")
	os.WriteFile(old, []byte("x"), 0o644)
	then := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(old, then, then)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "sessions")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	if err := saveState(state, "s1", sessionState{Injected: []string{"x"}}); !errors.Is(err, platform.ErrLink) {
		t.Errorf("save through a linked sessions directory: %v", err)
	}
	pruneState(state, time.Now())
	if es, _ := os.ReadDir(outside); len(es) != 1 || es[0].Name() != "old-photo.jpg" {
		t.Errorf("where the link points: %v", es)
	}

	os.RemoveAll(state)
	if err := os.Symlink(outside, state); err != nil {
		t.Fatal(err)
	}
	if err := saveState(state, "s1", sessionState{Injected: []string{"x"}}); !errors.Is(err, platform.ErrLink) {
		t.Errorf("save through a linked state directory: %v", err)
	}
	pruneState(state, time.Now())
	if es, _ := os.ReadDir(outside); len(es) != 1 {
		t.Errorf("where the link points: %v", es)
	}
}
