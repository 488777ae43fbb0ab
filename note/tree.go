package note

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// Tree is one directory of notes laid out as <type>/<file>.md. Its scope is
// the scope of every note in it.
type Tree struct {
	Root  string // absolute directory
	Scope string // ScopePortable or ScopeMachineLocal
}

// Path returns the absolute path of a file inside the tree. rel uses
// forward slashes, as stored in the index.
func (t Tree) Path(rel string) string { return filepath.Join(t.Root, filepath.FromSlash(rel)) }

// Write stores n at <type>/<id>.md atomically and returns that relative
// path. The note's scope is forced to the tree's.
func (t Tree) Write(n *Note) (string, error) {
	n.Scope = t.Scope
	if err := n.Validate(); err != nil {
		return "", fmt.Errorf("write note: %w", err)
	}
	rel := n.RelPath()
	if err := t.WriteFile(rel, Marshal(n)); err != nil {
		return "", err
	}
	return rel, nil
}

// WriteFile replaces the file at rel atomically (WriteFileAtomic),
// refusing with a *platform.LinkError when the type directory or the file
// is a link: the tree's root may be one (a store on another disk), but
// a link inside it would send the note somewhere unindexed and unsynced,
// wherever a hostile hub or a stray tool pointed it.
func (t Tree) WriteFile(rel string, data []byte) error {
	return WriteFileAtomicIn(t.Root, t.Path(rel), data)
}

// Remove deletes the file at rel, refusing as WriteFile does when its
// directory is a link (removing through one would delete a file
// elsewhere). A file that is itself a link may be removed: that removes
// the link, never its target. A missing file is not an error.
func (t Tree) Remove(rel string) error {
	p := t.Path(rel)
	if err := platform.CheckBeneath(t.Root, filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, fsyncs it and renames it into place, so a crash leaves either
// the old file or the new one, never half of one.
// It is for files outside a store (Claude Code's settings); a store's
// own files go through the In variants.
func WriteFileAtomic(path string, data []byte) error { return writeFile("", path, data, true, 0o644) }

// WritePrivateFileAtomic is WriteFileAtomic for a file only its owner may
// read (one that can hold a secret): mode 0600 before it takes its name,
// so it is never readable by others, not even for a moment.
func WritePrivateFileAtomic(path string, data []byte) error {
	return writeFile("", path, data, true, 0o600)
}

// WriteFileAtomicIn is WriteFileAtomic for a file of a store: it refuses,
// with a *platform.LinkError naming the link and the remedy, when path or
// a directory between root and path is a link (platform.CheckBeneath).
// root itself may be one.
func WriteFileAtomicIn(root, path string, data []byte) error {
	return writeFile(root, path, data, true, 0o644)
}

// WritePrivateFileAtomicIn is WritePrivateFileAtomic with
// WriteFileAtomicIn's refusal of links below root.
func WritePrivateFileAtomicIn(root, path string, data []byte) error {
	return writeFile(root, path, data, true, 0o600)
}

// ReplaceFileIn is WriteFileAtomicIn without the fsyncs, for caches whose
// loss costs nothing (a reader still never sees half a file).
func ReplaceFileIn(root, path string, data []byte) error {
	return writeFile(root, path, data, false, 0o644)
}

// writeFile writes path atomically; a root other than "" is the directory
// below which no link may be followed. The check comes first, before any
// directory is created. The final rename would replace a link at path
// rather than write through it, but a link there is refused all the same:
// it is not a file we wrote, and doctor should deal with it.
func writeFile(root, path string, data []byte, durable bool, perm os.FileMode) (err error) {
	if root != "" {
		if err := platform.CheckBeneath(root, path); err != nil {
			return err
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-anamnesis-*")
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if durable {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Chmod(tmp, perm); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err = platform.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	// The rename is durable only once the directory entry is.
	if durable {
		if d, derr := os.Open(dir); derr == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// ReadFile reads one note file with the guards the index relies on: no
// symlinks (a link could point anywhere on the machine), regular files
// only, at most MaxFileSize bytes. Refusals wrap ErrMalformed.
func (t Tree) ReadFile(rel string) ([]byte, fs.FileInfo, error) {
	p := t.Path(rel)
	// The type directory must not be a link either: through one, a file
	// anywhere on the machine would be indexed and shown as a note.
	if err := platform.CheckBeneath(t.Root, filepath.Dir(p)); err != nil {
		var le *platform.LinkError
		if errors.As(err, &le) {
			return nil, nil, malformed("%s", t.describeLinkedDir(le))
		}
		return nil, nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, nil, fmt.Errorf("stat %s: %w", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fi, malformed("%s", t.describeSymlink(p))
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, malformed("not a regular file")
	}
	if fi.Size() > MaxFileSize {
		return nil, fi, malformed("file is %d bytes, over the %d byte limit for a note", fi.Size(), MaxFileSize)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fi, fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	// Read at most one byte past the limit in case the file grew since Lstat.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fi, fmt.Errorf("read %s: %w", p, err)
	}
	if len(data) > MaxFileSize {
		return nil, fi, malformed("file is over the %d byte limit for a note", MaxFileSize)
	}
	return data, fi, nil
}

// describeLinkedDir says why a file in a linked directory was not read.
func (t Tree) describeLinkedDir(le *platform.LinkError) string {
	dir, _ := filepath.Rel(t.Root, le.Link)
	to := ""
	if le.Target != "" {
		to = " (to " + le.Target + ")"
	}
	return "its directory " + filepath.ToSlash(dir) + " is a symlink" + to + "; not followed: " + platform.FixLinks
}

func (t Tree) describeSymlink(p string) string {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "is a symlink that cannot be resolved; not followed"
	}
	root, err := filepath.EvalSymlinks(t.Root)
	if err == nil {
		if r, err := filepath.Rel(root, target); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			return "is a symlink (to " + r + " inside the tree); links are not followed"
		}
	}
	return "is a symlink to " + target + ", outside the tree; not followed"
}

// OtherFiles lists the files in the tree that are not at a note path
// (see IsNotePath), sorted: what a hub came with (README.md, .github/)
// or a user put there. .git and in-flight temporary files are left out.
func (t Tree) OtherFiles(ctx context.Context) ([]string, error) {
	var out []string
	err := filepath.WalkDir(t.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == t.Root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if p == t.Root {
			return ctx.Err()
		}
		rel, err := filepath.Rel(t.Root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == ".git":
			return fs.SkipDir
		case d.IsDir():
			return ctx.Err()
		case strings.HasPrefix(d.Name(), ".tmp-anamnesis-") || IsNotePath(rel):
			return nil
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", t.Root, err)
	}
	return out, nil
}

// IsNotePath reports whether rel (a path inside a tree, forward slashes)
// is where a note lives: <type>/<id>.md with type one of Types and a
// valid id as file name, or a conflict copy beside one
// (<id>.conflict-<hex>.md, the suffix repeated for a copy of a copy).
// This is the layout every writer uses, ours and the Python tool's.
// Anything else in a tree is not a note: a README.md a hub was created
// with, .github/, docs/*.md are synced as files but never read as notes,
// so they are never indexed and never reported as bad notes.
func IsNotePath(rel string) bool {
	dir, file, ok := strings.Cut(rel, "/")
	return ok && ValidType(dir) && isNoteFileName(file)
}

// isNoteFileName reports whether file is the name of a note file inside
// a type directory (IsNotePath's test of the part after the type).
func isNoteFileName(file string) bool {
	if strings.Contains(file, "/") {
		return false
	}
	stem, ok := strings.CutSuffix(file, ".md")
	if !ok {
		return false
	}
	for {
		i := strings.LastIndex(stem, ".conflict-")
		if i < 0 {
			break
		}
		if !isLowerHex(stem[i+len(".conflict-"):]) {
			return false
		}
		stem = stem[:i]
	}
	return ValidID(stem)
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// Directory names of the two trees inside a store home. The git repository
// is memory/ itself, so local/ cannot be committed by construction.
const (
	PortableDir = "memory"
	LocalDir    = "local"
)

// TreeDir names the directory (relative to the home) holding notes of a scope.
func TreeDir(scope string) string {
	if scope == ScopeMachineLocal {
		return LocalDir
	}
	return PortableDir
}

// SplitHomePath splits a home-relative path such as memory/semantic/X.md
// into the scope its tree implies and the path inside that tree.
func SplitHomePath(p string) (scope, rel string, ok bool) {
	if r, found := strings.CutPrefix(p, PortableDir+"/"); found {
		return ScopePortable, r, true
	}
	if r, found := strings.CutPrefix(p, LocalDir+"/"); found {
		return ScopeMachineLocal, r, true
	}
	return "", "", false
}
