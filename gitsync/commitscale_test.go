package gitsync

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitindex "github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// looseObjects counts the loose objects under .git/objects.
func looseObjects(t *testing.T, gitDir string) int {
	t.Helper()
	n := 0
	dirs, err := os.ReadDir(filepath.Join(gitDir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(gitDir, "objects", d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += len(files)
	}
	return n
}

// gitTreeOfIndex is the tree git itself makes of our index's entries:
// they are listed by `git ls-files -s` and loaded into a fresh index
// (so no cache tree of ours is trusted), which `git write-tree` writes.
func gitTreeOfIndex(t *testing.T, dir string) string {
	t.Helper()
	ls := testutil.Git(t, dir, "ls-files", "-s")
	fresh := filepath.Join(t.TempDir(), "index")
	cmd := exec.Command("git", "update-index", "--index-info")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+fresh)
	cmd.Stdin = strings.NewReader(ls)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git update-index: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "write-tree")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+fresh)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git write-tree: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// A commit of one changed note in a store of 10,000 writes that note's
// blob, the trees on its path (its directory and the root) and the
// commit: nothing in proportion to the store. Every commit's tree is the
// one git makes of the same index, and git reads our index (cache tree
// included) without complaint.
func TestCommitWritesOnlyTheTreesOnItsPath(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	n := 10000
	if testing.Short() {
		n = 2000
	}
	dir := t.TempDir()
	r, err := Open(ctx, dir, "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	types := []string{"episodic", "semantic", "procedural"}
	for i := range n {
		write(fmt.Sprintf("%s/n%05d.md", types[i%3], i), fmt.Sprintf("note %d\n", i))
	}
	if _, ok, err := r.CommitAll(ctx); err != nil || !ok {
		t.Fatalf("first commit: %v %v", ok, err)
	}
	check := func(step string) {
		t.Helper()
		head := strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD^{tree}"))
		if got := gitTreeOfIndex(t, dir); got != head {
			t.Errorf("%s: HEAD's tree %s, git makes %s of the index", step, head, got)
		}
		if st := testutil.Git(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("%s: git status not clean:\n%s", step, st)
		}
		if out, err := testutil.TryGit(dir, "diff", "--cached", "--exit-code", "--stat"); err != nil {
			t.Errorf("%s: git diff --cached: %v\n%s", step, err, out)
		}
	}
	check("first commit")
	testutil.Git(t, dir, "fsck", "--strict")

	steps := []struct {
		name    string
		do      func() []string
		objects int // blobs, trees and the commit the step writes
		dir     int // notes in the directory the step changes
	}{
		{"edit one note", func() []string {
			write("episodic/n00003.md", "note 3, edited\n")
			return []string{"episodic/n00003.md"}
		}, 1 + 2 + 1, n / 3},
		{"add one note", func() []string {
			write("semantic/new.md", "a new note\n")
			return []string{"semantic/new.md"}
		}, 1 + 2 + 1, n / 3},
		{"delete one note", func() []string {
			os.Remove(filepath.Join(dir, "procedural", "n00002.md"))
			return []string{"procedural/n00002.md"}
		}, 2 + 1, n / 3},
		{"a note in a new nested directory", func() []string {
			write("local/deep/er/x.md", "nested\n")
			return []string{"local/deep/er/x.md"}
		}, 1 + 4 + 1, 0},
		{"the nested directory emptied", func() []string {
			os.RemoveAll(filepath.Join(dir, "local"))
			return []string{"local/deep/er/x.md"}
		}, 1 + 1, 0}, // the root as before the note came: it exists already
	}
	for _, s := range steps {
		before := looseObjects(t, r.GitDir())
		r.treeEntries = 0
		r.indexDecodes.Store(0)
		if _, ok, err := r.CommitPaths(ctx, s.do()); err != nil || !ok {
			t.Fatalf("%s: commit %v %v", s.name, ok, err)
		}
		// The index is edited around the changed entries, never decoded.
		if got := r.indexDecodes.Load(); got != 0 {
			t.Errorf("%s: the git index was decoded %d times", s.name, got)
		}
		if got := looseObjects(t, r.GitDir()) - before; got > s.objects {
			t.Errorf("%s: wrote %d objects, want at most %d", s.name, got, s.objects)
		}
		// The changed directory and the trees above it, never the other
		// directories (a third of the store each).
		if max := s.dir + 1 + 10; r.treeEntries > max {
			t.Errorf("%s: encoded trees of %d entries, want at most %d", s.name, r.treeEntries, max)
		}
		check(s.name)
	}
	testutil.Git(t, dir, "fsck", "--strict")

	// An index the git CLI wrote (its own cache tree, every subtree) is
	// read and its root trusted; a commit on top is still git's tree.
	write("episodic/by-git.md", "added by git\n")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "-c", "gc.auto=0", "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "by git")
	write("episodic/n00006.md", "note 6 after git\n")
	if _, ok, err := r.CommitPaths(ctx, []string{"episodic/n00006.md"}); err != nil || !ok {
		t.Fatalf("commit after git: %v %v", ok, err)
	}
	check("after the git CLI's commit")
	// A whole-worktree commit of changes made behind the index's back: an
	// edit in place, a deletion, and (second) a new file, which takes the
	// slow way.
	r.indexDecodes.Store(0)
	write("semantic/n00001.md", "note 1, edited\n")
	os.Remove(filepath.Join(dir, "procedural", "n00005.md"))
	if _, ok, err := r.CommitAll(ctx); err != nil || !ok {
		t.Fatalf("commit all: %v %v", ok, err)
	}
	if got := r.indexDecodes.Load(); got != 0 {
		t.Errorf("commit all of an edit and a deletion decoded the git index %d times", got)
	}
	check("commit all")
	write("semantic/by-hand.md", "a new note\n")
	if _, ok, err := r.CommitAll(ctx); err != nil || !ok {
		t.Fatalf("commit all of a new file: %v %v", ok, err)
	}
	check("commit all of a new file")
	// Nothing to do: nothing decoded, nothing written.
	r.indexDecodes.Store(0)
	fi, _ := os.Stat(filepath.Join(r.GitDir(), "index"))
	time.Sleep(10 * time.Millisecond)
	if _, ok, err := r.CommitAll(ctx); err != nil || ok {
		t.Fatalf("commit all with nothing to do: %v %v", ok, err)
	}
	if dirty, err := r.Dirty(); err != nil || dirty {
		t.Errorf("Dirty with nothing to do: %v %v", dirty, err)
	}
	if got := r.indexDecodes.Load(); got != 0 {
		t.Errorf("nothing to do: the git index was decoded %d times", got)
	}
	if after, _ := os.Stat(filepath.Join(r.GitDir(), "index")); !after.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, after) {
		t.Error("nothing to do: the git index was written")
	}
	testutil.Git(t, dir, "fsck", "--strict")
}

// An index that is not HEAD's (a sync killed after writing the merge
// result's index, before moving main) is committed whole, as before: the
// cache tree's root differs from HEAD's, so no tree is taken from HEAD.
func TestCommitOfAnIndexAheadOfHead(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(ctx, dir, "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		p := filepath.Join(dir, "semantic", fmt.Sprintf("n%02d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644)
	}
	if _, _, err := r.CommitAll(ctx); err != nil {
		t.Fatal(err)
	}
	// Stage a change with the git CLI without committing it: the index is
	// ahead of HEAD, as a killed checkout leaves it.
	os.WriteFile(filepath.Join(dir, "semantic", "n05.md"), []byte("staged"), 0o644)
	testutil.Git(t, dir, "add", "-A")
	os.WriteFile(filepath.Join(dir, "semantic", "new.md"), []byte("new"), 0o644)
	if _, ok, err := r.CommitPaths(ctx, []string{"semantic/new.md"}); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	if got := testutil.Git(t, dir, "show", "HEAD:semantic/n05.md"); got != "staged" {
		t.Errorf("the staged change was not committed: %q", got)
	}
	if st := testutil.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status not clean:\n%s", st)
	}
}

// updateTree is buildTree of the changed file list, and diffTreeObjects
// of two trees is diffTrees of their file lists,, for random changes
// over names that sort around the "/" git appends to a directory ("a",
// "a.b", "a-", "a/x"), files becoming directories and back, and
// directories emptied.
func TestUpdateTreeEqualsBuildTree(t *testing.T) {
	r, err := Open(ctx, t.TempDir(), "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "a.b", "a-", "a0", "b", "a/x", "a/y", "a/x/z", "c/d/e", "c/d", "c", "a.b/q", "ab"}
	rng := rand.New(rand.NewSource(1))
	files := map[string]entry{}
	blob := func(i int) entry {
		h, err := r.writeBlob([]byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		return entry{Mode: filemode.Regular, Hash: h}
	}
	// valid reports whether no path of files is a directory of another.
	valid := func(fs map[string]entry) bool {
		for p := range fs {
			for q := range fs {
				if strings.HasPrefix(q, p+"/") {
					return false
				}
			}
		}
		return true
	}
	base := plumbing.ZeroHash
	for round := range 400 {
		changes := map[string]*entry{}
		next := maps.Clone(files)
		for range 1 + rng.Intn(3) {
			p := names[rng.Intn(len(names))]
			if _, ok := next[p]; ok && rng.Intn(2) == 0 {
				delete(next, p)
				changes[p] = nil
				continue
			}
			e := blob(rng.Intn(5))
			if rng.Intn(4) == 0 {
				e.Mode = filemode.Executable
			}
			// Whatever the new file displaces (a file on its way, or
			// files under it) is deleted with it, as a worktree does.
			for q := range next {
				if strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
					delete(next, q)
					changes[q] = nil
				}
			}
			next[p] = e
			changes[p] = &e
		}
		if !valid(next) {
			t.Fatalf("round %d: invalid file list %v", round, next)
		}
		got, err := r.updateTree(base, changes)
		if err != nil {
			t.Fatal(err)
		}
		want := plumbing.ZeroHash
		if len(next) > 0 {
			if want, err = r.buildTree(next); err != nil {
				t.Fatal(err)
			}
		}
		if got != want {
			t.Fatalf("round %d: changes %v: updateTree %s, buildTree %s", round, changes, got, want)
		}
		// The raw diff of the two trees is the diff of their file lists.
		ff, chs, err := r.diffTreeObjects(base, got)
		if err != nil {
			t.Fatal(err)
		}
		if want := diffTrees(files, next); !maps.Equal(chs, want) {
			t.Fatalf("round %d: diffTreeObjects %v, diffTrees %v", round, chs, want)
		}
		for p := range chs {
			if e, ok := files[p]; ok != (ff[p] != entry{}) || ff[p] != e {
				t.Fatalf("round %d: from-side entry of %s: %v, want %v", round, p, ff[p], e)
			}
		}
		files, base = next, got
	}
	testutil.Git(t, r.Dir(), "fsck", "--strict")
}

// Our index codec and go-git's agree both ways: what we write go-git
// reads entry for entry, and what go-git writes we read the same.
func TestIndexCodecAgreesWithGoGit(t *testing.T) {
	idx := &gitindex.Index{Version: 2}
	for i := range 300 {
		e := idx.Add(fmt.Sprintf("%s/n%04d-%s.md", []string{"episodic", "semantic", "a"}[i%3], i, strings.Repeat("x", i%17)))
		e.Hash = plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i)))
		e.Mode = filemode.Regular
		e.Size = uint32(i * 7)
		e.ModifiedAt = time.Unix(1700000000+int64(i), int64(i*1000))
		e.Dev, e.Inode, e.UID, e.GID = 1, uint32(i), 1000, 1000
	}
	sortIndex(idx)
	tree := plumbing.ComputeHash(plumbing.TreeObject, []byte("x"))
	var ours bytes.Buffer
	if err := encodeIndexFast(&ours, idx, tree); err != nil {
		t.Fatal(err)
	}
	viaGoGit := &gitindex.Index{}
	if err := gitindex.NewDecoder(bytes.NewReader(ours.Bytes())).Decode(viaGoGit); err != nil {
		t.Fatalf("go-git cannot read our index: %v", err)
	}
	back, mark, err := decodeIndexFast(bytes.NewReader(ours.Bytes()), int64(ours.Len()))
	if err != nil || mark != tree {
		t.Fatalf("decode: %v, tree %s want %s", err, mark, tree)
	}
	var theirs bytes.Buffer
	if err := gitindex.NewEncoder(&theirs).Encode(idx); err != nil {
		t.Fatal(err)
	}
	fromGoGit, mark, err := decodeIndexFast(bytes.NewReader(theirs.Bytes()), int64(theirs.Len()))
	if err != nil || !mark.IsZero() {
		t.Fatalf("decode go-git's index: %v, tree %s", err, mark)
	}
	for _, got := range []*gitindex.Index{viaGoGit, back, fromGoGit} {
		if len(got.Entries) != len(idx.Entries) {
			t.Fatalf("%d entries, want %d", len(got.Entries), len(idx.Entries))
		}
		for i, e := range idx.Entries {
			g := got.Entries[i]
			if g.Name != e.Name || g.Hash != e.Hash || g.Mode != e.Mode || g.Size != e.Size || !g.ModifiedAt.Equal(e.ModifiedAt) || g.Inode != e.Inode || g.UID != e.UID {
				t.Fatalf("entry %d: %+v, want %+v", i, g, e)
			}
		}
	}
	// A flipped byte fails the checksum (loadIndex then rebuilds from HEAD).
	bad := bytes.Clone(ours.Bytes())
	bad[100] ^= 1
	if _, _, err := decodeIndexFast(bytes.NewReader(bad), int64(len(bad))); err == nil {
		t.Error("a corrupt index decoded")
	}
}

// An index edited around a few entries is, byte for byte, the index the
// whole codec encodes with the same changes: random insertions,
// replacements and deletions, at the start, the end and between
// neighbours, with and without a cache tree.
func TestSplicedIndexEqualsEncoded(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	entry := func(name string, i int) *gitindex.Entry {
		return &gitindex.Entry{Name: name, Mode: filemode.Regular, Size: uint32(i), Inode: uint32(rng.Intn(1 << 20)),
			Hash:       plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(name, i))),
			ModifiedAt: time.Unix(1700000000+int64(rng.Intn(1e6)), int64(rng.Intn(1e9)))}
	}
	name := func() string {
		return fmt.Sprintf("%s/%s%d.md", []string{"a", "a.b", "a/x", "b", "semantic"}[rng.Intn(5)], strings.Repeat("n", rng.Intn(9)), rng.Intn(60))
	}
	for round := range 300 {
		idx := &gitindex.Index{Version: 2}
		have := map[string]*gitindex.Entry{}
		for range rng.Intn(40) {
			if n := name(); have[n] == nil {
				have[n] = entry(n, round)
				idx.Entries = append(idx.Entries, have[n])
			}
		}
		sortIndex(idx)
		var old bytes.Buffer
		tree := plumbing.ComputeHash(plumbing.TreeObject, []byte(fmt.Sprint(round)))
		if rng.Intn(4) == 0 {
			tree = plumbing.ZeroHash
		}
		if err := encodeIndexFast(&old, idx, tree); err != nil {
			t.Fatal(err)
		}
		// Random changes: a new entry, a replaced one, or a deletion.
		staged := map[string]*gitindex.Entry{}
		var paths []string
		for range 1 + rng.Intn(5) {
			n := name()
			if len(idx.Entries) > 0 && rng.Intn(2) == 0 {
				n = idx.Entries[rng.Intn(len(idx.Entries))].Name
			}
			paths = append(paths, n)
			if rng.Intn(3) == 0 {
				staged[n] = nil
				delete(have, n)
			} else {
				staged[n] = entry(n, round+1)
				have[n] = staged[n]
			}
		}
		slices.Sort(paths)
		paths = slices.Compact(paths)
		found, err := findPaths(bytes.NewReader(old.Bytes()), int64(old.Len()), paths)
		if err != nil {
			t.Fatal(err)
		}
		if found.scan.tree != tree {
			t.Fatalf("round %d: scanned tree %s, want %s", round, found.scan.tree, tree)
		}
		for i, p := range paths {
			if e := found.entries[i]; (e != nil) != slices.ContainsFunc(idx.Entries, func(x *gitindex.Entry) bool { return x.Name == p }) {
				t.Fatalf("round %d: %s found %v", round, p, e)
			}
		}
		newTree := plumbing.ComputeHash(plumbing.TreeObject, []byte(fmt.Sprint(round, "new")))
		var spliced bytes.Buffer
		if err := writeSplicedIndex(&spliced, bytes.NewReader(old.Bytes()), found.scan, found.edits(staged), newTree); err != nil {
			t.Fatal(err)
		}
		want := &gitindex.Index{Version: 2}
		for _, e := range have {
			want.Entries = append(want.Entries, e)
		}
		sortIndex(want)
		var encoded bytes.Buffer
		if err := encodeIndexFast(&encoded, want, newTree); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(spliced.Bytes(), encoded.Bytes()) {
			t.Fatalf("round %d: spliced index (%d bytes) differs from the encoded one (%d bytes); paths %v", round, spliced.Len(), encoded.Len(), paths)
		}
	}
}

// diffTrees is the change between two listed trees, path by path: the
// plain definition diffTreeObjects is checked against.
func diffTrees(from, to map[string]entry) map[string]change {
	out := map[string]change{}
	for p, e := range to {
		if f, ok := from[p]; !ok || f != e {
			out[p] = change{e: e}
		}
	}
	for p := range from {
		if _, ok := to[p]; !ok {
			out[p] = change{deleted: true}
		}
	}
	return out
}

// A directory tree over storedTreeBytes is written uncompressed, as
// zlib's stored blocks: git reads it (fsck, status, write-tree of the
// same entries agree), and the next commit into that directory starts
// from it.
func TestLargeTreeIsStoredAndReadable(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	dir := t.TempDir()
	r, err := Open(ctx, dir, "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "semantic")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	n := storedTreeBytes/40 + 100 // each entry: mode, a name of 19 bytes, NUL and a hash
	for i := range n {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("note-%09d.md", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := r.CommitAll(ctx); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	looseSize := func() (raw, file int64) {
		h := strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD:semantic"))
		fi, err := os.Stat(filepath.Join(r.GitDir(), "objects", h[:2], h[2:]))
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		fmt.Sscan(testutil.Git(t, dir, "cat-file", "-s", h), &size)
		return size, fi.Size()
	}
	if raw, file := looseSize(); raw <= storedTreeBytes || file < raw {
		t.Fatalf("tree of %d bytes stored in %d: want over %d, uncompressed", raw, file, storedTreeBytes)
	}
	if err := os.WriteFile(filepath.Join(big, "note-000000007.md"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.CommitPaths(ctx, []string{"semantic/note-000000007.md"}); err != nil || !ok {
		t.Fatalf("commit of one note: %v %v", ok, err)
	}
	if head, got := strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD^{tree}")), gitTreeOfIndex(t, dir); got != head {
		t.Errorf("HEAD's tree %s, git makes %s of the index", head, got)
	}
	if st := testutil.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status not clean:\n%s", st)
	}
	if got := testutil.Git(t, dir, "show", "HEAD:semantic/note-000000007.md"); got != "edited" {
		t.Errorf("committed %q", got)
	}
	testutil.Git(t, dir, "fsck", "--strict")
}
