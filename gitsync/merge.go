package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"
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
	d := treeDiff{g: g, from: map[string]entry{}, out: map[string]change{}}
	if err := d.diff(from, to, ""); err != nil {
		return nil, nil, err
	}
	return d.from, d.out, nil
}

// treeDiff collects what differs between two trees: from's entries of
// the changed paths, and the changes.
type treeDiff struct {
	g    *Repo
	from map[string]entry
	out  map[string]change
}

func (d *treeDiff) diff(from, to plumbing.Hash, prefix string) error {
	if from == to {
		return nil
	}
	a, err := d.g.treeRawOrEmpty(from)
	if err != nil {
		return err
	}
	b, err := d.g.treeRawOrEmpty(to)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if len(d.out) > MaxTreeFiles {
			return fmt.Errorf("trees %s and %s differ in more than %d files, more than a store holds", from, to, MaxTreeFiles)
		}
		ea, okA, err := rawEntryAt(a, i, from)
		if err != nil {
			return err
		}
		eb, okB, err := rawEntryAt(b, j, to)
		if err != nil {
			return err
		}
		switch c := compareSides(ea, okA, eb, okB); {
		case c < 0: // only in from
			err, i = d.pair(prefix, &ea, nil), ea.next
		case c > 0: // only in to
			err, j = d.pair(prefix, nil, &eb), eb.next
		default:
			err, i, j = d.pair(prefix, &ea, &eb), ea.next, eb.next
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// treeRawOrEmpty is a tree's content; the zero hash is the empty tree.
func (g *Repo) treeRawOrEmpty(h plumbing.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	return g.readTreeRaw(h)
}

// rawEntryAt parses the entry at off of tree's content raw; ok is false
// past its end.
func rawEntryAt(raw []byte, off int, tree plumbing.Hash) (rawTreeEntry, bool, error) {
	if off >= len(raw) {
		return rawTreeEntry{}, false, nil
	}
	e, err := parseRawTreeEntry(raw, off)
	if err != nil {
		return e, false, fmt.Errorf("read tree %s: %w", tree, err)
	}
	return e, true, nil
}

// compareSides orders the next entries of two trees being walked side by
// side, a side that has ended coming last.
func compareSides(a rawTreeEntry, okA bool, b rawTreeEntry, okB bool) int {
	switch {
	case !okA:
		return 1
	case !okB:
		return -1
	}
	return compareTreeKeys(a.name, a.mode == filemode.Dir, b.name, b.mode == filemode.Dir)
}

// pair records one name of the two trees: a is its entry in from, b in
// to (nil where absent). Entries of one name are both directories or
// both not (a directory sorts as its name and "/").
func (d *treeDiff) pair(prefix string, a, b *rawTreeEntry) error {
	name := a
	if name == nil {
		name = b
	}
	p := prefix + string(name.name)
	dirA, dirB := isDir(a), isDir(b)
	if dirA || dirB {
		var ha, hb plumbing.Hash
		if dirA {
			ha = a.hash
		}
		if dirB {
			hb = b.hash
		}
		return d.diff(ha, hb, p+"/")
	}
	fileA, fileB := isFile(a), isFile(b)
	if fileA && fileB && a.hash == b.hash && a.mode == b.mode {
		return nil
	}
	if fileA {
		d.from[p] = entry{Mode: a.mode, Hash: a.hash}
	}
	switch {
	case fileB:
		d.out[p] = change{e: entry{Mode: b.mode, Hash: b.hash}}
	case fileA:
		d.out[p] = change{deleted: true}
	}
	return nil
}

func isDir(e *rawTreeEntry) bool { return e != nil && e.mode == filemode.Dir }

// isFile: submodules are not files (flatten skipped them too;
// verifyIncoming refuses them).
func isFile(e *rawTreeEntry) bool {
	return e != nil && e.mode != filemode.Dir && e.mode != filemode.Submodule
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
	objs := g.openObjects()
	defer objs.Close()
	// Everything theirs brings is checked before any of it is used; the
	// same walk tells whether there is anything to merge, and from where.
	in, err := g.verifyIncoming(ctx, objs, head, theirs)
	switch {
	case err != nil:
		return res, err
	case in.upToDate:
		res.UpToDate = true
		return res, nil
	case head.IsZero() || in.fastForward:
		res.FastFwd = true
		return g.finish(ctx, objs, res, theirs, nil)
	}
	return g.mergeCommits(ctx, objs, res, head, theirs, in.base)
}

// mergeCommits makes and checks out the merge of head and theirs from
// base.
func (g *Repo) mergeCommits(ctx context.Context, objs *objects, res MergeResult, head, theirs, base plumbing.Hash) (MergeResult, error) {
	oursTree, err := g.commitTree(head)
	if err != nil {
		return res, err
	}
	theirsTree, err := g.commitTree(theirs)
	if err != nil {
		return res, err
	}
	baseTree, err := g.commitTree(base)
	if err != nil {
		return res, err
	}
	// Only what changed on either side is listed (diffTreeObjects), and
	// the merged tree is ours with their changes applied along their
	// paths: a merge costs the changes, not the store.
	baseL, chL, err := g.diffTreeObjects(baseTree, oursTree)
	if err != nil {
		return res, err
	}
	baseR, chR, err := g.diffTreeObjects(baseTree, theirsTree)
	if err != nil {
		return res, err
	}
	maps.Copy(baseL, baseR) // base's entries of every changed path
	changes, conflicts, err := g.mergeTrees(objs, baseL, chL, chR, head, theirs)
	if err != nil {
		return res, err
	}
	tree, err := g.updateTree(oursTree, changes)
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
	plan, err := g.mergePlan(oursTree, baseL, chL, chR, changes)
	if err != nil {
		return res, err
	}
	res.Merged, res.Conflicts = true, conflicts
	return g.finish(ctx, objs, res, c, &plan)
}

// checkoutPlan is what a checkout changes: the paths that differ, and
// the entries they have now (absent: the path is new).
type checkoutPlan struct {
	now     map[string]entry
	changes map[string]change
}

// mergePlan turns the merge's changes to ours into a checkout plan, so
// the checkout does not diff the trees again. Ours at a changed path is
// its change on our side, else the base's entry, else (a conflict copy
// neither side changed) what ours holds there.
func (g *Repo) mergePlan(oursTree plumbing.Hash, base map[string]entry, chL, chR map[string]change, changes map[string]*entry) (checkoutPlan, error) {
	plan := checkoutPlan{now: map[string]entry{}, changes: map[string]change{}}
	trees := g.Trees()
	for p, to := range changes {
		cur, have := base[p]
		if cl, ok := chL[p]; ok {
			cur, have = cl.e, !cl.deleted
		} else if _, ok := chR[p]; !ok && !have {
			h, err := trees.BlobAt(Hash(oursTree), p)
			if err != nil {
				return plan, err
			}
			cur, have = entry{Mode: filemode.Regular, Hash: plumbing.Hash(h)}, !h.IsZero()
		}
		switch {
		case to == nil && !have, to != nil && have && *to == cur:
			continue // as ours has it
		case to == nil:
			plan.changes[p] = change{deleted: true}
		default:
			plan.changes[p] = change{e: *to}
		}
		if have {
			plan.now[p] = cur
		}
	}
	return plan, nil
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
func (g *Repo) mergeTrees(objs *objects, base map[string]entry, chL, chR map[string]change, oursCommit, theirsCommit plumbing.Hash) (map[string]*entry, []string, error) {
	out := map[string]*entry{}
	var conflicts []string
	for _, p := range slices.Sorted(maps.Keys(chR)) {
		cr := chR[p]
		if !cr.deleted {
			// Refused as theirs, before anything is read or written.
			if err := objs.checkBlobSize(theirsCommit, p, cr.e.Hash); err != nil {
				return nil, nil, err
			}
		}
		cl, both := chL[p]
		switch {
		case !both && cr.deleted:
			out[p] = nil
		case !both:
			out[p] = &cr.e
		case cl.deleted && cr.deleted, !cl.deleted && !cr.deleted && cl.e == cr.e:
			// same result on both sides
		case cl.deleted:
			out[p] = &cr.e // deleted here, edited there: keep the edit
		case cr.deleted:
			// edited here, deleted there: keep ours (already in out)
		default:
			copyPath, err := g.mergeNote(objs, out, p, base, cl.e, cr.e, oursCommit, theirsCommit)
			if err != nil {
				return nil, nil, err
			}
			if copyPath != "" {
				conflicts = append(conflicts, copyPath)
			}
		}
	}
	return out, conflicts, nil
}

// mergeNote merges two edits of the note at p into out, and its conflict
// copy when the edits clash; it returns the copy's path ("" none).
func (g *Repo) mergeNote(objs *objects, out map[string]*entry, p string, base map[string]entry, ours, theirs entry, oursCommit, theirsCommit plumbing.Hash) (string, error) {
	var baseData []byte
	if be, ok := base[p]; ok {
		var err error
		if baseData, err = objs.blob(be.Hash); err != nil {
			return "", err
		}
	}
	a, err := objs.blob(ours.Hash)
	if err != nil {
		return "", err
	}
	b, err := objs.blob(theirs.Hash)
	if err != nil {
		return "", err
	}
	m := mergeNoteBy(p, baseData, a, b, g.madeBy(oursCommit, p, ours.Hash), g.madeBy(theirsCommit, p, theirs.Hash))
	h, err := g.writeBlob(m.merged)
	if err != nil {
		return "", err
	}
	mode := ours.Mode
	if theirs.Mode != mode && theirs.Mode.String() > mode.String() {
		mode = theirs.Mode
	}
	out[p] = &entry{Mode: mode, Hash: h}
	if m.copyPath == "" {
		return "", nil
	}
	ch, err := g.writeBlob(m.copyData)
	if err != nil {
		return "", err
	}
	out[m.copyPath] = &entry{Mode: filemode.Regular, Hash: ch}
	return m.copyPath, nil
}

// finish moves the worktree, the index and main from res.Old to target;
// plan is what differs between them when the merge knows (nil: the
// checkout diffs the two commits' trees).
func (g *Repo) finish(ctx context.Context, objs *objects, res MergeResult, target plumbing.Hash, plan *checkoutPlan) (MergeResult, error) {
	changed, err := g.checkout(ctx, objs, plumbing.Hash(res.Old), target, plan)
	if err != nil {
		return res, err
	}
	res.New, res.Changed = Hash(target), changed
	return res, nil
}

// checkout updates only the paths that differ between the commits from
// and to (plan, or the diff of their trees when plan is nil). It first
// verifies that each of them is on disk exactly as in from (or absent
// if from lacks it) and refuses with ErrDirtyPath otherwise, so a note
// edited after the sync's commit, or an untracked file where an
// incoming note goes, is never overwritten. Then files are written
// (temp + rename), the index updated, and main moved with a
// compare-and-swap. A crash in between leaves files that equal the
// merge result uncommitted, which the next sync commits: no silent
// revert.
func (g *Repo) checkout(ctx context.Context, objs *objects, from, to plumbing.Hash, plan *checkoutPlan) ([]string, error) {
	fromTree, err := g.commitTree(from)
	if err != nil {
		return nil, err
	}
	toTree, err := g.commitTree(to)
	if err != nil {
		return nil, err
	}
	if plan == nil {
		now, chs, err := g.diffTreeObjects(fromTree, toTree)
		if err != nil {
			return nil, err
		}
		plan = &checkoutPlan{now: now, changes: chs}
	}
	paths := slices.Sorted(maps.Keys(plan.changes))
	if err := g.checkClean(objs, to, paths, plan); err != nil {
		return nil, err
	}
	// Past this point a cancel would leave the checkout half done (as safe
	// as a crash, but needless): the last chance to stop is here.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := g.writeFiles(objs, slices.Clone(paths), plan.changes); err != nil {
		return nil, err
	}
	if err := g.recordCheckout(paths, plan.changes, from, to, fromTree, toTree); err != nil {
		return nil, err
	}
	return paths, nil
}

// checkClean checks, before anything is written, that each file to be
// written is one this machine may take (its size; no link on its way)
// and that each path is on disk as the checkout's start has it.
func (g *Repo) checkClean(objs *objects, to plumbing.Hash, paths []string, plan *checkoutPlan) error {
	for _, p := range paths {
		if c := plan.changes[p]; !c.deleted { // nothing inflated but a delta's first bytes
			if err := objs.checkBlobSize(to, p, c.e.Hash); err != nil {
				return err
			}
		}
		// Nothing is written through a link: a directory on the way that
		// is one stops the checkout before any file is touched.
		if err := g.realParents(p); err != nil {
			return err
		}
		want, tracked := plan.now[p]
		if err := g.asCommitted(p, want, tracked); err != nil {
			return err
		}
	}
	return nil
}

// asCommitted refuses with ErrDirtyPath when the file at p is not want
// (or, untracked, exists at all).
func (g *Repo) asCommitted(p string, want entry, tracked bool) error {
	abs := filepath.Join(g.dir, filepath.FromSlash(p))
	_, statErr := statFile(abs)
	switch {
	case errors.Is(statErr, os.ErrNotExist):
		return nil // absent (or deleted locally after the commit: the merge may restore it)
	case errors.Is(statErr, ErrSymlink):
		return statErr
	case statErr != nil:
		return fmt.Errorf("%w: %s (%v)", ErrDirtyPath, p, statErr)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return fmt.Errorf("read %s: %w", abs, err)
	}
	if !tracked || blobHash(data) != want.Hash {
		return fmt.Errorf("%w: %s", ErrDirtyPath, p)
	}
	return nil
}

// writeFiles writes and removes the files of a checkout. Files must be
// on disk before main moves (else a crash could leave a torn file that
// the next commit would record). Few files: fsync each; many (a first
// pull): one flush of the store's file system (syncfs(2) on Linux,
// sync(2) on other Unix systems) is far cheaper than thousands.
func (g *Repo) writeFiles(objs *objects, paths []string, chs map[string]change) error {
	perFile := len(paths) <= 64
	objs.readOrder(paths, func(p string) plumbing.Hash { return chs[p].e.Hash })
	// Directories made (or found) once per checkout, not stat'ed again for
	// each of a first sync's 100,000 files; checkClean has already refused
	// any that is a link.
	made := map[string]bool{}
	for _, p := range paths {
		abs := filepath.Join(g.dir, filepath.FromSlash(p))
		c := chs[p]
		if c.deleted {
			if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", abs, err)
			}
			continue
		}
		data, err := objs.blob(c.e.Hash)
		if err != nil {
			return err
		}
		if dir := filepath.Dir(abs); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", dir, err)
			}
			made[dir] = true
		}
		if err := writeWorktreeFile(abs, data, c.e.Mode, perFile, g.checkoutTemp); err != nil {
			return err
		}
	}
	if perFile || platform.SyncFS(g.dir) {
		return nil
	}
	// No file-system flush here (Windows): flush each file after all.
	for _, p := range paths {
		if !chs[p].deleted {
			if err := syncFile(filepath.Join(g.dir, filepath.FromSlash(p))); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordCheckout updates the git index for the checked-out paths and
// moves main from from to to.
func (g *Repo) recordCheckout(paths []string, chs map[string]change, from, to, fromTree, toTree plumbing.Hash) error {
	// Every entry of a changed path goes; the checked-out ones come back
	// with their stat data.
	staged := make(map[string]*gitindex.Entry, len(paths))
	for _, p := range paths {
		c := chs[p]
		if c.deleted {
			continue
		}
		e := &gitindex.Entry{Name: p, Hash: c.e.Hash, Mode: c.e.Mode}
		if wf, err := statFile(filepath.Join(g.dir, filepath.FromSlash(p))); err == nil {
			e.Size, e.ModifiedAt = uint32(wf.size), wf.mtime
		}
		staged[p] = e
	}
	// An index that was from's tree is now to's, and so is an empty one
	// of a first checkout: say so, and the next commit starts from to's
	// tree. Otherwise nothing is claimed.
	markAfter := func(mark plumbing.Hash, empty bool) plumbing.Hash {
		if (!mark.IsZero() && mark == fromTree) || (from.IsZero() && empty) {
			return toTree
		}
		return plumbing.ZeroHash
	}
	if done, err := g.recordCheckoutSpliced(chs, staged, from, to, markAfter); done || err != nil {
		return err
	}
	idx, mark, err := g.loadIndex()
	if err != nil {
		return err
	}
	newMark := markAfter(mark, len(idx.Entries) == 0)
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
	for _, e := range staged {
		idx.Entries = append(idx.Entries, e)
	}
	if err := g.moveBranch(from, to); err != nil {
		return err
	}
	return g.saveIndex(idx, newMark)
}

// recordCheckoutSpliced is recordCheckout editing the git index around
// the changed paths' entries (indexsplice.go) instead of decoding and
// encoding all of them: 50 ms of a pull of 100 notes into 100,000. done
// is false, and nothing changed, when the index is not fit for that
// (missing, of a shape only go-git reads, torn, with a conflict stage).
func (g *Repo) recordCheckoutSpliced(chs map[string]change, staged map[string]*gitindex.Entry, from, to plumbing.Hash,
	markAfter func(mark plumbing.Hash, empty bool) plumbing.Hash) (done bool, err error) {
	names := slices.Sorted(maps.Keys(chs))
	f, fi, err := g.openIndex()
	if err != nil {
		return false, nil
	}
	defer f.Close()
	found, err := findPaths(f, fi.Size(), names)
	if err != nil || found.scan.stages {
		return false, nil
	}
	if err := g.moveBranch(from, to); err != nil {
		return true, err
	}
	return true, g.replaceIndexSpliced(f, found, staged, markAfter(found.scan.tree, found.scan.count == 0))
}

// writeWorktreeFile writes data to abs, whose directory exists, through
// a temporary file renamed into place.
func writeWorktreeFile(abs string, data []byte, mode filemode.FileMode, durable bool, beforeRename func(string)) error {
	tmp := abs + ".anamnesis-tmp"
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	// O_EXCL: never open through a link at tmp. Something there is a
	// leftover of a killed sync or a planted link: removed (not followed)
	// and the open tried once more. Removing first on every file cost a
	// failed unlink per file of a first sync.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, os.ErrExist) {
		os.Remove(tmp)
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	}
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
