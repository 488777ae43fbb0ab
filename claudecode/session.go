package claudecode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/logfile"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/note"
)

// stateTTL: per-session state older than this is removed.
const stateTTL = 14 * 24 * time.Hour

// sessionFile keeps per-session state outside memory/ (it is machine
// local); the session id is hashed so it can never name a path.
func sessionFile(dir, session string) string {
	sum := sha256.Sum256([]byte(session))
	return filepath.Join(dir, "sessions", hex.EncodeToString(sum[:12])+".json")
}

// sessionState is what one session has been shown, and when it started
// (notes that arrive after that are shown with the next prompt).
type sessionState struct {
	Injected []string `json:"injected"`
	Started  int64    `json:"started_ns,omitempty"` // unix nanoseconds
	// Checked is when the last prompt looked for notes that arrived from
	// other machines (unix nanoseconds): each arrival, a new note or a new
	// version of one, is shown once.
	Checked int64 `json:"checked_ns,omitempty"`
}

// loadState reads a session's state; none (or a damaged file, which only
// means notes may repeat) is an empty state.
func loadState(dir, session string) (sessionState, error) {
	var st sessionState
	if session == "" {
		return st, nil
	}
	data, err := os.ReadFile(sessionFile(dir, session))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read session state: %w", err)
	}
	if json.Unmarshal(data, &st) != nil {
		return sessionState{}, nil
	}
	return st, nil
}

// seen is the set of notes the session was shown.
func (st sessionState) seen() map[string]bool {
	out := make(map[string]bool, len(st.Injected))
	for _, id := range st.Injected {
		out[id] = true
	}
	return out
}

// add records ids as shown.
func (st *sessionState) add(ids []string) {
	seen := st.seen()
	for _, id := range ids {
		if !seen[id] {
			st.Injected = append(st.Injected, id)
			seen[id] = true
		}
	}
}

// saveState writes a session's state. A cache of what the session was
// shown: losing it in a crash only means a note may be shown twice, so no
// fsync on the hook's path.
func saveState(dir, session string, st sessionState) error {
	if session == "" {
		return nil
	}
	data, _ := json.Marshal(st)
	if err := logfile.PrivateDir(dir); err != nil {
		return err
	}
	// The state directory's parent (the store's home) may be a link;
	// state/, sessions/ and the file may not (a link planted there would
	// take each prompt's write elsewhere).
	if err := note.ReplaceFileIn(filepath.Dir(dir), sessionFile(dir, session), data); err != nil {
		return fmt.Errorf("write session state: %w", err)
	}
	return nil
}

// pruneMarker is touched in the sessions directory by each pruning.
const pruneMarker = ".pruned"

// pruneState removes the state of sessions over for stateTTL; best
// effort. It runs when a session ends, at most once a day: each run
// reads the state of every session of the last two weeks (hundreds of
// files for a busy user), which a hook should not do every time.
func pruneState(stateDir string, now time.Time) {
	if stateDir == "" {
		return
	}
	dir := filepath.Join(stateDir, "sessions")
	marker := filepath.Join(dir, pruneMarker)
	// Through a linked state/ or sessions/, pruning would delete every
	// older file wherever the link points, and touching the marker would
	// truncate what a linked marker points to.
	if platform.CheckBeneath(filepath.Dir(stateDir), marker) != nil {
		return
	}
	if fi, err := os.Stat(marker); err == nil && now.Sub(fi.ModTime()) < 24*time.Hour {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cutoff := now.Add(-stateTTL)
	for _, e := range entries {
		if e.Name() == pruneMarker {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if f, err := os.Create(marker); err == nil {
		f.Close()
	}
}
