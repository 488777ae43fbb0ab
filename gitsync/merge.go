package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
)

// ErrDirtyPath means a file the merge must update was changed on disk
// after the sync committed it (a note edited mid-sync). Nothing was
// touched; the next sync commits the edit and merges again.
var ErrDirtyPath = errors.New("a note changed on disk during the sync")

// MergeResult says what merging another head did.
type MergeResult struct {
	Old, New  Hash     // main before and after
	UpToDate  bool     // theirs was already contained in ours
	FastFwd   bool     // ours was contained in theirs
	Merged    bool     // a merge commit with two parents was made
	Changed   []string // worktree paths written or removed
	Conflicts []string // conflict copies created
}

// change is one path's state after a commit relative to a base tree.
type change struct {
	deleted bool
	e       entry
}

// diffCommits returns what differs in commit to from commit from (either
// may be zero, the empty tree), and from's entries of those paths: what
// checkout writes and ChangedPaths lists.
func (g *Repo) diffCommits(from, to plumbing.Hash) (map[string]entry, map[string]change, error) {
	fromTree, err := g.commitTree(from)
	if err != nil {
		return nil, nil, err
	}
	toTree, err := g.commitTree(to)
	if err != nil {
		return nil, nil, err
	}
	return g.diffTreeObjects(fromTree, toTree)
}

// diffTreeObjects is diffTrees of two trees' files without listing them:
// subtrees of equal hash are skipped, and the two versions of a changed
// directory are walked side by side as raw bytes. A pull of 100 notes
// into 100,000 listed both whole trees into maps (flatten) before.
func (g *Repo) diffTreeObjects(from, to plumbing.Hash) (map[string]entry, map[string]change, error) {
	fromFiles, out := map[string]entry{}, map[string]change{}
	if err := g.diffRaw(from, to, "", fromFiles, out); err != nil {
		return nil, nil, err
	}
	return fromFiles, out, nil
}

func (g *Repo) diffRaw(from, to plumbing.Hash, prefix string, fromFiles map[string]entry, out map[string]change) error {
	if from == to {
		return nil
	}
	var a, b []byte
	var err error
	if !from.IsZero() {
		if a, err = g.readTreeRaw(from); err != nil {
			return err
		}
	}
	if !to.IsZero() {
		if b, err = g.readTreeRaw(to); err != nil {
			return err
		}
	}
	// Submodules are not files (flatten skipped them too; verifyIncoming
	// refuses them).
	file := func(e rawTreeEntry) bool { return e.mode != filemode.Dir && e.mode != filemode.Submodule }
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if len(out) > MaxTreeFiles {
			return fmt.Errorf("trees %s and %s differ in more than %d files, more than a store holds", from, to, MaxTreeFiles)
		}
		var ea, eb rawTreeEntry
		c := 0
		switch {
		case i >= len(a):
			c = 1
		case j >= len(b):
			c = -1
		}
		if i < len(a) {
			if ea, err = parseRawTreeEntry(a, i); err != nil {
				return fmt.Errorf("read tree %s: %w", from, err)
			}
		}
		if j < len(b) {
			if eb, err = parseRawTreeEntry(b, j); err != nil {
				return fmt.Errorf("read tree %s: %w", to, err)
			}
		}
		if c == 0 {
			c = compareTreeKeys(ea.name, ea.mode == filemode.Dir, eb.name, eb.mode == filemode.Dir)
		}
		switch {
		case c < 0: // only in from
			p := prefix + string(ea.name)
			if ea.mode == filemode.Dir {
				err = g.diffRaw(ea.hash, plumbing.ZeroHash, p+"/", fromFiles, out)
			} else if file(ea) {
				fromFiles[p] = entry{Mode: ea.mode, Hash: ea.hash}
				out[p] = change{deleted: true}
			}
			i = ea.next
		case c > 0: // only in to
			p := prefix + string(eb.name)
			if eb.mode == filemode.Dir {
				err = g.diffRaw(plumbing.ZeroHash, eb.hash, p+"/", fromFiles, out)
			} else if file(eb) {
				out[p] = change{e: entry{Mode: eb.mode, Hash: eb.hash}}
			}
			j = eb.next
		default:
			p := prefix + string(ea.name)
			switch {
			case ea.mode == filemode.Dir:
				err = g.diffRaw(ea.hash, eb.hash, p+"/", fromFiles, out)
			case ea.hash == eb.hash && ea.mode == eb.mode:
			case file(ea) && file(eb):
				fromFiles[p] = entry{Mode: ea.mode, Hash: ea.hash}
				out[p] = change{e: entry{Mode: eb.mode, Hash: eb.hash}}
			case file(ea):
				fromFiles[p] = entry{Mode: ea.mode, Hash: ea.hash}
				out[p] = change{deleted: true}
			case file(eb):
				out[p] = change{e: entry{Mode: eb.mode, Hash: eb.hash}}
			}
			i, j = ea.next, eb.next
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergeBase picks the merge base deterministically: go-git returns all
// best common ancestors (two in a criss-cross), in no promised order.
func mergeBase(l, r *object.Commit) (plumbing.Hash, error) {
	bases, err := l.MergeBase(r)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("find merge base of %s and %s: %w", l.Hash, r.Hash, err)
	}
	if len(bases) == 0 {
		return plumbing.ZeroHash, nil // unrelated histories: merge from the empty tree
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i].Hash.String() < bases[j].Hash.String() })
	return bases[0].Hash, nil
}

// Merge brings theirs into main: nothing when it is already contained, a
// fast-forward when ours is contained in it, and otherwise a per-path
// three-way merge committed with two parents. The worktree is updated for
// the changed paths only. The caller holds the lock and has committed
// local changes first.
func (g *Repo) Merge(ctx context.Context, theirsHash Hash) (MergeResult, error) {
	theirs := plumbing.Hash(theirsHash)
	res := MergeResult{}
	head, err := g.head()
	if err != nil {
		return res, err
	}
	res.Old, res.New = Hash(head), Hash(head)
	if theirs.IsZero() || theirs == head {
		res.UpToDate = true
		return res, nil
	}
	// Everything theirs brings is checked before any of it is used; the
	// same walk tells whether there is anything to merge.
	upToDate, fastForward, err := g.verifyIncoming(ctx, head, theirs)
	if err != nil {
		return res, err
	}
	if upToDate {
		res.UpToDate = true
		return res, nil
	}
	if head.IsZero() || fastForward {
		res.FastFwd = true
		return g.finish(ctx, res, theirs)
	}
	R, err := g.r.CommitObject(theirs)
	if err != nil {
		return res, fmt.Errorf("read commit %s: %w", theirs, err)
	}
	L, err := g.r.CommitObject(head)
	if err != nil {
		return res, fmt.Errorf("read commit %s: %w", head, err)
	}
	baseHash, err := mergeBase(L, R)
	if err != nil {
		return res, err
	}
	baseTree, err := g.commitTree(baseHash)
	if err != nil {
		return res, err
	}
	// Only what changed on either side is listed (diffTreeObjects), and
	// the merged tree is ours with their changes applied along their
	// paths: a merge costs the changes, not the store.
	baseL, chL, err := g.diffTreeObjects(baseTree, L.TreeHash)
	if err != nil {
		return res, err
	}
	baseR, chR, err := g.diffTreeObjects(baseTree, R.TreeHash)
	if err != nil {
		return res, err
	}
	maps.Copy(baseL, baseR) // base's entries of every changed path
	changes, conflicts, err := g.mergeTrees(baseL, chL, chR, head, theirs)
	if err != nil {
		return res, err
	}
	tree, err := g.updateTree(L.TreeHash, changes)
	if err != nil {
		return res, err
	}
	if tree.IsZero() {
		if tree, err = g.writeTree(nil); err != nil { // every file deleted
			return res, err
		}
	}
	msg := fmt.Sprintf("anamnesis: merge %s into %s on %s\n", theirs.String()[:8], head.String()[:8], g.machine)
	// Parents in a fixed order (ours first, as git does); the tree, not the
	// commit, is what must agree between machines.
	c, err := g.writeCommit(tree, []plumbing.Hash{head, theirs}, msg)
	if err != nil {
		return res, err
	}
	res.Merged, res.Conflicts = true, conflicts
	return g.finish(ctx, res, c)
}

// madeByDepth bounds the commits madeBy walks: the versions a merge
// meets were made since the merge base, a few syncs ago.
const madeByDepth = 500

// madeBy names the machine (its commits' author, anamnesis@MACHINE)
// whose commit brought blob to path p in tip's history: the walk follows
// a parent that has the same blob there, whichever parent it is, so a
// version merged in from a third machine is credited to that machine.
// Both machines of a merge walk the same commits, so they agree. ""
// when the history does not say within madeByDepth commits.
func (g *Repo) madeBy(tip plumbing.Hash, p string, blob plumbing.Hash) string {
	trees := g.Trees() // consecutive commits share most of their trees
	c, err := g.r.CommitObject(tip)
	for steps := 0; err == nil && steps < madeByDepth; steps++ {
		var next *object.Commit
		for _, ph := range c.ParentHashes {
			pc, perr := g.r.CommitObject(ph)
			if perr != nil {
				continue
			}
			if h, berr := trees.BlobAt(Hash(pc.TreeHash), p); berr == nil && plumbing.Hash(h) == blob {
				next = pc
				break
			}
		}
		if next == nil {
			// Another machine's text, bound for a note's frontmatter:
			// only what a machine id written by anamnesis can hold.
			m, ok := strings.CutPrefix(c.Author.Email, "anamnesis@")
			if !ok || len(m) > 64 || strings.IndexFunc(m, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
			}) >= 0 {
				return ""
			}
			return m
		}
		c = next
	}
	return ""
}

// mergeTrees applies the per-path policy: one-sided changes win, delete
// against edit keeps the edit, two edits merge as notes. base holds the
// base's entries of the changed paths, chL and chR each side's changes
// from the base; it returns the changes to make to ours (nil: delete).
// The commits name the machine of each version in a conflict copy.
func (g *Repo) mergeTrees(base map[string]entry, chL, chR map[string]change, oursCommit, theirsCommit plumbing.Hash) (map[string]*entry, []string, error) {
	out := map[string]*entry{}
	paths := make([]string, 0, len(chR))
	for p := range chR {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var conflicts []string
	for _, p := range paths {
		cr := chR[p]
		cl, both := chL[p]
		if !cr.deleted {
			// Refused as theirs, before anything is read or written.
			if err := g.checkBlobSize(theirsCommit, p, cr.e.Hash); err != nil {
				return nil, nil, err
			}
		}
		switch {
		case !both:
			if cr.deleted {
				out[p] = nil
			} else {
				out[p] = &cr.e
			}
		case cl.deleted && cr.deleted, !cl.deleted && !cr.deleted && cl.e == cr.e:
			// same result on both sides
		case cl.deleted:
			out[p] = &cr.e // deleted here, edited there: keep the edit
		case cr.deleted:
			// edited here, deleted there: keep ours (already in out)
		default:
			var baseData []byte
			if be, ok := base[p]; ok {
				var err error
				if baseData, err = g.readBlob(be.Hash); err != nil {
					return nil, nil, err
				}
			}
			a, err := g.readBlob(cl.e.Hash)
			if err != nil {
				return nil, nil, err
			}
			b, err := g.readBlob(cr.e.Hash)
			if err != nil {
				return nil, nil, err
			}
			m := mergeNoteBy(p, baseData, a, b, g.madeBy(oursCommit, p, cl.e.Hash), g.madeBy(theirsCommit, p, cr.e.Hash))
			h, err := g.writeBlob(m.merged)
			if err != nil {
				return nil, nil, err
			}
			mode := cl.e.Mode
			if cr.e.Mode != mode && cr.e.Mode.String() > mode.String() {
				mode = cr.e.Mode
			}
			out[p] = &entry{Mode: mode, Hash: h}
			if m.copyPath != "" {
				ch, err := g.writeBlob(m.copyData)
				if err != nil {
					return nil, nil, err
				}
				out[m.copyPath] = &entry{Mode: filemode.Regular, Hash: ch}
				conflicts = append(conflicts, m.copyPath)
			}
		}
	}
	return out, conflicts, nil
}

// finish moves the worktree, the index and main from res.Old to target.
func (g *Repo) finish(ctx context.Context, res MergeResult, target plumbing.Hash) (MergeResult, error) {
	changed, err := g.checkout(ctx, plumbing.Hash(res.Old), target)
	if err != nil {
		return res, err
	}
	res.New, res.Changed = Hash(target), changed
	return res, nil
}

// checkout updates only the paths that differ between the commits from
// and to. It first verifies that each of them is on disk exactly as in
// from (or absent if from lacks it) and refuses with ErrDirtyPath
// otherwise, so a note edited after the sync's commit, or an untracked
// file where an incoming note goes, is never overwritten. Then files are
// written (temp + rename), the index updated, and main moved with a
// compare-and-swap. A crash in between leaves files that equal the merge
// result uncommitted, which the next sync commits: no silent revert.
func (g *Repo) checkout(ctx context.Context, from, to plumbing.Hash) ([]string, error) {
	fromTree, err := g.commitTree(from)
	if err != nil {
		return nil, err
	}
	toTree, err := g.commitTree(to)
	if err != nil {
		return nil, err
	}
	ff, chs, err := g.diffTreeObjects(fromTree, toTree)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(chs))
	for p := range chs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if c := chs[p]; !c.deleted {
			if err := g.checkBlobSize(to, p, c.e.Hash); err != nil {
				return nil, err
			}
		}
		// Nothing is written through a link: a directory on the way that
		// is one stops the checkout before any file is touched.
		if err := g.realParents(p); err != nil {
			return nil, err
		}
		abs := filepath.Join(g.dir, filepath.FromSlash(p))
		want, tracked := ff[p]
		_, statErr := statFile(abs)
		if errors.Is(statErr, os.ErrNotExist) {
			continue // absent (or deleted locally after the commit: the merge may restore it)
		}
		if errors.Is(statErr, ErrSymlink) {
			return nil, statErr
		}
		if statErr != nil {
			return nil, fmt.Errorf("%w: %s (%v)", ErrDirtyPath, p, statErr)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", abs, err)
		}
		if !tracked || blobHash(data) != want.Hash {
			return nil, fmt.Errorf("%w: %s", ErrDirtyPath, p)
		}
	}
	// Past this point a cancel would leave the checkout half done (as safe
	// as a crash, but needless): the last chance to stop is here.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Files must be on disk before main moves (else a crash could leave a
	// torn file that the next commit would record). Few files: fsync each;
	// many (a first pull): one sync(2) is far cheaper than thousands.
	perFile := len(paths) <= 64
	for _, p := range paths {
		abs := filepath.Join(g.dir, filepath.FromSlash(p))
		c := chs[p]
		if c.deleted {
			if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove %s: %w", abs, err)
			}
			continue
		}
		data, err := g.readBlob(c.e.Hash)
		if err != nil {
			return nil, err
		}
		if err := writeWorktreeFile(abs, data, c.e.Mode, perFile, g.checkoutTemp); err != nil {
			return nil, err
		}
	}
	if !perFile && !platform.SyncAll() {
		// No sync(2) here (Windows): flush each file after all.
		for _, p := range paths {
			if !chs[p].deleted {
				if err := syncFile(filepath.Join(g.dir, filepath.FromSlash(p))); err != nil {
					return nil, err
				}
			}
		}
	}
	idx, mark, err := g.loadIndex()
	if err != nil {
		return nil, err
	}
	// One pass drops every stage of the changed paths (idx.Remove scans
	// the whole index per call: a pull of 1,000 notes into 100,000 was
	// 10^8 comparisons); the new entries are appended and sorted on save.
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if _, ok := chs[e.Name]; !ok {
			kept = append(kept, e)
		}
	}
	idx.Entries = kept
	for _, p := range paths {
		c := chs[p]
		if c.deleted {
			continue
		}
		e := idx.Add(p)
		e.Hash, e.Mode = c.e.Hash, c.e.Mode
		if wf, err := statFile(filepath.Join(g.dir, filepath.FromSlash(p))); err == nil {
			e.Size, e.ModifiedAt = uint32(wf.size), wf.mtime
		}
	}
	// An index that was from's tree is now to's: say so, and the next
	// commit starts from to's tree. Otherwise nothing is claimed.
	var newMark plumbing.Hash
	if !mark.IsZero() && mark == fromTree {
		newMark = toTree
	}
	if err := g.moveBranch(from, to); err != nil {
		return nil, err
	}
	if err := g.saveIndex(idx, newMark); err != nil {
		return nil, err
	}
	return paths, nil
}

func writeWorktreeFile(abs string, data []byte, mode filemode.FileMode, durable bool, beforeRename func(string)) error {
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(abs), err)
	}
	tmp := abs + ".anamnesis-tmp"
	os.Remove(tmp) // a leftover of a killed sync (or a planted link: removed, not followed)
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	// O_EXCL: never open through a link that appeared at tmp meanwhile.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			os.Remove(tmp)
			return fmt.Errorf("sync %s: %w", abs, err)
		}
	}
	f.Close()
	if beforeRename != nil {
		beforeRename(tmp)
	}
	if err := platform.Rename(tmp, abs); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename into %s: %w", abs, err)
	}
	return nil
}

// syncFile fsyncs the file at path (symlinks are left alone: their
// target is not ours to flush).
func syncFile(path string) error {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s to sync it: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
