package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The state of sessions over for two weeks is removed when a session
// ends, at most once a day: prompts never list the directory, and a
// second session the same day does not stat hundreds of files again.
func TestSessionStatePrunedOnceADay(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	var old []string
	for i := range 3 {
		old = append(old, write(fmt.Sprintf("old%d.json", i), stateTTL+time.Hour))
	}
	fresh := write("fresh.json", stateTTL-time.Hour)

	// A prompt saves its state without pruning.
	if err := saveState(state, "s1", sessionState{}); err != nil {
		t.Fatal(err)
	}
	if !exists(old[0]) {
		t.Fatal("saving a session's state pruned old sessions")
	}
	pruneState(state, now)
	for _, p := range old {
		if exists(p) {
			t.Errorf("%s is older than %v and was kept", p, stateTTL)
		}
	}
	if !exists(fresh) || !exists(sessionFile(state, "s1")) {
		t.Error("a session of the last two weeks lost its state")
	}

	// Within a day nothing is listed again; a day later it is.
	late := write("late.json", stateTTL+time.Hour)
	pruneState(state, now.Add(time.Hour))
	if !exists(late) {
		t.Error("pruned twice within a day")
	}
	pruneState(state, now.Add(25*time.Hour))
	if exists(late) {
		t.Error("not pruned again a day later")
	}
	pruneState("", now) // no state directory: nothing to do, nothing touched
}
