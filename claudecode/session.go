package claudecode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
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
	// Shown keeps, for each note the session was shown, its title then
	// and where: a later arrival that replaces, edits or settles it can
	// name what it makes out of date.
	Shown map[string]shownNote `json:"shown,omitempty"`
}

// shownNote is what a session was shown of one note.
type shownNote struct {
	Title string `json:"t"`
	// Prompt: shown by a prompt, not at session start.
	Prompt bool `json:"p,omitempty"`
	// Conflict: shown with a conflict copy beside it (neither settled).
	Conflict bool `json:"c,omitempty"`
}

// where says when a note was shown, for a remark on its replacement.
func (n shownNote) where() string {
	if n.Prompt {
		return "earlier in this session"
	}
	return "at session start"
}

// remarks says, for each arrival that replaces, edits or settles a note
// the session was shown, what it makes out of date: without it the model
// holds both versions and cannot tell which is current.
func (st sessionState) remarks(arrived []index.Hit) map[string]string {
	out := map[string]string{}
	copied := map[string]bool{} // notes that still have a conflict copy
	for _, h := range arrived {
		if of, ok := h.ConflictCopyOf(); ok {
			copied[of] = true
		}
	}
	for _, h := range arrived {
		if _, ok := h.ConflictCopyOf(); ok {
			continue
		}
		var parts []string
		for _, old := range h.Supersedes {
			if n, ok := st.Shown[old]; ok {
				parts = append(parts, fmt.Sprintf("Replaces %q (id %s), shown %s: that note is out of date.", note.Escape(n.Title), old, n.where()))
			}
		}
		if n, ok := st.Shown[h.ID]; ok {
			switch {
			case n.Conflict && !copied[h.ID]:
				parts = append(parts, fmt.Sprintf("Settles the conflict over %q shown %s: this version was kept, the conflict copy is gone.", note.Escape(n.Title), n.where()))
			default:
				parts = append(parts, fmt.Sprintf("A new version of %q, shown %s: this one is current.", note.Escape(n.Title), n.where()))
			}
		}
		if len(parts) > 0 {
			out[h.ID] = strings.Join(parts, " ")
		}
	}
	return out
}

// remember records what the session was shown of hits (those of ids),
// so that later arrivals can refer to them.
func (st *sessionState) remember(hits []index.Hit, ids []string, prompt bool) {
	shown := make(map[string]bool, len(ids))
	for _, id := range ids {
		shown[id] = true
	}
	if st.Shown == nil {
		st.Shown = map[string]shownNote{}
	}
	for _, h := range hits {
		if !shown[h.ID] {
			continue
		}
		if of, ok := h.ConflictCopyOf(); ok {
			if n, ok := st.Shown[of]; ok {
				n.Conflict = true
				st.Shown[of] = n
			}
			continue
		}
		st.Shown[h.ID] = shownNote{Title: h.Title, Prompt: prompt}
	}
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
