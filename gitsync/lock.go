package gitsync

import (
	"bytes"
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

// Lock is an exclusive advisory lock on the repository (flock on Unix,
// LockFileEx on Windows), so the kernel releases it when the holder
// exits, even by SIGKILL: there is never a stale lock to clean up by hand.
type Lock struct {
	f *os.File
}

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
	p := lockPath(gitDir)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := platform.TryLock(f, true)
		if err == nil {
			// Record the holder for `anamnesis doctor` and for waiters;
			// informational only. One fixed-width write, no truncate, so a
			// reader never finds the file empty.
			f.WriteAt([]byte(fmt.Sprintf("%-31s\n", strings.TrimSpace(strconv.Itoa(os.Getpid())+" "+purpose))), 0)
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: %s", ErrBusy, p)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	platform.Unlock(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

// HolderAs is Holder with the purpose the holder recorded ("" if none).
func HolderAs(gitDir string) (pid int, purpose string, held bool, err error) {
	p := lockPath(gitDir)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", false, nil
	}
	if err != nil {
		// On a read-only file system; a lock works on a read-only file too.
		f, err = os.Open(p)
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("open lock %s: %w", p, err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	fields := strings.Fields(string(bytes.TrimRight(buf[:n], "\n \x00")))
	if len(fields) > 0 {
		pid, _ = strconv.Atoi(fields[0])
	}
	if len(fields) > 1 {
		purpose = fields[1]
	}
	if err := platform.TryLock(f, true); err != nil {
		return pid, purpose, true, nil
	}
	platform.Unlock(f)
	return pid, purpose, false, nil
}
