package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLockWait is AcquireFile's error when another process held the lock
// for longer than LockOptions.Wait.
var ErrLockWait = errors.New("lock held by another process")

// FileLock is an exclusive lock on a lock file, taken by AcquireFile. The
// kernel releases it when its holder exits, even by SIGKILL, so it is
// never stale.
type FileLock struct{ f *os.File }

// LockOptions tune AcquireFile and WaitFile. Zero values take defaults.
type LockOptions struct {
	// Wait bounds the wait for another holder; 0 waits until ctx ends.
	Wait time.Duration
	// Poll is how often a waiter retries (default 25 ms).
	Poll time.Duration
	// Holder is written at the start of the file once the lock is held,
	// for waiters and doctor to say whom they wait for (informational).
	Holder string
	// Waiting, if set, is called once with the holder's text when a wait
	// has lasted NoticeAfter (default one second).
	Waiting     func(holder string)
	NoticeAfter time.Duration
}

func (o *LockOptions) defaults() {
	if o.Poll <= 0 {
		o.Poll = 25 * time.Millisecond
	}
	if o.NoticeAfter <= 0 {
		o.NoticeAfter = time.Second
	}
}

// holderWidth is the fixed width of the holder text. It is written in one
// write at offset 0 and never truncated first, so a reader never finds
// the file empty (a truncate and a write are two steps a reader can fall
// between).
const holderWidth = 31

// AcquireFile takes the exclusive lock on the file at path (created if
// missing), polling while another process holds it, until opts.Wait
// passes (ErrLockWait) or ctx ends.
func AcquireFile(ctx context.Context, path string, opts LockOptions) (*FileLock, error) {
	opts.defaults()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	err = poll(ctx, f, true, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.Holder != "" {
		f.WriteAt([]byte(fmt.Sprintf("%-*s\n", holderWidth, opts.Holder)), 0)
	}
	return &FileLock{f: f}, nil
}

// Release drops the lock; a nil or released lock is a no-op.
func (l *FileLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	unlock(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

// WaitFile returns once nobody holds the lock on path, reporting whether
// it had to wait. A missing or unreadable lock file means nobody does.
func WaitFile(ctx context.Context, path string, opts LockOptions) (bool, error) {
	opts.defaults()
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if err := tryLock(f, false); err == nil {
		unlock(f)
		return false, nil
	} else if !errors.Is(err, ErrLocked) {
		return false, nil
	}
	if err := poll(ctx, f, false, opts); err != nil {
		return true, err
	}
	unlock(f)
	return true, nil
}

// LockHolder reads what the holder of the lock on path wrote (see
// LockOptions.Holder) and whether the lock is held now. A missing file is
// not held.
func LockHolder(path string) (holder string, held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		// On a read-only file system; a lock works on a read-only file too.
		f, err = os.Open(path)
	}
	if err != nil {
		return "", false, fmt.Errorf("open lock %s: %w", path, err)
	}
	defer f.Close()
	holder = readHolder(f)
	if err := tryLock(f, true); err != nil {
		return holder, true, nil
	}
	unlock(f)
	return holder, false, nil
}

// poll retries the lock on f until it is taken, opts.Wait passes or ctx
// ends.
func poll(ctx context.Context, f *os.File, exclusive bool, opts LockOptions) error {
	start := time.Now()
	told := false
	for {
		err := tryLock(f, exclusive)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrLocked) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		waited := time.Since(start)
		if opts.Wait > 0 && waited >= opts.Wait {
			return fmt.Errorf("%w: %s", ErrLockWait, f.Name())
		}
		if !told && opts.Waiting != nil && waited >= opts.NoticeAfter {
			told = true
			opts.Waiting(readHolder(f))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opts.Poll):
		}
	}
}

func readHolder(f *os.File) string {
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	return string(bytes.TrimSpace(bytes.TrimRight(buf[:n], "\x00")))
}
