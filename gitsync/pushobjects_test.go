package gitsync

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// pushHistory is a repository whose history a test grows at random, with
// the git CLI and with our own commit path, and a bare hub it pushes to.
type pushHistory struct {
	t        *testing.T
	rnd      *rand.Rand
	dir, hub string
	repo     *Repo
	n        int       // content counter: every write is new content
	when     time.Time // the next commit's time
	skew     bool      // commit times jump back and forth
	dups     bool      // renames, copies, moved directories and reverts
	branches int
	mains    []string            // main's commits, to branch from
	versions map[string][]string // every content each path had, for reverts
}

func newPushHistory(t *testing.T, seed int64, dups, skew bool) *pushHistory {
	h := &pushHistory{t: t, rnd: rand.New(rand.NewSource(seed)), dups: dups, skew: skew,
		dir: filepath.Join(t.TempDir(), "memory"), hub: testutil.BareHub(t), versions: map[string][]string{},
		when: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r, err := Open(ctx, h.dir, "a", h.tick)
	if err != nil {
		t.Fatal(err)
	}
	h.repo = r
	h.write("first.md", h.fresh()) // every round has a commit to push
	return h
}

// tick is the time of the next commit: a minute on, or with skew up to
// a day either way.
func (h *pushHistory) tick() time.Time {
	if h.skew {
		h.when = h.when.Add(time.Duration(h.rnd.Intn(48*60)-24*60) * time.Minute)
	} else {
		h.when = h.when.Add(time.Minute)
	}
	return h.when
}

// git runs the git CLI with the next commit time.
func (h *pushHistory) git(args ...string) string {
	h.t.Helper()
	when := h.tick().Format(time.RFC3339)
	cmd := exec.Command("git", args...)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (h *pushHistory) write(rel, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.versions[rel] = append(h.versions[rel], content)
}

func (h *pushHistory) fresh() string {
	h.n++
	return fmt.Sprintf("content %d\n", h.n)
}

// files lists main's worktree files (slash paths, sorted).
func (h *pushHistory) files() []string {
	var out []string
	filepath.WalkDir(h.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(h.dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

var pushDirs = []string{"a", "a/b", "a/b/c", "d", "d/e", "f"}

// edit changes main's worktree once: adds, edits and deletes, and with
// dups renames, copies, moved directories and reverts.
func (h *pushHistory) edit() {
	files := h.files()
	op := h.rnd.Intn(8)
	if !h.dups && op >= 4 || len(files) == 0 {
		op = 0
	}
	pick := func() string { return files[h.rnd.Intn(len(files))] }
	newPath := func() string {
		h.n++
		return fmt.Sprintf("%s/n%d.md", pushDirs[h.rnd.Intn(len(pushDirs))], h.n)
	}
	switch op {
	case 0, 1: // add
		h.write(newPath(), h.fresh())
	case 2: // edit
		h.write(pick(), h.fresh())
	case 3: // delete
		if err := os.Remove(filepath.Join(h.dir, pick())); err != nil {
			h.t.Fatal(err)
		}
	case 4: // rename
		from, to := pick(), newPath()
		data, _ := os.ReadFile(filepath.Join(h.dir, from))
		os.Remove(filepath.Join(h.dir, from))
		h.write(to, string(data))
	case 5: // the same blob at a second path
		data, _ := os.ReadFile(filepath.Join(h.dir, pick()))
		h.write(newPath(), string(data))
	case 6: // a directory moved whole
		from := pushDirs[h.rnd.Intn(len(pushDirs))]
		h.n++
		to := fmt.Sprintf("moved%d", h.n)
		if err := os.Rename(filepath.Join(h.dir, from), filepath.Join(h.dir, to)); err != nil && !os.IsNotExist(err) {
			h.t.Fatal(err)
		}
	case 7: // a file back to an earlier version
		p := pick()
		if v := h.versions[p]; len(v) > 1 {
			h.write(p, v[h.rnd.Intn(len(v)-1)])
		}
	}
}

// commit commits main's worktree, with the git CLI or with CommitAll.
func (h *pushHistory) commit() {
	h.t.Helper()
	if h.rnd.Intn(2) == 0 {
		if _, _, err := h.repo.CommitAll(ctx); err != nil {
			h.t.Fatal(err)
		}
	} else if h.git("status", "--porcelain") != "" {
		h.git("add", "-A")
		h.git("commit", "-q", "-m", "cli")
	}
	if head, err := h.repo.Head(); err == nil && !head.IsZero() {
		h.mains = append(h.mains, head.String())
	}
}

// merge merges into main a branch of new commits started at one of
// main's commits, or a new root; the branch adds files of its own only,
// so the merge is clean. Sometimes the hub gets the branch too, and then
// sometimes main does not.
func (h *pushHistory) merge() {
	h.t.Helper()
	h.commit()
	h.branches++
	name := fmt.Sprintf("side%d", h.branches)
	if h.rnd.Intn(3) == 0 || len(h.mains) == 0 {
		h.git("checkout", "-q", "--orphan", name)
		h.git("rm", "-rqf", "--ignore-unmatch", ".")
	} else {
		h.git("checkout", "-q", "-b", name, h.mains[h.rnd.Intn(len(h.mains))])
	}
	for range 1 + h.rnd.Intn(3) {
		h.n++
		h.write(fmt.Sprintf("%s/x%d/n%d.md", name, h.rnd.Intn(2), h.n), h.fresh())
		h.git("add", "-A")
		h.git("commit", "-q", "-m", name)
	}
	pushed := h.rnd.Intn(3) == 0
	if pushed {
		h.git("push", "-q", h.hub, name+":refs/heads/"+name)
	}
	h.git("checkout", "-q", "main")
	if pushed && h.rnd.Intn(2) == 0 {
		return // a hub branch main does not contain
	}
	h.git("merge", "-q", "--no-ff", "--no-edit", "--allow-unrelated-histories", name)
	h.mains = append(h.mains, h.git("rev-parse", "HEAD"))
}

// grow adds n random steps to main; sometimes main goes to the hub.
func (h *pushHistory) grow(n int) {
	for range n {
		switch r := h.rnd.Intn(10); {
		case r < 6:
			h.edit()
		case r < 8:
			h.commit()
		case r < 9:
			h.merge()
		default:
			h.commit()
			h.git("push", "-q", h.hub, "main:refs/heads/main")
		}
	}
	h.commit()
}

// hubTips are the hub's branches, as a push's advertisement has them.
func (h *pushHistory) hubTips() []plumbing.Hash {
	var out []plumbing.Hash
	for _, l := range strings.Fields(testutil.Git(h.t, h.hub, "for-each-ref", "--format=%(objectname)", "refs/heads")) {
		out = append(out, plumbing.NewHash(l))
	}
	return out
}

// revList is `git rev-list --objects local --not known...` as a set.
func revList(t *testing.T, dir string, local plumbing.Hash, known []plumbing.Hash) map[plumbing.Hash]bool {
	t.Helper()
	args := []string{"rev-list", "--objects", local.String(), "--not"}
	for _, k := range known {
		args = append(args, k.String())
	}
	out := map[plumbing.Hash]bool{}
	for _, l := range strings.Split(testutil.Git(t, dir, args...), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out[plumbing.NewHash(f[0])] = true
		}
	}
	return out
}

// TestObjectsToPushAgreesWithGit checks the lister against git on random
// histories (adds, edits, deletes, merges of two new parents, new roots,
// commits by the git CLI and by CommitAll, hub branches that local
// contains and ones it does not). What is asserted, and why:
//   - every object git's rev-list --objects local --not <hub tips>
//     lists is listed: a push that sent less would leave the hub without
//     an object of local's history;
//   - nothing is listed twice (the pack would hold it twice), and every
//     listed object is in local's repository (the encoder reads each);
//   - where every content is new and stays at its path (no renames,
//     copies or reverts) and commit times go forward, the two sets are
//     equal: nothing the hub has is sent. With renames, copies, moved
//     directories and reverts a blob or tree the hub has at another path
//     may be sent again (so the set may be larger: harmless, and git's
//     own pack-objects does the same for an object it finds only in an
//     older commit); with commit times out of order, a commit the hub
//     has may be taken as new, and its changes sent again;
//   - then a real push through Sync (the lister inside sendPack): the
//     hub passes git fsck --strict, and has every object of local's
//     history.
func TestObjectsToPushAgreesWithGit(t *testing.T) {
	cases := []struct {
		name       string
		dups, skew bool
	}{{"new content", false, false}, {"renames copies reverts", true, false}, {"clock skew", true, true}}
	seeds := int64(2)
	if testing.Short() {
		seeds = 1
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(1); seed <= seeds; seed++ {
				h := newPushHistory(t, seed, tc.dups, tc.skew)
				for round := range 3 {
					h.grow(25)
					h.checkListing(fmt.Sprintf("seed %d round %d", seed, round), !tc.dups && !tc.skew)
					h.pushAndCheck()
				}
			}
		})
	}
}

// checkListing compares objectsToPush for main against the hub's tips
// with git's rev-list.
func (h *pushHistory) checkListing(what string, exact bool) {
	t := h.t
	t.Helper()
	local := plumbing.NewHash(h.git("rev-parse", "HEAD"))
	known := h.hubTips()
	r, err := git.PlainOpen(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	// A tip the hub has and local lacks, or a branch at a tree, says
	// nothing about local's history.
	absent := plumbing.NewHash(strings.Repeat("ab", 20))
	tree := plumbing.NewHash(h.git("rev-parse", "HEAD^{tree}"))
	got, err := objectsToPush(ctx, r.Storer, local, append(known, absent, tree))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := revList(t, h.dir, local, known)
	listed := map[plumbing.Hash]bool{}
	for _, o := range got {
		if listed[o] {
			t.Fatalf("%s: %s listed twice", what, o)
		}
		listed[o] = true
		if _, err := r.Storer.EncodedObject(plumbing.AnyObject, o); err != nil {
			t.Fatalf("%s: listed %s, which local lacks: %v", what, o, err)
		}
	}
	for o := range want {
		if !listed[o] {
			t.Fatalf("%s: git lists %s (%s), objectsToPush does not", what, o, h.git("cat-file", "-t", o.String()))
		}
	}
	if exact && len(got) != len(want) {
		var extra []string
		for _, o := range got {
			if !want[o] {
				extra = append(extra, o.String()+" "+h.git("cat-file", "-t", o.String()))
			}
		}
		t.Fatalf("%s: %d objects listed, git lists %d; extra: %v", what, len(got), len(want), extra)
	}
	t.Logf("%s: %d listed, git %d", what, len(got), len(want))
}

// pushAndCheck pushes main to the hub through Sync and checks the hub
// is whole.
func (h *pushHistory) pushAndCheck() {
	t := h.t
	t.Helper()
	if _, err := h.repo.Sync(ctx, Options{Remote: h.hub, Timeout: 20 * time.Second}); err != nil {
		t.Fatalf("sync: %v", err)
	}
	local := h.git("rev-parse", "HEAD")
	if hub := testutil.Git(t, h.hub, "rev-parse", "main"); strings.TrimSpace(hub) != local {
		t.Fatalf("hub's main is %s after the push, local's %s", hub, local)
	}
	testutil.Git(t, h.hub, "fsck", "--strict", "--no-dangling")
	has := revList(t, h.hub, plumbing.NewHash(local), nil)
	for o := range revList(t, h.dir, plumbing.NewHash(local), nil) {
		if !has[o] {
			t.Fatalf("the hub lacks %s of local's history", o)
		}
	}
}

// TestObjectsToPushMissingTreeIsAnError: a tree of a new commit missing
// from the repository is an error naming it, not a panic or a pack
// without it.
func TestObjectsToPushMissingTreeIsAnError(t *testing.T) {
	h := newPushHistory(t, 1, false, false)
	h.write("a/one.md", h.fresh())
	h.commit()
	h.git("push", "-q", h.hub, "main:refs/heads/main")
	h.write("a/b/two.md", h.fresh())
	h.commit()
	sub := h.git("rev-parse", "HEAD:a/b")
	if err := os.Remove(filepath.Join(h.dir, ".git", "objects", sub[:2], sub[2:])); err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainOpen(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = objectsToPush(ctx, r.Storer, plumbing.NewHash(h.git("rev-parse", "HEAD")), h.hubTips())
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("objectsToPush with tree %s missing: %v", sub, err)
	}
}

// TestHavesReadThroughOurReader: the "have" lines a fetch sends, read
// through our own reader, are the ones go-git's storage gives: up to
// maxHaves commits a tip, newest first, stopping at a commit the remote
// advertised or a tracking ref's tip; a packed history (after git gc) and
// a loose one alike.
func TestHavesReadThroughOurReader(t *testing.T) {
	for _, packed := range []bool{false, true} {
		h := newPushHistory(t, 3, false, false)
		h.grow(150)
		if packed {
			h.git("gc", "-q")
		}
		g, err := Open(ctx, h.dir, "m", nil)
		if err != nil {
			t.Fatal(err)
		}
		head := plumbing.NewHash(h.git("rev-parse", "HEAD"))
		old := plumbing.NewHash(h.git("rev-parse", "HEAD~40"))
		for _, adv := range []advert{{}, {refs: map[plumbing.ReferenceName]plumbing.Hash{"refs/heads/main": old}}} {
			objs := g.openObjects()
			ours, err := haves(g.r.Storer, adv, objs.parents)
			objs.Close()
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := haves(g.r.Storer, adv, storerParents(g.r.Storer))
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(ours, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
			slices.SortFunc(theirs, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
			if !slices.Equal(ours, theirs) {
				t.Errorf("packed %v: %d haves through our reader, %d through go-git's", packed, len(ours), len(theirs))
			}
			if !slices.Contains(ours, head) || len(ours) > maxHaves*2 {
				t.Errorf("packed %v: %d haves, HEAD among them: %v", packed, len(ours), slices.Contains(ours, head))
			}
			if adv.refs != nil && len(ours) > 41*2 {
				t.Errorf("packed %v: %d haves past the advertised commit 40 back", packed, len(ours))
			}
		}
		// A tracking ref (what the hub had at the last fetch) three
		// commits back: nothing it reaches is sent but its tip; what main
		// has beyond it is.
		h.git("update-ref", "refs/remotes/origin/main", "HEAD~3")
		objs := g.openObjects()
		got, err := haves(g.r.Storer, advert{}, objs.parents)
		objs.Close()
		if err != nil {
			t.Fatal(err)
		}
		// What the branches have beyond every tracking ref, and the
		// tracking refs' tips.
		beyond := map[plumbing.Hash]bool{}
		for _, l := range strings.Fields(h.git("rev-list", "--branches", "--not", "--remotes") + " " +
			h.git("for-each-ref", "--format=%(objectname)", "refs/remotes")) {
			beyond[plumbing.NewHash(l)] = true
		}
		for _, c := range got {
			if !beyond[c] {
				t.Errorf("packed %v: have %s is reached by a tracking ref", packed, c)
			}
		}
		if len(got) != len(beyond) {
			t.Errorf("packed %v: %d haves, want the %d commits the branches have beyond the tracking refs, and their tips", packed, len(got), len(beyond))
		}
	}
}

// storerParents reads commits' parents through go-git's storage st:
// the reference the have lines are checked against.
func storerParents(st storage.Storer) func(plumbing.Hash) ([]plumbing.Hash, error) {
	return func(h plumbing.Hash) ([]plumbing.Hash, error) {
		c, err := object.GetCommit(st, h)
		if err != nil {
			return nil, err
		}
		return c.ParentHashes, nil
	}
}
