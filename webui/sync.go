package webui

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
)

// syncState is the last sync as the header shows it.
type syncState struct {
	At      time.Time // zero: none known
	Failed  bool
	Detail  string // the error, or what the sync did
	Running bool   // "Sync now" is running one
	// FromHistory: no sync report was found (a foreground `anamnesis
	// sync` writes none), and At is this machine's newest merge commit,
	// a sync that found other machines' work.
	FromHistory bool
}

// syncRecord is a sync this server ran ("Sync now").
type syncRecord struct {
	at      time.Time
	err     error
	summary string
	running bool
}

// syncLogTail is how much of state/sync.log is read for its last block:
// a block is a few lines, and the log rotates at a bounded size.
const syncLogTail = 32 << 10

// syncState is the newer of the last sync this server ran and the last
// one in state/sync.log, where every background sync (the hooks', MCP
// writes', this server's after an edit) appends its report, ending with
// "exit N after D" (a sync run in a terminal appends its outcome too).
// The log is parsed again only when its size or time changed: every page
// shows the state in its header.
func (s *Server) syncState() syncState {
	s.syncMu.Lock()
	rec := s.lastSync
	s.syncMu.Unlock()
	st := syncState{Running: rec.running}
	if !rec.at.IsZero() {
		st.At, st.Failed, st.Detail = rec.at, rec.err != nil, rec.summary
		if rec.err != nil {
			st.Detail = rec.err.Error()
		}
	}
	if l := s.loggedSync(filepath.Join(s.st.Home(), "state", "sync.log")); l.ok && l.at.After(st.At) {
		st.At, st.Failed, st.Detail = l.at, l.failed, l.detail
	}
	return st
}

// syncStateFor is syncState, falling back on the history when no report
// says anything: this machine's newest merge commit.
func (s *Server) syncStateFor(ctx context.Context) syncState {
	st := s.syncState()
	if !st.At.IsZero() || st.Running || s.st.Remote() == "" {
		return st
	}
	v, err := s.versions(ctx)
	if err != nil || v == nil {
		return st
	}
	defer v.mu.Unlock()
	me := s.st.MachineID()
	var newest int64
	for _, c := range v.data.Commits {
		if c.Merge && c.Machine == me && c.Unix > newest {
			newest = c.Unix
		}
	}
	if newest > 0 {
		st.At, st.FromHistory, st.Detail = time.Unix(newest, 0), true, "this machine's newest merge commit; a sync with nothing to merge leaves none"
	}
	return st
}

// lastLoggedSync finds the last "exit N after D" line of the log and the
// line its process wrote before it (the error of a failed sync).
func lastLoggedSync(path string) (at time.Time, failed bool, detail string, ok bool) {
	data, ok := logTail(path)
	if !ok {
		return at, false, "", false
	}
	lines := logLines(data)
	for i := len(lines) - 1; i >= 0; i-- {
		code, _, isExit := strings.Cut(strings.TrimPrefix(lines[i].text, "exit "), " after ")
		if !strings.HasPrefix(lines[i].text, "exit ") || !isExit {
			continue
		}
		n, err := strconv.Atoi(code)
		t, terr := time.Parse("2006-01-02T15:04:05.000Z", lines[i].ts)
		if err != nil || terr != nil {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if lines[j].pid == lines[i].pid {
				detail = lines[j].text
				break
			}
		}
		return t, n != 0, textfmt.Clip(detail, 300), true
	}
	return at, false, "", false
}

// logTail is the last syncLogTail bytes of the log at path; false when
// it cannot be read.
func logTail(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > syncLogTail {
		if _, err := f.Seek(fi.Size()-syncLogTail, io.SeekStart); err != nil {
			return nil, false
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, syncLogTail))
	return data, err == nil
}

// logLine is a line of a background process's log:
// "2026-11-25T16:01:02.000Z pid 123 text".
type logLine struct{ ts, pid, text string }

// logLines are data's lines of that form; others are skipped.
func logLines(data []byte) []logLine {
	var lines []logLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ts, rest, ok1 := strings.Cut(sc.Text(), " pid ")
		pid, text, ok2 := strings.Cut(rest, " ")
		if ok1 && ok2 {
			lines = append(lines, logLine{ts, pid, text})
		}
	}
	return lines
}

// syncTimeout bounds "Sync now": gitsync has its own inactivity timeouts,
// this is the backstop for the page.
const syncTimeout = 2 * time.Minute

// syncNow runs one sync and returns to the page it was asked from; the
// header then shows its outcome.
func (s *Server) syncNow(w http.ResponseWriter, r *http.Request) {
	back := r.PostForm.Get("back")
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.HasPrefix(back, "/\\") {
		back = "/" // only a path of this server: no open redirect
	}
	s.syncMu.Lock()
	if s.lastSync.running {
		s.syncMu.Unlock()
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	s.lastSync.running = true
	s.syncMu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), syncTimeout)
	defer cancel()
	rep, err := s.st.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil {
		err = errors.New(textfmt.FirstLine(err.Error()))
	}
	s.forgetFacets()
	s.syncMu.Lock()
	s.lastSync = syncRecord{at: s.opts.Now(), err: err, summary: syncSummary(rep)}
	s.syncMu.Unlock()
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// syncSummary says what a sync did in a few words.
func syncSummary(r anamnesis.SyncReport) string {
	var parts []string
	if r.Committed {
		parts = append(parts, "committed")
	}
	if r.Merged {
		parts = append(parts, "merged other machines' notes")
	} else if r.Fetched {
		parts = append(parts, "nothing new from other machines")
	}
	if n := len(r.ConflictCopies); n > 0 {
		parts = append(parts, strconv.Itoa(n)+" conflict(s)")
	}
	if r.Pushed {
		parts = append(parts, "pushed")
	}
	parts = append(parts, r.Warnings...)
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

// loggedSyncState is what lastLoggedSync found in the log of a given size
// and time.
type loggedSyncState struct {
	size   int64
	mtime  time.Time
	at     time.Time
	failed bool
	detail string
	ok     bool
}

// loggedSync is lastLoggedSync of path, read again only when the file's
// size or modification time changed since the last call.
func (s *Server) loggedSync(path string) loggedSyncState {
	fi, err := os.Stat(path)
	if err != nil {
		return loggedSyncState{}
	}
	s.syncMu.Lock()
	cached := s.logSeen
	s.syncMu.Unlock()
	if cached.size == fi.Size() && cached.mtime.Equal(fi.ModTime()) {
		return cached
	}
	l := loggedSyncState{size: fi.Size(), mtime: fi.ModTime()}
	l.at, l.failed, l.detail, l.ok = lastLoggedSync(path)
	s.syncMu.Lock()
	s.logSeen = l
	s.syncMu.Unlock()
	return l
}
