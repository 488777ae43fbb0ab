package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// MaxLogSize is the size beyond which a log is moved to <log>.1 (the one
// older generation kept) before the next report is appended: enough for
// thousands of syncs, and bounded on a machine that syncs for years.
const MaxLogSize = 1 << 20

// LogBuffer collects a command's output (stdout and stderr together, in
// order) with every line stamped with the time it was written and the
// process id. It is safe for concurrent use.
type LogBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	pid     int
	now     func() time.Time
	midLine bool
}

// NewLogBuffer returns an empty buffer stamping lines with pid and now
// (nil: time.Now).
func NewLogBuffer(pid int, now func() time.Time) *LogBuffer {
	if now == nil {
		now = time.Now
	}
	return &LogBuffer{pid: pid, now: now}
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		if !b.midLine {
			b.buf.WriteString(b.now().UTC().Format("2006-01-02T15:04:05.000Z") + " pid " + strconv.Itoa(b.pid) + " ")
			b.midLine = true
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.buf.Write(p)
			break
		}
		b.buf.Write(p[:i+1])
		b.midLine = false
		p = p[i+1:]
	}
	return n, nil
}

// Bytes returns what was written, every line complete (a last line
// without its newline gets one).
func (b *LogBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]byte(nil), b.buf.Bytes()...)
	if b.midLine {
		out = append(out, '\n')
	}
	return out
}

// AppendLog appends block to the log at path in a single write, creating
// the file 0600 (a report names the remote and may quote errors) and
// making an older, wider one 0600. Appenders serialize on an flock of
// path+".lock", a file that is never renamed, so rotating the log to
// path+".1" (when it would pass max bytes) happens while no other
// appender is between its check of the size and its write. (Locking the
// log itself made every rotation send the other appenders round again,
// and under load some of them never got through.)
func AppendLog(path string, block []byte, max int64) error {
	if len(block) == 0 {
		return nil
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open log lock %s: %w", path+".lock", err)
	}
	defer lock.Close()
	if err := platform.Lock(lock); err != nil {
		return fmt.Errorf("lock log %s: %w", path, err)
	}
	defer platform.Unlock(lock)
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stat log %s: %w", path, err)
	}
	if err == nil && fi.Size() > 0 && fi.Size()+int64(len(block)) > max {
		// On Windows a detached command that is still running holds the
		// log open as its stdout, and an open file cannot be renamed:
		// the log then grows past max until that command ends, rather
		// than losing this block.
		if err := platform.Rename(path, path+".1"); err != nil && platform.UnixModes {
			return fmt.Errorf("rotate log %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open log %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("make log %s private: %w", path, err)
		}
	}
	if _, err := f.Write(block); err != nil {
		return fmt.Errorf("append to log %s: %w", path, err)
	}
	return nil
}

// PrivateDir creates dir with mode 0700, tightening one an older version
// made 0755.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}
