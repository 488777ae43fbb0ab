//go:build unix

package platform

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

const unixModes = true

func tryLock(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	err := IgnoringEINTR(func() error { return unix.Flock(int(f.Fd()), how|unix.LOCK_NB) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return ErrLocked
	default:
		return fmt.Errorf("flock %s: %w", f.Name(), err)
	}
}

func lock(f *os.File) error {
	if err := IgnoringEINTR(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }); err != nil {
		return fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return nil
}

// IgnoringEINTR calls call again while a signal interrupts it (EINTR),
// as package os does for the system calls it makes: the Go runtime's own
// signals can interrupt a slow one (a lock, a lookup on a network file
// system).
func IgnoringEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func unlock(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

func rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// writable asks access(2): a read-only mount answers EROFS, a directory
// without write permission EACCES.
func writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

func syncFS(dir string) bool {
	if syncOne(dir) == nil {
		return true
	}
	syscall.Sync()
	return true
}
