package anamnesis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Links inside a store. The home, memory/ and local/ may be links (a user
// puts a store, or one tree of it, on another disk that way); everything
// below them must be real directories and regular files. A link there,
// planted by a hub (git stores symlinks) or made by a tool, would send
// notes and state wherever it points: unindexed, unsynced, possibly over
// a file of the user's. Every write refuses one (platform.CheckBeneath,
// note.Tree.WriteFile, note.WriteFileAtomicIn), reads of notes skip them
// (note.Tree.ReadFile), doctor names them and `doctor --fix` removes them
// (FixLinks).

// stateDir is the machine-local state directory inside a home (session
// state, background logs, the native import's state).
const stateDir = "state"

// StoreLink is one link found inside a store.
type StoreLink struct {
	// Path is home-relative, with forward slashes (memory/episodic).
	Path string `json:"path"`
	// Target is what the link points to ("" when it cannot be read).
	Target string `json:"target"`
	// dir: a directory anamnesis writes into (a type directory, state/,
	// state/sessions/), which FixLinks recreates as a real one.
	dir bool
}

func (l StoreLink) String() string {
	if l.Target == "" {
		return l.Path
	}
	return l.Path + " -> " + l.Target
}

// FindLinks lists the links inside the store at home, in path order:
// any entry at any depth of memory/ (but .git, which is git's) and
// local/, state/ and anything in it, and the index's and config's files.
// It reads directories only, never through a link.
func FindLinks(ctx context.Context, home string) ([]StoreLink, error) {
	var out []StoreLink
	add := func(rel string, dir bool) {
		target, _ := os.Readlink(filepath.Join(home, filepath.FromSlash(rel)))
		out = append(out, StoreLink{Path: rel, Target: target, dir: dir})
	}
	for _, tree := range []string{note.PortableDir, note.LocalDir} {
		root := filepath.Join(home, tree)
		err := walkLinks(ctx, root, root, true, func(rel string) {
			// A type directory is one we write into: FixLinks makes it
			// real again.
			add(tree+"/"+rel, note.ValidType(rel))
		})
		if err != nil {
			return out, err
		}
	}
	// state/ and its sessions/ are written by every hook; anything deeper
	// is not ours, but a link anywhere in it is named all the same.
	state := filepath.Join(home, stateDir)
	if fi, err := os.Lstat(state); err == nil && platform.IsLink(fi) {
		add(stateDir, true)
	} else if err == nil && fi.IsDir() {
		err := walkLinks(ctx, state, home, false, func(rel string) { add(rel, rel == stateDir+"/sessions") })
		if err != nil {
			return out, err
		}
	}
	for _, f := range append(indexFiles(IndexFile), ConfigFile, ConfigFile+".bak") {
		if fi, err := os.Lstat(filepath.Join(home, f)); err == nil && platform.IsLink(fi) {
			add(f, false)
		}
	}
	slices.SortFunc(out, func(a, b StoreLink) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// walkLinks calls found with the path (relative to base, with slashes)
// of each link below root, at any depth (with skipGit, not in the .git
// at root's top: git's own). It never walks through a link; a missing
// root, or an entry removed while it walks, is no error.
func walkLinks(ctx context.Context, root, base string, skipGit bool, found func(rel string)) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case p == root:
			return ctx.Err()
		case skipGit && p == filepath.Join(root, ".git"):
			return fs.SkipDir
		}
		if link, err := entryIsLink(d); err != nil || !link {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		found(filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return fmt.Errorf("look for links in %s: %w", root, err)
	}
	return nil
}

// entryIsLink reports whether a directory entry is a link, asking for its
// full mode only when its type is neither a directory nor a regular file
// (a walk over 10,000 notes stats none of them).
func entryIsLink(d fs.DirEntry) (bool, error) {
	if d.Type() == 0 || d.IsDir() {
		return false, nil
	}
	fi, err := d.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return platform.IsLink(fi), nil
}

// LinkFixReport says what FixLinks did.
type LinkFixReport struct {
	// Removed are the links removed (never what they pointed to).
	Removed []string `json:"removed_links"`
	// Recreated are the directories made real again where a link was.
	Recreated []string `json:"recreated_dirs"`
	// Stranded are note files found in the targets of removed directory
	// links: notes this machine may have written through the link. They
	// are where they were; see FixLinks for why they are not copied back.
	Stranded []string `json:"stranded_notes"`
	// CopiedConfig: config.json was a link, and is now a regular file
	// with the content it pointed to.
	CopiedConfig bool `json:"copied_config,omitempty"`
}

// FixLinks removes every link FindLinks finds in the store at home (the
// link itself, never its target) and recreates as real directories the
// ones anamnesis writes into, so that writes work again and land inside
// the store. It runs before the store is opened (a linked index.db makes
// Open refuse), and holds the sync lock while it changes memory/.
//
// Note files found in a removed directory link's target are listed, not
// copied back. They may be notes written through the link, but the
// target is wherever the link pointed, chosen by whoever planted it: a
// copy into memory/ would publish to the hub, on the next sync, whatever
// note-shaped files sit there (another store's machine-local notes, say),
// and could overwrite notes by id. The user can look and move back what
// is theirs; the next reindex indexes it.
//
// config.json is the exception to removing: a user may keep it in a
// dotfiles repository through a link, and it holds this machine's id and
// remote. It becomes a regular file with the content the link pointed to
// (which every command of this store read as its config anyway).
func FixLinks(ctx context.Context, home string) (LinkFixReport, error) {
	rep := LinkFixReport{Removed: []string{}, Recreated: []string{}, Stranded: []string{}}
	links, err := FindLinks(ctx, home)
	if err != nil || len(links) == 0 {
		return rep, err
	}
	if slices.ContainsFunc(links, func(l StoreLink) bool { return strings.HasPrefix(l.Path, note.PortableDir+"/") }) {
		unlock, err := lockMemory(ctx, home)
		if err != nil {
			return rep, err
		}
		defer unlock()
	}
	for _, l := range links {
		if err := fixLink(home, l, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// lockMemory takes memory/'s sync lock, when it is a repository: only
// the lock holder changes memory/ (a sync checking out meanwhile would
// see half a repair).
func lockMemory(ctx context.Context, home string) (unlock func(), err error) {
	gitDir := filepath.Join(home, note.PortableDir, ".git")
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return func() {}, nil
	}
	lock, err := gitsync.Acquire(ctx, gitDir, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("fix links in %s: %w", filepath.Join(home, note.PortableDir), err)
	}
	return func() { lock.Release() }, nil
}

// fixLink removes one link (config.json's becomes a copy of its
// content), listing the notes a directory link's target holds, and
// recreates a directory anamnesis writes into as a real one.
func fixLink(home string, l StoreLink, rep *LinkFixReport) error {
	p := filepath.Join(home, filepath.FromSlash(l.Path))
	if l.Path == ConfigFile {
		copied, err := unlinkConfig(home)
		if err != nil {
			return err
		}
		rep.CopiedConfig = copied
		rep.Removed = append(rep.Removed, l.String())
		return nil
	}
	if l.dir {
		rep.Stranded = append(rep.Stranded, strandedNotes(p)...)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove link %s: %w", p, err)
	}
	rep.Removed = append(rep.Removed, l.String())
	if !l.dir {
		return nil
	}
	perm := os.FileMode(0o755)
	if strings.HasPrefix(l.Path, stateDir) {
		perm = 0o700 // as logfile.PrivateDir makes it
	}
	if err := os.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("recreate directory %s: %w", p, err)
	}
	rep.Recreated = append(rep.Recreated, l.Path)
	return nil
}

// strandedNotes lists the note files in what the directory link at p
// (<tree>/<type>) points to, by their full path.
func strandedNotes(p string) []string {
	typ := filepath.Base(p)
	entries, err := os.ReadDir(p) // through the link, on purpose: only names are read
	if err != nil {
		return nil
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		target = p
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && note.IsNotePath(typ+"/"+e.Name()) {
			out = append(out, filepath.Join(target, e.Name()))
		}
	}
	return out
}

// unlinkConfig replaces a config.json link by a regular file with the
// content it points to; a link to nothing is removed. It reports whether
// content was copied.
func unlinkConfig(home string) (bool, error) {
	p := filepath.Join(home, ConfigFile)
	data, err := os.ReadFile(p)
	if err != nil {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("remove link %s: %w", p, err)
		}
		return false, nil
	}
	// The rename at the end of the write replaces the link itself, so
	// the config is never missing.
	if err := note.WritePrivateFileAtomic(p, data); err != nil {
		return false, fmt.Errorf("replace link %s by a copy of its target: %w", p, err)
	}
	return true, nil
}
