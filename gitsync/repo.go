package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Branch and remote names, as the Python tool uses them.
const (
	Branch     = "main"
	RemoteName = "origin"
)

var branchRef = plumbing.NewBranchReferenceName(Branch)

// Repo is memory/ as a git repository.
type Repo struct {
	dir     string // worktree root
	gitDir  string
	r       *git.Repository
	machine string
	now     func() time.Time

	// tooLarge collects the files the last commit left out for their
	// size (see stageTouched); the caller holds the lock.
	tooLarge []string

	// beforeMerge runs between fetch and merge; tests use it to edit notes
	// at the worst moment.
	beforeMerge func()
	// checkoutTemp runs while a checkout's temporary file exists, before
	// it is renamed into place; tests use it to run a reader at that
	// moment.
	checkoutTemp func(tmp string)
	// treeEntries counts the entries of every tree encoded (the work a
	// commit's trees cost); tests read it.
	treeEntries int
}

// Open opens the repository at dir, initializing it (branch main) on first
// use. machine names this machine in commit identities.
func Open(ctx context.Context, dir, machine string, now func() time.Time) (*Repo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	gitDir := filepath.Join(dir, ".git")
	var r *git.Repository
	var err error
	if _, statErr := os.Stat(gitDir); statErr == nil {
		r, err = git.PlainOpen(dir)
		if err != nil {
			return nil, fmt.Errorf("open git repository %s: %w", dir, err)
		}
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		r, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: branchRef}})
		if err != nil {
			return nil, fmt.Errorf("init git repository %s: %w", dir, err)
		}
	}
	return &Repo{dir: dir, gitDir: gitDir, r: r, machine: machine, now: now}, nil
}

// configure applies the repository settings a sync relies on: origin
// pointing at remote (added, changed or removed as the configuration
// says, so a remote added after a local-only start just works), and
// pack.window 0 (go-git otherwise searches every pair of notes for deltas
// when it builds a pack to push: seconds on a first push, little saved on
// small text files). The caller holds the lock.
func (g *Repo) configure(remote string, manageRemote bool) error {
	cfg, err := g.r.Config()
	if err != nil {
		return fmt.Errorf("read git config: %w", err)
	}
	changed := false
	if cfg.Raw.Section("pack").Option("window") != "0" {
		cfg.Pack.Window = 0
		cfg.Raw.Section("pack").SetOption("window", "0")
		changed = true
	}
	// .git/config is readable by every local user and printed by git
	// tools: it keeps the remote without its secret, which stays where the
	// user put it (config.json or ANAMNESIS_GIT_REMOTE) and reaches go-git
	// as an auth method. An older version stored it whole: clean that.
	remote = withoutSecret(remote)
	cur, ok := cfg.Remotes[RemoteName]
	if ok && !manageRemote {
		for i, u := range cur.URLs {
			if clean := withoutSecret(u); clean != u {
				cur.URLs[i] = clean
				changed = true
			}
		}
	}
	if manageRemote {
		switch {
		case remote == "" && ok:
			delete(cfg.Remotes, RemoteName)
			cfg.Raw.RemoveSubsection("remote", RemoteName)
			changed = true
		case remote != "" && (!ok || len(cur.URLs) != 1 || cur.URLs[0] != remote):
			cfg.Remotes[RemoteName] = &config.RemoteConfig{
				Name:  RemoteName,
				URLs:  []string{remote},
				Fetch: []config.RefSpec{config.RefSpec("+refs/heads/*:refs/remotes/" + RemoteName + "/*")},
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return writeConfig(g.gitDir, cfg)
}

// writeConfig replaces .git/config atomically; go-git's SetConfig writes
// it in place, and a process reading it meanwhile (another sync starting,
// the git CLI) could see half a file.
func writeConfig(gitDir string, cfg *config.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("git config: %w", err)
	}
	data, err := cfg.Marshal()
	if err != nil {
		return fmt.Errorf("encode git config: %w", err)
	}
	if err := note.WriteFileAtomic(filepath.Join(gitDir, "config"), data); err != nil {
		return fmt.Errorf("write git config: %w", err)
	}
	return nil
}

// Dir is the worktree root.
func (g *Repo) Dir() string { return g.dir }

// GitDir is the .git directory.
func (g *Repo) GitDir() string { return g.gitDir }

// Git exposes the underlying go-git repository to tests and reports.
func (g *Repo) Git() *git.Repository { return g.r }

// signature is the author and committer of every commit made here. The
// machine id is checked where it is configured, but this is the last
// place before an object exists: an identity with '<', '>' or a newline
// makes a commit git fsck rejects, and a hub that checks objects (as
// hosted git does) would then refuse every push, so such characters never
// reach the author line.
func (g *Repo) signature() object.Signature {
	return object.Signature{Name: "anamnesis", Email: "anamnesis@" + identitySafe(g.machine), When: g.now().UTC().Truncate(time.Second)}
}

// identitySafe replaces what git does not accept inside an identity's
// email ('<', '>', control characters such as newline and NUL) with '-'.
func identitySafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return '-'
		}
		return r
	}, s)
}

// commitMessage is the subject the Python tool writes; its dashboard
// parses it, so keep it.
func (g *Repo) commitMessage() string {
	return fmt.Sprintf("anamnesis: sync from %s at %s\n", identitySafe(g.machine), g.now().UTC().Format("2006-01-02T15:04:05+00:00"))
}

// Head returns the commit main points at, or the zero hash before the
// first commit.
func (g *Repo) Head() (plumbing.Hash, error) {
	ref, err := g.r.Reference(branchRef, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", branchRef, err)
	}
	return ref.Hash(), nil
}

// entry is one file of a tree.
type entry struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// flatten lists every file of a tree by path. A zero hash is the empty tree.
func (g *Repo) flatten(treeHash plumbing.Hash) (map[string]entry, error) {
	out := map[string]entry{}
	if treeHash.IsZero() {
		return out, nil
	}
	t, err := g.r.TreeObject(treeHash)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", treeHash, err)
	}
	// A TreeWalker reads only tree objects; Tree.Files() would load every
	// blob just to report its name.
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walk tree %s: %w", treeHash, err)
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
			continue
		}
		if len(out) == MaxTreeFiles {
			// Checked commits cannot get here (their directories are
			// bounded, the pack's objects too); this bounds what a merge
			// holds in memory for any tree.
			return nil, fmt.Errorf("tree %s lists more than %d files, more than a store holds", treeHash, MaxTreeFiles)
		}
		out[name] = entry{Mode: e.Mode, Hash: e.Hash}
	}
	return out, nil
}

func (g *Repo) commitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := g.r.CommitObject(h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
	}
	return c.TreeHash, nil
}

// readBlob reads a file's content, at most MaxBlobSize bytes: incoming
// blobs were checked by size before (verifyIncoming), and this bound
// holds for any other caller too.
func (g *Repo) readBlob(h plumbing.Hash) ([]byte, error) {
	return g.rawObject(h, plumbing.BlobObject, MaxBlobSize)
}

func (g *Repo) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := g.r.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := g.r.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write blob: %w", err)
	}
	return h, nil
}

// buildTree writes the nested tree objects for a flat path -> entry map
// and returns the root tree hash. Entries are sorted the way git sorts
// them (a directory compares as its name plus "/"), or git fsck complains.
func (g *Repo) buildTree(files map[string]entry) (plumbing.Hash, error) {
	type dir struct {
		files map[string]entry
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]entry{}, dirs: map[string]*dir{}} }
	root := newDir()
	for p, e := range files {
		parts := strings.Split(p, "/")
		d := root
		for _, part := range parts[:len(parts)-1] {
			sub, ok := d.dirs[part]
			if !ok {
				sub = newDir()
				d.dirs[part] = sub
			}
			d = sub
		}
		d.files[parts[len(parts)-1]] = e
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var entries []object.TreeEntry
		for name, e := range d.files {
			entries = append(entries, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		sort.Slice(entries, func(i, j int) bool { return gitSortKey(entries[i]) < gitSortKey(entries[j]) })
		return g.writeTree(entries)
	}
	return write(root)
}

// updateTree applies changes (path -> new entry, nil for a deletion) to
// the tree base and returns the new root. Only the directories on a
// changed path's way are read and written; every other subtree keeps its
// hash, so a commit of one note costs the depth of its path, not the
// store. The result is what buildTree makes of base's files with the
// changes applied: entries in git's order, no empty directories.
func (g *Repo) updateTree(base plumbing.Hash, changes map[string]*entry) (plumbing.Hash, error) {
	if len(changes) == 0 {
		return base, nil
	}
	var entries []object.TreeEntry
	if !base.IsZero() {
		t, err := g.r.TreeObject(base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", base, err)
		}
		entries = t.Entries
	}
	files := map[string]*entry{}
	dirs := map[string]map[string]*entry{}
	for p, e := range changes {
		first, rest, sub := splitFirst(p)
		if !sub {
			files[first] = e
			continue
		}
		if dirs[first] == nil {
			dirs[first] = map[string]*entry{}
		}
		dirs[first][rest] = e
	}
	out := make([]object.TreeEntry, 0, len(entries)+len(files)+len(dirs))
	for _, te := range entries {
		isDir := te.Mode == filemode.Dir
		if _, ok := files[te.Name]; ok && !isDir {
			continue // replaced or deleted below
		}
		if _, ok := dirs[te.Name]; ok && !isDir {
			continue // a file that became a directory
		}
		if sub, ok := dirs[te.Name]; ok && isDir {
			h, err := g.updateTree(te.Hash, sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			delete(dirs, te.Name)
			if h.IsZero() {
				continue // emptied: git keeps no empty trees
			}
			out = append(out, object.TreeEntry{Name: te.Name, Mode: filemode.Dir, Hash: h})
			continue
		}
		if e, ok := files[te.Name]; ok && isDir && e != nil {
			continue // a directory that became a file
		}
		out = append(out, te)
	}
	for name, e := range files {
		if e != nil {
			out = append(out, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
	}
	for name, sub := range dirs {
		h, err := g.updateTree(plumbing.ZeroHash, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if !h.IsZero() {
			out = append(out, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	sort.Slice(out, func(i, j int) bool { return gitSortKey(out[i]) < gitSortKey(out[j]) })
	return g.writeTree(out)
}

// writeTree stores a tree of sorted entries unless it exists already.
func (g *Repo) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	g.treeEntries += len(entries)
	t := &object.Tree{Entries: entries}
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	// Most trees of a commit already exist; writing them again would
	// compress and store 10,000-entry objects for nothing.
	if g.r.Storer.HasEncodedObject(obj.Hash()) == nil {
		return obj.Hash(), nil
	}
	h, err := g.r.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write tree: %w", err)
	}
	return h, nil
}

func gitSortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// writeCommit stores a commit object and returns its hash.
func (g *Repo) writeCommit(tree plumbing.Hash, parents []plumbing.Hash, msg string) (plumbing.Hash, error) {
	sig := g.signature()
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: parents}
	obj := g.r.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode commit: %w", err)
	}
	h, err := g.r.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	return h, nil
}

// moveBranch sets main from old to new, failing if someone else moved it.
// It does what git does: create refs/heads/main.lock exclusively, check the
// current value, write the new one to the lock file and rename it over the
// ref. go-git's own reference writes truncate and rewrite the file in
// place, so a reader (a peer fetching from `anamnesis serve`, the git CLI)
// could see it empty. HEAD is pointed at main if it is not already.
func (g *Repo) moveBranch(old, new plumbing.Hash) error {
	refPath := filepath.Join(g.gitDir, "refs", "heads", Branch)
	lock := refPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
		return fmt.Errorf("move %s: %w", Branch, err)
	}
	f, err := createRefLock(lock)
	if err != nil {
		return fmt.Errorf("move %s: %w", Branch, err)
	}
	defer os.Remove(lock) // no-op after the rename
	cur, err := g.r.Storer.Reference(branchRef)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if !old.IsZero() {
			f.Close()
			return fmt.Errorf("branch %s disappeared during sync", Branch)
		}
	case err != nil:
		f.Close()
		return fmt.Errorf("read %s: %w", branchRef, err)
	case cur.Hash() != old:
		f.Close()
		return fmt.Errorf("branch %s moved during sync (now %s, expected %s)", Branch, cur.Hash(), old)
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", lock, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", lock, err)
	}
	f.Close()
	if err := platform.Rename(lock, refPath); err != nil {
		return fmt.Errorf("move %s to %s: %w", Branch, new, err)
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, branchRef)
	if cur, err := g.r.Storer.Reference(plumbing.HEAD); err != nil || cur.Type() != plumbing.SymbolicReference || cur.Target() != branchRef {
		if err := g.r.Storer.SetReference(head); err != nil {
			return fmt.Errorf("point HEAD at %s: %w", Branch, err)
		}
	}
	return nil
}

// createRefLock creates a ref's .lock file exclusively. The caller holds
// the anamnesis flock, so a lock file that outlives a second (a git CLI
// holds one for milliseconds) was left by a process killed mid-update:
// it is stale and removed, or every later sync would fail.
func createRefLock(lock string) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if i == 20 {
			if rmErr := os.Remove(lock); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				return nil, fmt.Errorf("remove stale %s: %w", lock, rmErr)
			}
			continue
		}
		if i > 20 {
			return nil, fmt.Errorf("%s keeps coming back: another git process is updating the branch", lock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func blobHash(data []byte) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, data) }

// WalkLog calls fn with main's commits, newest first by committer time,
// at most n of them, until fn asks to stop. complete reports that nothing
// was left unread: the history ended, or fn stopped the walk. An empty
// repository is complete at once.
func (g *Repo) WalkLog(ctx context.Context, n int, fn func(*object.Commit) (stop bool, err error)) (complete bool, err error) {
	head, err := g.Head()
	if err != nil || head.IsZero() {
		return err == nil, err
	}
	iter, err := g.r.Log(&git.LogOptions{From: head, Order: git.LogOrderCommitterTime})
	if err != nil {
		return false, fmt.Errorf("read history: %w", err)
	}
	defer iter.Close()
	for i := 0; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		c, err := iter.Next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read history: %w", err)
		}
		if i == n {
			return false, nil // one more than asked for: the walk was cut short
		}
		if stop, err := fn(c); err != nil || stop {
			return err == nil, err
		}
	}
	return false, nil
}

// LastCommitByMachine maps each machine id to the committer time of its
// newest commit (authored anamnesis@MACHINE) among the newest n commits of
// main, formatted as `git log --format=%cI` prints it. An empty repository
// gives an empty map.
func (g *Repo) LastCommitByMachine(ctx context.Context, n int) (map[string]string, error) {
	out := map[string]string{}
	_, err := g.WalkLog(ctx, n, func(c *object.Commit) (bool, error) {
		m, ok := strings.CutPrefix(c.Author.Email, "anamnesis@")
		if ok && out[m] == "" {
			out[m] = c.Committer.When.Format("2006-01-02T15:04:05-07:00")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
