//go:build unix

package note

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// walkDir is a directory open for a walk: f reads its names, fd is what
// its files are looked up from (fstatat, openat).
type walkDir struct {
	f    *os.File
	fd   int
	path string // for messages
}

func openWalkRoot(path string) (*walkDir, error) {
	var fd int
	err := platform.IgnoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &walkDir{f: os.NewFile(uintptr(fd), path), fd: fd, path: path}, nil
}

// openTypeDir opens the directory typ below d, never through a link: one
// put there since d was read would lead the walk out of the tree. A name
// that is no longer a directory is errGone.
func (d *walkDir) openTypeDir(typ string) (*walkDir, error) {
	p := d.path + "/" + typ
	var fd int
	err := platform.IgnoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, typ, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		return nil, errGone
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return &walkDir{f: os.NewFile(uintptr(fd), p), fd: fd, path: p}, nil
}

// walkStat is what a walk needs of lstat.
type walkStat struct {
	size, mtimeNS int64
	isDir         bool
}

// lstat is lstat of the file name in d, looked up from d's descriptor.
func (d *walkDir) lstat(name string) (walkStat, error) {
	var st unix.Stat_t
	err := platform.IgnoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return walkStat{}, &fs.PathError{Op: "lstat", Path: d.path + "/" + name, Err: err}
	}
	return walkStat{size: st.Size, mtimeNS: st.Mtim.Nano(), isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

func (d *walkDir) close() {
	if d != nil {
		d.f.Close()
	}
}
