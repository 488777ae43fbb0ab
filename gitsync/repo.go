package gitsync

import (
	"bufio"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
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
	// trees keeps the raw trees read and written lately: a sync reads the
	// same big directories to commit, to verify what came and to check it
	// out.
	trees treeCache
	// treeReads counts trees read from the object store, not the cache;
	// tests read it.
	treeReads atomic.Int32
	// treeEntries counts the entries of every tree encoded (the work a
	// commit's trees cost); tests read it.
	treeEntries int
	// indexDecodes counts whole decodes of .git/index (loadIndex): a
	// commit of a few paths and a sync with nothing to do need none;
	// tests read it.
	indexDecodes atomic.Int32 // atomic: Dirty runs beside a commit
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
func (g *Repo) Head() (Hash, error) {
	h, err := g.head()
	return Hash(h), err
}

// head is [Repo.Head] as go-git names it, for this package's own use.
func (g *Repo) head() (plumbing.Hash, error) {
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
	// Through our own reader: go-git's reads every pack's index in full
	// the first time it looks in a pack (25 ms at 100,000 notes), and
	// again after each fetch.
	objs := g.openObjects()
	defer objs.Close()
	tree, _, err := objs.commit(h) // its errors name h
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read a commit's tree: %w", err)
	}
	return tree, nil
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
		sort.Slice(entries, func(i, j int) bool { return treeEntryLess(entries[i], entries[j]) })
		return g.writeTree(entries)
	}
	return write(root)
}

// updateTree applies changes (path -> new entry, nil for a deletion) to
// the tree base and returns the new root (zero if it ends empty). Only the
// directories on a changed path's way are read and written; every other
// subtree keeps its hash, so a commit of one note costs the depth of its
// path, not the store. A directory is edited as raw bytes: its unchanged
// entries are copied as they are (decoding and encoding a 33,000-entry
// directory through go-git was a third of a commit at 100,000 notes). The
// result is what buildTree makes of base's files with the changes applied:
// entries in git's order, no empty directories.
func (g *Repo) updateTree(base plumbing.Hash, changes map[string]*entry) (plumbing.Hash, error) {
	if len(changes) == 0 {
		return base, nil
	}
	var raw []byte
	if !base.IsZero() {
		var err error
		if raw, err = g.readTreeRaw(base); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	ed := newTreeEdit(changes)
	// First pass: the entries of the changed names, which leave the raw
	// stream; what replaces them is inserted in order below.
	if err := walkRawTree(raw, ed.note); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", base, err)
	}
	add, err := g.treeAdditions(ed)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	out, entries, err := spliceRawTree(raw, ed.drop, add)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", base, err)
	}
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	g.treeEntries += entries
	h, err := g.writeLoose(plumbing.TreeObject, out)
	if err == nil {
		g.trees.put(h, out) // the next commit or the merge after it starts from this tree
	}
	return h, err
}

// treeEdit is updateTree's work on one directory: the changes to its own
// files, those below each subdirectory, and what the first pass over its
// raw entries found.
type treeEdit struct {
	files   map[string]*entry            // name -> new entry, nil for a deletion
	dirs    map[string]map[string]*entry // subdirectory -> its changes
	drop    []int                        // start offsets of raw entries that leave, in order
	subBase map[string]plumbing.Hash     // subdirectories edited: their trees now
}

func newTreeEdit(changes map[string]*entry) *treeEdit {
	ed := &treeEdit{files: map[string]*entry{}, dirs: map[string]map[string]*entry{}, subBase: map[string]plumbing.Hash{}}
	for p, e := range changes {
		first, rest, sub := strings.Cut(p, "/")
		if !sub {
			ed.files[first] = e
			continue
		}
		if ed.dirs[first] == nil {
			ed.dirs[first] = map[string]*entry{}
		}
		ed.dirs[first][rest] = e
	}
	return ed
}

// note is the first pass's look at one raw entry: a changed name leaves
// (a subdirectory to be edited is remembered), except a directory whose
// name only a file deletion mentions.
func (ed *treeEdit) note(start, _ int, mode filemode.FileMode, name []byte, h plumbing.Hash) {
	e, inFiles := ed.files[string(name)]
	_, inDirs := ed.dirs[string(name)]
	isDir := mode == filemode.Dir
	switch {
	case !inFiles && !inDirs:
		return
	case inDirs && isDir:
		ed.subBase[string(name)] = h // edited by treeAdditions
	case inFiles && isDir && e == nil:
		return // deleting a file of that name: the directory stays
	}
	ed.drop = append(ed.drop, start)
}

// treeAdditions are the entries ed inserts, sorted as git sorts a tree:
// the new files, and each edited subdirectory's new tree unless it ended
// empty or a file replaces it.
func (g *Repo) treeAdditions(ed *treeEdit) ([]object.TreeEntry, error) {
	var add []object.TreeEntry
	for name, e := range ed.files {
		if e != nil {
			add = append(add, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
	}
	for name, sub := range ed.dirs {
		if e, ok := ed.files[name]; ok && e != nil {
			continue // a file replaces the directory
		}
		h, err := g.updateTree(ed.subBase[name], sub)
		if err != nil {
			return nil, err
		}
		if !h.IsZero() {
			add = append(add, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	sort.Slice(add, func(i, j int) bool { return treeEntryLess(add[i], add[j]) })
	return add, nil
}

// spliceRawTree copies a tree's raw entries minus those starting at the
// offsets in drop, each of add inserted before the first raw entry that
// sorts after it. It returns the new content and its entry count.
func spliceRawTree(raw []byte, drop []int, add []object.TreeEntry) ([]byte, int, error) {
	out := make([]byte, 0, len(raw)+len(add)*64)
	entries := len(add)
	err := walkRawTree(raw, func(start, end int, mode filemode.FileMode, name []byte, _ plumbing.Hash) {
		for len(add) > 0 && compareTreeKeys(add[0].Name, add[0].Mode == filemode.Dir, name, mode == filemode.Dir) < 0 {
			out = appendTreeEntry(out, add[0])
			add = add[1:]
		}
		if len(drop) > 0 && drop[0] == start {
			drop = drop[1:]
			return
		}
		out = append(out, raw[start:end]...)
		entries++
	})
	for _, e := range add {
		out = appendTreeEntry(out, e)
	}
	return out, entries, err
}

// walkRawTree calls fn with each entry of a tree object's content: its
// byte range, mode, name and hash.
func walkRawTree(raw []byte, fn func(start, end int, mode filemode.FileMode, name []byte, h plumbing.Hash)) error {
	for off := 0; off < len(raw); {
		e, err := parseRawTreeEntry(raw, off)
		if err != nil {
			return err
		}
		fn(off, e.next, e.mode, e.name, e.hash)
		off = e.next
	}
	return nil
}

func appendTreeEntry(out []byte, e object.TreeEntry) []byte {
	out = strconv.AppendUint(out, uint64(e.Mode), 8)
	out = append(out, ' ')
	out = append(out, e.Name...)
	out = append(out, 0)
	return append(out, e.Hash[:]...)
}

// readTreeRaw reads a tree object's content: a loose one straight from
// its file (go-git's reader grows a buffer piece by piece; a 2 MB
// directory was a fifth of a commit at 100,000 notes), a packed one
// through go-git, at most MaxTreeBytes either way.
func (g *Repo) readTreeRaw(h plumbing.Hash) ([]byte, error) {
	if data, ok := g.trees.get(h); ok {
		return data, nil
	}
	data, err := g.readTreeUncached(h)
	if err == nil {
		g.trees.put(h, data)
	}
	return data, err
}

// readTreeUncached is readTreeRaw without the cache.
func (g *Repo) readTreeUncached(h plumbing.Hash) ([]byte, error) {
	g.treeReads.Add(1)
	hex := h.String()
	f, err := os.Open(filepath.Join(g.gitDir, "objects", hex[:2], hex[2:]))
	if errors.Is(err, fs.ErrNotExist) {
		return g.rawObject(h, plumbing.TreeObject, MaxTreeBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	defer f.Close()
	zr, err := zlib.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 64)
	hdr, err := br.ReadString(0)
	if err != nil || len(hdr) > 32 {
		return nil, fmt.Errorf("read tree %s: malformed header", h)
	}
	kind, sz, ok := strings.Cut(strings.TrimSuffix(hdr, "\x00"), " ")
	size, perr := strconv.ParseInt(sz, 10, 64)
	if !ok || kind != "tree" || perr != nil || size < 0 || size > MaxTreeBytes {
		return nil, fmt.Errorf("read tree %s: header %q", h, hdr)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	// Not rehashed, as go-git does not: a local object was hashed when
	// written, and every incoming one was checked (verifyIncoming).
	return data, nil
}

// writeTree stores a tree of sorted entries unless it exists already.
func (g *Repo) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	g.treeEntries += len(entries)
	t := &object.Tree{Entries: entries}
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	r, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	data, err := io.ReadAll(r) // a MemoryObject's reader hands back its buffer
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	return g.writeLoose(plumbing.TreeObject, data)
}

// writeLoose stores an object as a loose file unless it exists already
// (most trees of a commit do). It compresses at zlib's fastest level, as
// git does by default (core.looseCompression 1): go-git's writer uses the
// default level. A tree over storedTreeBytes is not compressed at all
// (see there). Like go-git's writer and git's, it writes a temporary
// file and renames it into place, without fsync: an object lost to a
// power cut is one the ref written after it (fsynced) may name, which
// git's own loose objects share.
func (g *Repo) writeLoose(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	hex := h.String()
	dir := filepath.Join(g.gitDir, "objects", hex[:2])
	// Only the loose file is looked for: asking go-git loads every pack's
	// index (5% of a SessionEnd at 100,000 notes), and a loose copy of a
	// packed object is harmless (git gc drops it), as git itself allows.
	if _, err := os.Lstat(filepath.Join(dir, hex[2:])); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", t, hex, err)
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", t, hex, err)
	}
	tmp := f.Name()
	fail := func(err error) (plumbing.Hash, error) {
		f.Close()
		os.Remove(tmp)
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", t, hex, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	level := zlib.BestSpeed
	if t == plumbing.TreeObject && len(data) > storedTreeBytes {
		level = zlib.NoCompression
	}
	zw, err := zlib.NewWriterLevel(bw, level)
	if err != nil {
		return fail(err)
	}
	if _, err := fmt.Fprintf(zw, "%s %d\x00", t, len(data)); err != nil {
		return fail(err)
	}
	if _, err := zw.Write(data); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o444); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", t, hex, err)
	}
	if err := platform.Rename(tmp, filepath.Join(dir, hex[2:])); err != nil {
		os.Remove(tmp)
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", t, hex, err)
	}
	return h, nil
}

// storedTreeBytes is the size above which a tree is written as zlib's
// stored blocks, uncompressed (a valid zlib stream: git and go-git read
// it as any other). The tree of a directory of 33,000 notes is 1.9 MB and
// every commit into that directory rewrites it: at level 1, compressing it
// (to 1.34 MB: its 20-byte hashes do not compress) was 23 ms of a write's
// CPU at 100,000 notes, and inflating it again for the next commit 15 ms,
// together half of the commit. Stored, both are a copy. The price is disk:
// 0.6 MB more per commit into such a directory until git gc packs the
// versions as deltas of each other, where the level no longer matters.
const storedTreeBytes = 256 << 10

// treeEntryLess orders tree entries as git sorts a tree (compareTreeKeys).
func treeEntryLess(a, b object.TreeEntry) bool {
	return compareTreeKeys(a.Name, a.Mode == filemode.Dir, b.Name, b.Mode == filemode.Dir) < 0
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

// LastCommitByMachine maps each machine id to the committer time of its
// newest commit (authored anamnesis@MACHINE) among the newest n commits of
// main, formatted as `git log --format=%cI` prints it. An empty repository
// gives an empty map.
func (g *Repo) LastCommitByMachine(ctx context.Context, n int) (map[string]string, error) {
	out := map[string]string{}
	_, err := g.walkLog(ctx, n, func(c *object.Commit) (bool, error) {
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
