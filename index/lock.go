package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// lockPath is the rebuild lock beside an index database. Only rebuilds
// take it: a rebuild of 100,000 notes holds SQLite's write lock for
// longer than any busy timeout, so processes that would rebuild too, or
// whose writes timed out behind it, wait on this lock instead of failing
// with SQLITE_BUSY or rebuilding the same index again.
func lockPath(dbPath string) string { return dbPath + ".lock" }

// RebuildLock is an exclusive lock on lockPath (flock on Unix, LockFileEx
// on Windows). The kernel releases it when its holder exits, even by
// SIGKILL, so it is never stale.
type RebuildLock struct{ f *os.File }

// lockPoll is how often a waiter retries; rebuilds take seconds.
const lockPoll = 50 * time.Millisecond

// waitNotice is how long a wait lasts before the waiting callback runs:
// a wait shorter than that is not worth telling anyone about.
const waitNotice = time.Second

// AcquireRebuild takes the rebuild lock of the index at dbPath, waiting
// for another process's rebuild to finish (or ctx to end). waiting, if
// not nil, is called once with the holder's pid when the wait has lasted
// a second.
func AcquireRebuild(ctx context.Context, dbPath string, waiting func(pid int)) (*RebuildLock, error) {
	p := lockPath(dbPath)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open index lock %s: %w", p, err)
	}
	told, start := false, time.Now()
	for {
		err := platform.TryLock(f, true)
		if err == nil {
			// Informational: lets waiters say whom they wait for.
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return &RebuildLock{f: f}, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		if !told && waiting != nil && time.Since(start) >= waitNotice {
			told = true
			waiting(lockHolder(f))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// Release drops the lock.
func (l *RebuildLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	platform.Unlock(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

// WaitRebuild returns once no process is rebuilding the index at dbPath.
// It reports whether a rebuild was running; waiting is called as in
// AcquireRebuild. A missing or unreadable lock file means no rebuild.
func WaitRebuild(ctx context.Context, dbPath string, waiting func(pid int)) (bool, error) {
	f, err := os.Open(lockPath(dbPath))
	if err != nil {
		return false, nil
	}
	defer f.Close()
	told, start := false, time.Now()
	for waited := false; ; waited = true {
		err := platform.TryLock(f, false)
		if err == nil {
			platform.Unlock(f)
			return waited, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			return waited, nil
		}
		if !told && waiting != nil && time.Since(start) >= waitNotice {
			told = true
			waiting(lockHolder(f))
		}
		select {
		case <-ctx.Done():
			return waited, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

func lockHolder(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return pid
}
