package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
//
// The log's directory (the store's state/) and the files must not be
// links (see checkLog).
func AppendLog(path string, block []byte, max int64) error {
	if len(block) == 0 {
		return nil
	}
	if err := checkLog(path); err != nil {
		return err
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
	if err := rotateIfFull(path, int64(len(block)), max); err != nil {
		return err
	}
	return appendPrivate(path, block)
}

// rotateIfFull renames the log at path to path+".1" when adding n bytes
// would take it past max. The caller holds the lock.
func rotateIfFull(path string, n, max int64) error {
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stat log %s: %w", path, err)
	}
	if err != nil || fi.Size() == 0 || fi.Size()+n <= max {
		return nil
	}
	// On Windows a detached command that is still running holds the
	// log open as its stdout, and an open file cannot be renamed: the
	// log then grows past max until that command ends, rather than
	// losing this block.
	if err := platform.Rename(path, path+".1"); err != nil && platform.UnixModes {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	return nil
}

// appendPrivate appends block to the log at path in one write, creating
// it 0600 and making an older, wider one 0600.
func appendPrivate(path string, block []byte) error {
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

// OpenLog opens the log at path for appending, creating it 0600 and
// making an older, wider one 0600: the stdout and stderr of a detached
// process, which AppendLog's blocks go to as well. It refuses links as
// AppendLog does.
func OpenLog(path string) (*os.File, error) {
	if err := checkLog(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("make log %s private: %w", path, err)
	}
	return f, nil
}

// checkLog refuses a log whose directory, or the log, its lock or its
// older generation, is a link: appending or rotating through one would
// write wherever it points. The directory's parent (the store's home) may
// be a link: users put homes on other disks that way.
func checkLog(path string) error {
	root := filepath.Dir(filepath.Dir(path))
	for _, f := range []string{path, path + ".lock", path + ".1"} {
		if err := platform.CheckBeneath(root, f); err != nil {
			return err
		}
	}
	return nil
}

// PrivateDir creates dir with mode 0700, tightening one an older version
// made 0755. dir (a store's state directory, or one inside it) must not
// be a link; its parent may be (the home on another disk).
func PrivateDir(dir string) error {
	if err := platform.CheckBeneath(filepath.Dir(dir), dir); err != nil {
		return err
	}
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
