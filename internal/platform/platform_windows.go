//go:build windows

package platform

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

const unixModes = false

// The lock covers one byte far past any data. Windows byte-range locks
// are mandatory: locking the bytes a holder writes its pid into would
// make every other process's read of that pid fail with
// ERROR_LOCK_VIOLATION. Locking past the end of a file is allowed.
const (
	lockOffsetHigh = 0x7fffffff
	lockLen        = 1
)

func lockFile(f *os.File, flags uint32) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, lockLen, 0, &ol)
}

func tryLock(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := lockFile(f, flags)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return ErrLocked
	default:
		return fmt.Errorf("LockFileEx %s: %w", f.Name(), err)
	}
}

func lock(f *os.File) error {
	if err := lockFile(f, windows.LOCKFILE_EXCLUSIVE_LOCK); err != nil {
		return fmt.Errorf("LockFileEx %s: %w", f.Name(), err)
	}
	return nil
}

func unlock(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, lockLen, 0, &ol); err != nil {
		return fmt.Errorf("UnlockFileEx %s: %w", f.Name(), err)
	}
	return nil
}

// renameWait is how long rename keeps retrying while the target is open
// elsewhere: readers of notes, refs and the git index hold them for
// milliseconds, so a second covers them with a wide margin.
const renameWait = 2 * time.Second

// rename replaces newpath with MoveFileEx. MOVEFILE_WRITE_THROUGH returns
// only once the move is on disk, which stands in for the directory fsync
// Windows does not offer.
func rename(oldpath, newpath string) error {
	from, err := windows.UTF16PtrFromString(oldpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	to, err := windows.UTF16PtrFromString(newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	deadline := time.Now().Add(renameWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err = windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH)
		if err == nil {
			return nil
		}
		// An open target answers ERROR_ACCESS_DENIED or
		// ERROR_SHARING_VIOLATION; so does a real permission problem,
		// which the deadline turns into the error it is.
		if !sharingError(err) || time.Now().After(deadline) {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
		time.Sleep(pause)
	}
}

func sharingError(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}

// writable opens dir asking for FILE_ADD_FILE: Windows checks the
// directory's ACL (and a read-only volume) when the handle is opened, so
// nothing is created.
func writable(dir string) error {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	const fileAddFile = 0x2 // FILE_ADD_FILE, the directory meaning of FILE_WRITE_DATA
	h, err := windows.CreateFile(p, fileAddFile,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return &os.PathError{Op: "open for writing", Path: dir, Err: err}
	}
	windows.CloseHandle(h)
	return nil
}

func syncFS(string) bool { return false }
