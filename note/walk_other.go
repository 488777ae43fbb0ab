//go:build !unix

package note

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// walkDir is a directory open for a walk. Without fstatat its files are
// looked up by path.
type walkDir struct {
	f    *os.File
	path string
}

func openWalkRoot(path string) (*walkDir, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &walkDir{f: f, path: path}, nil
}

// openTypeDir opens the directory typ below d if it is one and not a
// link; otherwise errGone.
func (d *walkDir) openTypeDir(typ string) (*walkDir, error) {
	p := filepath.Join(d.path, typ)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir():
		return nil, errGone
	case err != nil:
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return &walkDir{f: f, path: p}, nil
}

// walkStat is what a walk needs of lstat.
type walkStat struct {
	size, mtimeNS int64
	isDir         bool
}

func (d *walkDir) lstat(name string) (walkStat, error) {
	fi, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return walkStat{}, err
	}
	return walkStat{size: fi.Size(), mtimeNS: fi.ModTime().UnixNano(), isDir: fi.IsDir()}, nil
}

func (d *walkDir) close() {
	if d != nil {
		d.f.Close()
	}
}
