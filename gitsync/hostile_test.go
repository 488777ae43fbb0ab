package gitsync

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The tests in this file play a hostile hub: objects are written by hand
// (git hash-object --literally takes any bytes) into a bare repository,
// and its main is moved to them, as an attacker who controls the hub
// would. A victim syncing must refuse them before any file is written.

// gitIn runs git in dir with stdin and returns its trimmed output.
func gitIn(t *testing.T, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=x", "GIT_AUTHOR_EMAIL=x@x", "GIT_COMMITTER_NAME=x", "GIT_COMMITTER_EMAIL=x@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// rawEntry is one tree entry exactly as it is to be written: mode text,
// name bytes, object id in hex.
type rawEntry struct{ mode, name, hash string }

// rawTree writes a tree object with these entries in this order, with no
// check of any kind, and returns its id.
func rawTree(t *testing.T, repo string, entries ...rawEntry) string {
	t.Helper()
	var b bytes.Buffer
	for _, e := range entries {
		id, err := hex.DecodeString(e.hash)
		if err != nil || len(id) != 20 {
			t.Fatalf("bad hash %q", e.hash)
		}
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(id)
	}
	return gitIn(t, repo, b.Bytes(), "hash-object", "-w", "--literally", "-t", "tree", "--stdin")
}

func rawBlob(t *testing.T, repo string, data []byte) string {
	t.Helper()
	return gitIn(t, repo, data, "hash-object", "-w", "--stdin")
}

// rawCommit writes a commit object from its exact text.
func rawCommit(t *testing.T, repo, text string) string {
	t.Helper()
	return gitIn(t, repo, []byte(text), "hash-object", "-w", "--literally", "-t", "commit", "--stdin")
}

func commitOf(t *testing.T, repo, tree string, parents ...string) string {
	t.Helper()
	text := "tree " + tree + "\n"
	for _, p := range parents {
		text += "parent " + p + "\n"
	}
	text += "author evil <evil@hub> 1767225600 +0000\ncommitter evil <evil@hub> 1767225600 +0000\n\nhub content\n"
	return rawCommit(t, repo, text)
}

// treeEntries lists a tree's entries as rawEntry values (git ls-tree).
func treeEntries(t *testing.T, repo, tree string) []rawEntry {
	t.Helper()
	var out []rawEntry
	for _, line := range strings.Split(gitIn(t, repo, nil, "ls-tree", tree), "\n") {
		if line == "" {
			continue
		}
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		mode := f[0]
		if mode == "040000" {
			mode = modeDir
		}
		out = append(out, rawEntry{mode, name, f[2]})
	}
	return out
}

// hostileCase is one crafted tree: extra entries at the root of the
// victim's last good tree, or a whole root of its own.
type hostileCase struct {
	name   string
	reason string                                                   // what the refusal must say
	build  func(t *testing.T, hub, goodTree, outside string) string // returns the bad root tree
	// direct: the git CLI will not serve it (upload-pack dies on it), so
	// the objects are put into the victim's own store, as a hand-written
	// server would send them, and merged from there.
	direct bool
}

func hostileCases() []hostileCase {
	withRoot := func(extra ...rawEntry) func(t *testing.T, hub, goodTree, outside string) string {
		return func(t *testing.T, hub, goodTree, outside string) string {
			entries := append(treeEntries(t, hub, goodTree), extra...)
			sortRaw(entries)
			return rawTree(t, hub, entries...)
		}
	}
	blob := func(t *testing.T, hub string) string { return rawBlob(t, hub, []byte("export EVIL=1\n")) }
	return []hostileCase{
		{"symlink and directory of one name (the ~/.bashrc attack)", "symlink", func(t *testing.T, hub, good, outside string) string {
			link := rawBlob(t, hub, []byte(outside))
			dir := rawTree(t, hub, rawEntry{modeFile, ".bashrc", blob(t, hub)})
			entries := treeEntries(t, hub, good)
			// Two entries named zz: the link first, as git sorts a file
			// before a directory of the same name.
			entries = append(entries, rawEntry{"120000", "zz", link}, rawEntry{modeDir, "zz", dir})
			return rawTree(t, hub, entries...)
		}, false},
		{"a symlink note", "symlink", func(t *testing.T, hub, good, outside string) string {
			link := rawBlob(t, hub, []byte(filepath.Join(outside, "x")))
			sem := rawTree(t, hub, rawEntry{"120000", "01ZZZZZZZZZZZZZZZZZZZZZZZZ.md", link})
			return withRoot(rawEntry{modeDir, "zsem", sem})(t, hub, good, outside)
		}, false},
		{"two directories of one name", "given twice", func(t *testing.T, hub, good, outside string) string {
			d := rawTree(t, hub, rawEntry{modeFile, "a.md", blob(t, hub)})
			entries := append(treeEntries(t, hub, good), rawEntry{modeDir, "zz", d}, rawEntry{modeDir, "zz", d})
			return rawTree(t, hub, entries...)
		}, false},
		{"a submodule", "submodule", func(t *testing.T, hub, good, outside string) string {
			return withRoot(rawEntry{"160000", "zmod", strings.Repeat("ab", 20)})(t, hub, good, outside)
		}, false},
		{name: "an empty name", reason: "empty name", build: withRootBlob(modeFile, ""), direct: true},
		{"a name that is ..", ". or ..", withRootBlob(modeFile, ".."), false},
		{"a name with a slash", "path separator", withRootBlob(modeFile, "/etc"), false},
		{"a .git directory", ".git entry", withRootDir(".git"), false},
		{"a .GIT directory", ".git entry", withRootDir(".GIT"), false},
		{"an NTFS .git. directory", ".git entry", withRootDir(".git. "), false},
		{"an NTFS short name", ".git entry", withRootDir("GIT~1"), false},
		{"an HFS+ .git with an ignorable character", ".git entry", withRootDir(".g\u200cit"), false},
		{"a .gitattributes", ".gitattributes", withRootBlob(modeFile, ".gitattributes"), false},
		{"a .gitmodules", ".gitmodules", withRootBlob(modeFile, ".gitmodules"), false},
		{"names that differ in case", "differs only in case", func(t *testing.T, hub, good, outside string) string {
			b := blob(t, hub)
			d := rawTree(t, hub, rawEntry{modeFile, "Note.md", b}, rawEntry{modeFile, "note.md", b})
			return withRoot(rawEntry{modeDir, "zcase", d})(t, hub, good, outside)
		}, false},
		{"a tree nested too deep", "nest deeper", func(t *testing.T, hub, good, outside string) string {
			d := rawTree(t, hub, rawEntry{modeFile, "deep.md", blob(t, hub)})
			for _, n := range []string{"d", "c", "b", "a"} {
				d = rawTree(t, hub, rawEntry{modeDir, n, d})
			}
			return withRoot(rawEntry{modeDir, "zdeep", d})(t, hub, good, outside)
		}, false},
		{"a zero-padded mode", "file mode", func(t *testing.T, hub, good, outside string) string {
			d := rawTree(t, hub, rawEntry{modeFile, "a.md", blob(t, hub)})
			return withRoot(rawEntry{"040000", "zpad", d})(t, hub, good, outside)
		}, false},
		{"entries out of order", "out of order", func(t *testing.T, hub, good, outside string) string {
			b := blob(t, hub)
			d := rawTree(t, hub, rawEntry{modeFile, "b.md", b}, rawEntry{modeFile, "a.md", b})
			return withRoot(rawEntry{modeDir, "zorder", d})(t, hub, good, outside)
		}, false},
		{"a blob that is too large", "a file of", func(t *testing.T, hub, good, outside string) string {
			big := rawBlob(t, hub, bytes.Repeat([]byte("x"), MaxBlobBytes+1))
			d := rawTree(t, hub, rawEntry{modeFile, "big.md", big})
			return withRoot(rawEntry{modeDir, "zbig", d})(t, hub, good, outside)
		}, true}, // the pack scanner refuses it first over the wire (bounds_test.go); this is the merge's own check
	}
}

func withRootBlob(mode, name string) func(t *testing.T, hub, good, outside string) string {
	return func(t *testing.T, hub, good, outside string) string {
		b := rawBlob(t, hub, []byte("hub text\n"))
		entries := append(treeEntries(t, hub, good), rawEntry{mode, name, b})
		sortRaw(entries)
		return rawTree(t, hub, entries...)
	}
}

func withRootDir(name string) func(t *testing.T, hub, good, outside string) string {
	return func(t *testing.T, hub, good, outside string) string {
		hooks := rawTree(t, hub, rawEntry{"100755", "post-merge", rawBlob(t, hub, []byte("#!/bin/sh\necho pwned\n"))})
		d := rawTree(t, hub, rawEntry{modeDir, "hooks", hooks}, rawEntry{modeFile, "config", rawBlob(t, hub, []byte("[core]\n\thooksPath = /tmp\n"))})
		entries := append(treeEntries(t, hub, good), rawEntry{modeDir, name, d})
		sortRaw(entries)
		return rawTree(t, hub, entries...)
	}
}

// sortRaw orders entries as git does (a directory as its name plus '/').
func sortRaw(es []rawEntry) {
	key := func(e rawEntry) string {
		if e.mode == modeDir {
			return e.name + "/"
		}
		return e.name
	}
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && key(es[j]) < key(es[j-1]); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// attackedHub is a hub and a victim machine that shared one note
// through it: the hub's main and tree at that point, before the attack.
func attackedHub(t *testing.T) (hub string, v *machine, good, goodTree string) {
	t.Helper()
	hub = testutil.BareHub(t)
	v = newMachine(t, "victim", hub)
	v.write(mkNote(v, "first", "shared before the attack"))
	v.sync()
	good = strings.TrimSpace(testutil.Git(t, hub, "rev-parse", "main"))
	goodTree = strings.TrimSpace(testutil.Git(t, hub, "rev-parse", "main^{tree}"))
	return hub, v, good, goodTree
}

func plumbingHash(s string) plumbing.Hash { return plumbing.NewHash(s) }

// outsideUntouched fails if anything appeared in dir.
func outsideUntouched(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("the hub wrote outside the store: %v", ents)
	}
}

// TestHostileHubTreesAreRefused: every kind of tree a store must never
// hold, served by a hub as its main, is refused in one line naming the
// hub, the commit and the reason; nothing reaches the worktree, main or
// outside the store; the victim's own new note stays committed; and once
// the hub is repaired the next sync just works and the victim's history
// is clean enough for a hub that checks every object.
func TestHostileHubTreesAreRefused(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			hub, v, good, goodTree := attackedHub(t)
			testutil.Git(t, hub, "config", "receive.fsckObjects", "true")

			outside := t.TempDir()
			if tc.direct {
				src := v.repo.Dir()
				bad := commitOf(t, src, tc.build(t, src, goodTree, outside), good)
				_, err := v.repo.Merge(ctx, Hash(plumbingHash(bad)))
				if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("merge of %s: %v", tc.name, err)
				}
				outsideUntouched(t, outside)
				return
			}
			bad := commitOf(t, hub, tc.build(t, hub, goodTree, outside), good)
			testutil.Git(t, hub, "update-ref", "refs/heads/main", bad)

			v.advance()
			mine := v.write(mkNote(v, "mine", "written on the victim after the attack"))
			before := v.tree()
			_, err := v.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
			if err == nil {
				t.Fatal("sync took the hostile commit")
			}
			msg := err.Error()
			for _, want := range []string{"refused", bad[:12], tc.reason, hub, "local notes are committed"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line: %q", msg)
			}
			outsideUntouched(t, outside)
			after := v.tree()
			if len(after) != len(before) {
				t.Errorf("worktree changed: %d files before, %d after", len(before), len(after))
			}
			head, _ := v.repo.Head()
			if v.repo.HasCommit(head) && head.String() == bad {
				t.Fatal("main moved to the hostile commit")
			}
			log := testutil.Git(t, v.repo.Dir(), "log", "--format=%H", "main")
			if strings.Contains(log, bad) {
				t.Fatal("the hostile commit is in the victim's history")
			}
			if st := testutil.Git(t, v.repo.Dir(), "status", "--porcelain"); st != "" {
				t.Errorf("the victim's note is not committed:\n%s", st)
			}
			if _, err := os.Stat(filepath.Join(v.repo.Dir(), mine)); err != nil {
				t.Errorf("victim's note: %v", err)
			}

			// The hub is repaired (its main set back); the next sync merges
			// and pushes as if nothing happened, through a hub that checks
			// every object it receives.
			testutil.Git(t, hub, "update-ref", "refs/heads/main", good)
			rep := v.sync()
			if !rep.Pushed {
				t.Fatalf("after the repair: %+v", rep)
			}
			// The victim's repository holds nothing of the attack: not in
			// its history, and not as unreachable objects either.
			v.fsck()
		})
	}
}

// TestHostileAncestorPoisonsNothing: a bad commit under a good-looking
// tip is refused too (its tree would be pushed back with every later
// merge, and a hub that checks objects would refuse every push forever).
func TestHostileAncestorPoisonsNothing(t *testing.T) {
	hub, v, good, goodTree := attackedHub(t)
	bad := commitOf(t, hub, withRootBlob(modeFile, "/x")(t, hub, goodTree, ""), good)
	tip := commitOf(t, hub, goodTree, bad) // the tip's own tree is fine
	testutil.Git(t, hub, "update-ref", "refs/heads/main", tip)
	_, err := v.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), bad[:12]) {
		t.Fatalf("sync with a bad ancestor: %v", err)
	}
	testutil.Git(t, hub, "config", "receive.fsckObjects", "true")
	testutil.Git(t, hub, "update-ref", "refs/heads/main", good)
	v.advance()
	v.write(mkNote(v, "later", "after the repair"))
	if rep := v.sync(); !rep.Pushed {
		t.Fatalf("after the repair: %+v", rep)
	}
	v.fsck()
}

// TestHostileCommitHeaderIsRefused: a commit git fsck would refuse (an
// author without an email) never enters the victim's history.
func TestHostileCommitHeaderIsRefused(t *testing.T) {
	hub, v, good, goodTree := attackedHub(t)
	bad := rawCommit(t, hub, "tree "+goodTree+"\nparent "+good+"\nauthor evil 1767225600 +0000\ncommitter evil <e@h> 1767225600 +0000\n\nx\n")
	testutil.Git(t, hub, "update-ref", "refs/heads/main", bad)
	_, err := v.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "bad author line") {
		t.Fatalf("sync with a bad commit header: %v", err)
	}
}

// TestHostilePeerIsRefusedOthersStillMerge: a tailnet peer is as
// untrusted as a hub. Its refused commit is reported on its row; the
// sync goes on and nothing of it is written.
func TestHostilePeerIsRefusedOthersStillMerge(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "memory")
	testutil.Git(t, root, "init", "-q", "--bare", "-b", "main", repo)
	outside := t.TempDir()
	link := rawBlob(t, repo, []byte(outside))
	bashrc := rawBlob(t, repo, []byte("export EVIL=1\n"))
	dir := rawTree(t, repo, rawEntry{modeFile, ".bashrc", bashrc})
	tree := rawTree(t, repo, rawEntry{"120000", "episodic", link}, rawEntry{modeDir, "episodic", dir})
	bad := commitOf(t, repo, tree)
	testutil.Git(t, repo, "update-ref", "refs/heads/main", bad)
	backend := &cgi.Handler{Path: must(exec.LookPath("git")), Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	peer := httptest.NewServer(http.HandlerFunc(backend.ServeHTTP))
	t.Cleanup(peer.Close)

	v := newMachine(t, "victim", "")
	mine := v.write(mkNote(v, "mine", "local"))
	rep, err := v.repo.Sync(ctx, Options{Peers: []string{peer.URL + "/memory"}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if len(rep.Peers) != 1 || !strings.Contains(rep.Peers[0].Error, "refused") || !strings.Contains(rep.Peers[0].Error, bad[:12]) || !strings.Contains(rep.Peers[0].Error, "peer ") {
		t.Fatalf("peer result: %+v", rep.Peers)
	}
	outsideUntouched(t, outside)
	if _, err := os.Lstat(filepath.Join(v.repo.Dir(), "episodic")); err == nil {
		t.Fatal("the peer's episodic reached the worktree")
	}
	if _, err := os.Stat(filepath.Join(v.repo.Dir(), mine)); err != nil {
		t.Fatal(err)
	}
}

// TestCheckoutNeverWritesThroughALink: a type directory that became a
// link on this machine (an older release took one from a hub, or a user
// made it) stops a sync's checkout before any file is written, with an
// error that names the link and the remedy; nothing lands where it
// points.
func TestCheckoutNeverWritesThroughALink(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	b := newMachine(t, "b", hub)
	a.write(mkNote(a, "first", "one"))
	a.sync()
	b.sync()
	a.advance()
	rel := a.write(mkNote(a, "second", "two"))
	a.sync()

	outside := t.TempDir()
	typeDir := filepath.Join(b.repo.Dir(), filepath.Dir(rel))
	if err := os.Rename(typeDir, typeDir+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, typeDir); err != nil {
		t.Fatal(err)
	}
	_, err := b.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "doctor --fix") {
		t.Fatalf("sync through a linked type directory: %v", err)
	}
	outsideUntouched(t, outside)
}

// TestHubMessagesPrintOnOneLine: what a hub says when it fails (here the
// git CLI's upload-pack dying on a tree with an empty name, whose message
// ends in a NUL) reaches the user as one line of plain text.
func TestHubMessagesPrintOnOneLine(t *testing.T) {
	hub, v, good, goodTree := attackedHub(t)
	bad := commitOf(t, hub, withRootBlob(modeFile, "")(t, hub, goodTree, ""), good)
	testutil.Git(t, hub, "update-ref", "refs/heads/main", bad)
	_, err := v.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil {
		t.Fatal("sync took a tree with an empty name")
	}
	for _, r := range err.Error() {
		if r < 0x20 || r == 0x7f {
			t.Fatalf("error carries control character %q: %q", r, err.Error())
		}
	}
}

// TestOversizedLocalFileIsNotCommitted: a file over MaxBlobBytes placed in
// memory/ by hand is left out of the commit and named in the report, so
// this machine never publishes what every other machine would refuse
// (their syncs would stop at it); the rest syncs as usual.
func TestOversizedLocalFileIsNotCommitted(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	b := newMachine(t, "b", hub)
	rel := a.write(mkNote(a, "fine", "a normal note"))
	big := filepath.Join(a.repo.Dir(), "semantic", "huge.md")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), MaxBlobBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := a.sync()
	if len(rep.TooLarge) != 1 || rep.TooLarge[0] != "semantic/huge.md" || !rep.Pushed {
		t.Fatalf("report: %+v", rep)
	}
	b.sync()
	if _, err := os.Stat(filepath.Join(b.repo.Dir(), rel)); err != nil {
		t.Fatalf("the normal note did not travel: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.repo.Dir(), "semantic", "huge.md")); err == nil {
		t.Fatal("the oversized file travelled")
	}
}

// TestWriteAfterAKilledCheckoutKeepsThePull: a sync killed after moving
// main but before saving the git index leaves the index behind HEAD
// (with the pulled files on disk). A write's commit of one path on top
// of that index would undo the pull in its commit (and push the undoing
// to every machine); it must commit HEAD's content plus the note.
func TestWriteAfterAKilledCheckoutKeepsThePull(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	b := newMachine(t, "b", hub)
	a.write(mkNote(a, "first", "one"))
	a.sync()
	b.sync()
	a.advance()
	pulled := a.write(mkNote(a, "second", "pulled by b"))
	a.sync()

	indexPath := filepath.Join(b.repo.GitDir(), "index")
	before, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	b.sync() // pulls "second"
	// The kill: main moved, the files are written, the index is the old one.
	if err := os.WriteFile(indexPath, before, 0o644); err != nil {
		t.Fatal(err)
	}
	b.advance()
	mine := b.write(mkNote(b, "mine", "written after the killed sync"))
	if _, _, err := b.repo.CommitPaths(ctx, []string{mine}); err != nil {
		t.Fatal(err)
	}
	tree := testutil.Git(t, b.repo.Dir(), "ls-tree", "-r", "--name-only", "main")
	for _, want := range []string{pulled, mine} {
		if !strings.Contains(tree, want) {
			t.Errorf("the write's commit lacks %s:\n%s", want, tree)
		}
	}
	if st := testutil.Git(t, b.repo.Dir(), "status", "--porcelain"); st != "" {
		t.Errorf("worktree and commit disagree:\n%s", st)
	}
}

// TestOrphanIndexOfAKilledFetchIsRemoved: go-git writes a pack's .idx
// before renaming the pack into place; a sync killed in between leaves an
// .idx alone, possibly truncated. The next fetch of the same pack kept
// that .idx beside the new pack, and the repository's own history could
// no longer be read (seen in TestKilledSyncsLoseNothing under load). A
// sync removes such leftovers first.
func TestOrphanIndexOfAKilledFetchIsRemoved(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	a.write(mkNote(a, "first", "one"))
	a.sync()
	dir := filepath.Join(a.repo.GitDir(), "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "pack-"+strings.Repeat("ab", 20)+".idx")
	tmp := filepath.Join(dir, "tmp_pack_123")
	for _, p := range []string{orphan, tmp} {
		if err := os.WriteFile(p, []byte("\xfftOc\x00\x00"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	a.advance()
	a.write(mkNote(a, "second", "two"))
	a.sync()
	for _, p := range []string{orphan, tmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", filepath.Base(p))
		}
	}
	a.fsck()
}

// A link planted where a checkout writes its temporary file (another
// local user, a tool gone wrong; a sync's commit step refuses a link in
// the store, but one can appear after it) is removed, not written
// through, and so is a leftover of a killed checkout: the file the link
// points at stays as it was and the note is written whole.
func TestCheckoutTempLinkIsNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("not the store's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	linked, left := filepath.Join(dir, "linked.md"), filepath.Join(dir, "left.md")
	if err := os.Symlink(outside, linked+".anamnesis-tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left+".anamnesis-tmp", []byte("half a checkout"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{linked, left} {
		if err := writeWorktreeFile(p, []byte("the note\n"), filemode.Regular, true, nil); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(p); err != nil || string(data) != "the note\n" {
			t.Errorf("%s: %q, %v", p, data, err)
		}
		if _, err := os.Lstat(p + ".anamnesis-tmp"); err == nil {
			t.Errorf("%s.anamnesis-tmp is still there", p)
		}
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "not the store's\n" {
		t.Fatalf("the file the link pointed at: %q, %v", data, err)
	}
}
