package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// ErrBusy means another process held the repository lock for longer than
// the caller was willing to wait.
var ErrBusy = errors.New("another anamnesis sync or write is using memory/ (lock held)")

// Lock is the exclusive lock on the repository (a platform.FileLock on
// .git/anamnesis.lock): only its holder changes memory/.
type Lock struct{ l *platform.FileLock }

// lockPath is the lock file inside a repository's .git directory.
func lockPath(gitDir string) string { return filepath.Join(gitDir, "anamnesis.lock") }

// What a lock holder records it is doing, so that a process waiting for
// the lock can say truthfully whom it waits for.
const (
	PurposeSync  = "sync"
	PurposeWrite = "write" // committing one note right after it was written
)

// Acquire takes the lock, polling until wait has passed or ctx ends.
func Acquire(ctx context.Context, gitDir string, wait time.Duration) (*Lock, error) {
	return AcquireAs(ctx, gitDir, wait, "")
}

// AcquireAs is Acquire recording purpose (PurposeSync, PurposeWrite, or
// "" for anything else) beside the holder's pid.
func AcquireAs(ctx context.Context, gitDir string, wait time.Duration, purpose string) (*Lock, error) {
	if wait <= 0 {
		wait = time.Nanosecond // one try: 0 means "no deadline" below
	}
	l, err := platform.AcquireFile(ctx, lockPath(gitDir), platform.LockOptions{Wait: wait,
		Holder: strings.TrimSpace(strconv.Itoa(os.Getpid()) + " " + purpose)})
	if errors.Is(err, platform.ErrLockWait) {
		return nil, fmt.Errorf("%w: %s", ErrBusy, lockPath(gitDir))
	}
	if err != nil {
		return nil, err
	}
	return &Lock{l: l}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	return l.l.Release()
}

// HolderAs reports the pid and purpose the lock's holder recorded ("" if
// none) and whether it is held now.
func HolderAs(gitDir string) (pid int, purpose string, held bool, err error) {
	holder, held, err := platform.LockHolder(lockPath(gitDir))
	if err != nil {
		return 0, "", false, err
	}
	fields := strings.Fields(holder)
	if len(fields) > 0 {
		pid, _ = strconv.Atoi(fields[0])
	}
	if len(fields) > 1 {
		purpose = fields[1]
	}
	return pid, purpose, held, nil
}
