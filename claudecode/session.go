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

type sessionState struct {
	Injected []string `json:"injected"`
}

func injected(dir, session string) (map[string]bool, error) {
	out := map[string]bool{}
	if session == "" {
		return out, nil
	}
	data, err := os.ReadFile(sessionFile(dir, session))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read session state: %w", err)
	}
	var st sessionState
	if json.Unmarshal(data, &st) != nil {
		return out, nil // a damaged state file only means notes may repeat
	}
	for _, id := range st.Injected {
		out[id] = true
	}
	return out, nil
}

func rememberInjected(dir, session string, ids []string) error {
	seen, err := injected(dir, session)
	if err != nil {
		return err
	}
	st := sessionState{}
	for id := range seen {
		st.Injected = append(st.Injected, id)
	}
	for _, id := range ids {
		if !seen[id] {
			st.Injected = append(st.Injected, id)
		}
	}
	data, _ := json.Marshal(st)
	if err := logfile.PrivateDir(dir); err != nil {
		return err
	}
	// A cache of what this session was shown: losing it in a crash only
	// means a note may be shown twice, so no fsync on the hook's path.
	if err := note.ReplaceFile(sessionFile(dir, session), data); err != nil {
		return fmt.Errorf("write session state: %w", err)
	}
	pruneState(filepath.Join(dir, "sessions"))
	return nil
}

// pruneState removes session state of sessions long over; best effort.
func pruneState(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) < 64 {
		return
	}
	cutoff := time.Now().Add(-stateTTL)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
