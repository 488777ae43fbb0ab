package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrLink marks a path refused because it, or a directory between the
// root it was checked under and it, is a symbolic link (on Windows also a
// junction or mount point). errors.Is(err, ErrLink) tells a *LinkError.
var ErrLink = errors.New("link inside the store")

// FixLinks is the remedy every LinkError names: doctor removes the links
// (never what they point to) and recreates the directories.
const FixLinks = "run `anamnesis doctor --fix`"

// LinkError says which component of Path is a link and where it points.
type LinkError struct {
	Path   string // what was to be written or read
	Link   string // the component that is a link: Path itself or a directory above it
	Target string // what the link points to ("" when it cannot be read)
	Root   string // the directory Path was checked under
}

func (e *LinkError) Error() string {
	to := ""
	if e.Target != "" {
		to = " (to " + e.Target + ")"
	}
	what := e.Link + " is a symlink" + to
	if e.Link != e.Path {
		what = e.Path + ": " + what
	}
	return fmt.Sprintf("%s; anamnesis does not follow links inside %s: %s", what, e.Root, FixLinks)
}

// Unwrap makes errors.Is(err, ErrLink) true.
func (e *LinkError) Unwrap() error { return ErrLink }

// IsLink reports whether fi (from Lstat) is a link that a path through it
// would follow: a symlink, or on Windows a junction or mount point, which
// Go reports as irregular and, unlike a directory that is only a cloud
// placeholder, without ModeDir.
func IsLink(fi fs.FileInfo) bool {
	m := fi.Mode()
	return m&fs.ModeSymlink != 0 || m&fs.ModeIrregular != 0 && !m.IsDir()
}

// CheckBeneath returns a *LinkError when a directory between root and
// path, or path itself, is a link (IsLink). root itself may be one: the
// user may put a store, or a tree inside it, on another disk through a
// link; everything below it is ours and must be real directories and
// files, so that a link planted there (by a hostile hub, another tool)
// cannot send our writes somewhere else. Components that do not exist
// yet pass (they are created as real directories), as do other errors
// of Lstat, which the write itself then reports.
//
// It costs one Lstat per component below root (two or three for a note
// or a state file). A link created between the check and the write is
// not caught: that takes a process writing to the store at the same
// time, which can write anywhere the user can anyway; a sync, which
// could plant one, refuses trees with links itself.
//
// Why not os.Root: it refuses only links that lead out of the root and
// follows those inside it (episodic/ linked to semantic/ would pass), it
// has no CreateTemp for the temporary file of an atomic write, and on
// Windows its Rename is not our MoveFileEx with MOVEFILE_WRITE_THROUGH,
// retried while a reader holds the old file open (Rename above).
func CheckBeneath(root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s is not inside %s", path, root)
	}
	if rel == "." {
		return nil
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil
		}
		if IsLink(fi) {
			target, _ := os.Readlink(cur)
			return &LinkError{Path: path, Link: cur, Target: target, Root: root}
		}
	}
	return nil
}
