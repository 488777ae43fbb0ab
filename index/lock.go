package index

import (
	"context"
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

// RebuildLock is the exclusive lock on lockPath (a platform.FileLock).
type RebuildLock struct{ l *platform.FileLock }

// lockPoll is how often a waiter retries; rebuilds take seconds.
const lockPoll = 50 * time.Millisecond

// lockOptions wait for a rebuild as long as it takes, calling waiting,
// if set, with the holder's pid once a wait has lasted a second.
func lockOptions(waiting func(pid int)) platform.LockOptions {
	o := platform.LockOptions{Poll: lockPoll, Holder: strconv.Itoa(os.Getpid())}
	if waiting != nil {
		o.Waiting = func(holder string) {
			pid, _ := strconv.Atoi(strings.TrimSpace(holder))
			waiting(pid)
		}
	}
	return o
}

// AcquireRebuild takes the rebuild lock of the index at dbPath, waiting
// for another process's rebuild to finish (or ctx to end). waiting, if
// not nil, is called once with the holder's pid when the wait has lasted
// a second.
func AcquireRebuild(ctx context.Context, dbPath string, waiting func(pid int)) (*RebuildLock, error) {
	l, err := platform.AcquireFile(ctx, lockPath(dbPath), lockOptions(waiting))
	if err != nil {
		return nil, err
	}
	return &RebuildLock{l: l}, nil
}

// Release drops the lock.
func (l *RebuildLock) Release() error {
	if l == nil {
		return nil
	}
	return l.l.Release()
}

// WaitRebuild returns once no process is rebuilding the index at dbPath.
// It reports whether a rebuild was running; waiting is called as in
// AcquireRebuild. A missing or unreadable lock file means no rebuild.
func WaitRebuild(ctx context.Context, dbPath string, waiting func(pid int)) (bool, error) {
	return platform.WaitFile(ctx, lockPath(dbPath), lockOptions(waiting))
}
