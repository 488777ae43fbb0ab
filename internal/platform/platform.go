package platform

import (
	"errors"
	"os"
)

// ErrLocked is returned by TryLock when another open file (in this
// process or another) holds a conflicting lock.
var ErrLocked = errors.New("file is locked by another process")

// TryLock takes an advisory lock on f without waiting: exclusive, or
// shared when exclusive is false. It returns ErrLocked when a conflicting
// lock is held. Locks belong to the open file, so a second os.File of
// the same path conflicts with the first even in one process, as with
// flock(2).
func TryLock(f *os.File, exclusive bool) error { return tryLock(f, exclusive) }

// Lock takes an exclusive advisory lock on f, waiting as long as it takes.
func Lock(f *os.File) error { return lock(f) }

// Unlock drops a lock taken by TryLock or Lock. Closing the file drops it
// too; Unlock makes that immediate where the OS only promises "soon".
func Unlock(f *os.File) error { return unlock(f) }

// Rename moves oldpath to newpath, replacing newpath if it exists, as
// rename(2) does. On Windows it retries for a while when newpath is open
// in another process (see the package doc).
func Rename(oldpath, newpath string) error { return rename(oldpath, newpath) }

// Writable reports whether this process may create files in dir, asked
// without creating one (a reader must not change a directory a sync
// owns): nil, or why not.
func Writable(dir string) error { return writable(dir) }

// SyncFS flushes the dirty data of the file system holding dir at once
// and reports whether it could; where it cannot (Windows), callers must
// fsync each file they need durable. On Linux that is syncfs(2), only
// that file system: sync(2), which other Unix systems fall back to,
// waits for every mounted one, a stalled network mount included.
func SyncFS(dir string) bool { return syncFS(dir) }

// UnixModes reports whether file permission bits mean anything here. On
// Windows only the owner-write bit exists (as the read-only attribute);
// privacy comes from the ACL a file inherits from the user's profile.
const UnixModes = unixModes
