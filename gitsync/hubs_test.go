package gitsync

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/httphub"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing"
)

// seedHub makes a bare hub the way users create one: `git init --bare`
// with the given default branch, and a first commit with a README.md
// pushed to it from a clone (what a new GitHub repository "with a
// README" is).
func seedHub(t *testing.T, hub, branch string) {
	t.Helper()
	testutil.Git(t, t.TempDir(), "init", "-q", "--bare", "-b", branch, hub)
	testutil.Git(t, hub, "config", "http.receivepack", "true")
	work := filepath.Join(t.TempDir(), "work")
	testutil.Git(t, t.TempDir(), "init", "-q", "-b", branch, work)
	writeFile(t, filepath.Join(work, "README.md"), "# memory\n\nNotes shared by my machines.\n")
	testutil.Git(t, work, "add", "README.md")
	testutil.Git(t, work, "commit", "-q", "-m", "Initial commit")
	testutil.Git(t, work, "push", "-q", hub, branch)
}

func hubBranches(t *testing.T, hub string) string {
	t.Helper()
	return strings.TrimSpace(testutil.Git(t, hub, "for-each-ref", "--format=%(refname:short)", "refs/heads"))
}

// TestHubWhoseDefaultBranchIsMaster: a hub created with master as its
// default branch is synced on master (the local branch stays main, as
// the Python tool expects); no main appears beside it, and the report
// says once what was done. Over a local path and over smart HTTP.
func TestHubWhoseDefaultBranchIsMaster(t *testing.T) {
	for _, over := range []string{"path", "http"} {
		t.Run(over, func(t *testing.T) {
			var hub, remote string
			if over == "path" {
				hub = filepath.Join(t.TempDir(), "hub.git")
				seedHub(t, hub, "master")
				remote = hub
			} else {
				h, _ := startHub(t, "memory", "s3cret")
				hub = filepath.Join(h.Root, "master.git")
				seedHub(t, hub, "master")
				remote = httphub.WithCredentials(h.URL+"/master.git", "memory", "s3cret")
			}
			a, b := newMachine(t, "a", remote), newMachine(t, "b", remote)
			rel := a.write(mkNote(a, "on master", "from a"))
			rep := a.sync()
			if rep.Branch != "master" || !strings.Contains(rep.BranchNote, "default branch master") || !rep.Pushed {
				t.Fatalf("report: %+v", rep)
			}
			if got := hubBranches(t, hub); got != "master" {
				t.Fatalf("hub branches: %q, want master only", got)
			}
			if !strings.Contains(testutil.Git(t, hub, "log", "--format=%s", "master"), "sync from a") {
				t.Fatal("a's commit is not on master")
			}
			rep = b.sync()
			if rep.Branch != "master" || b.read(rel).Body != "from a" {
				t.Fatalf("b: %+v", rep)
			}
			if _, ok := b.tree()["README.md"]; !ok {
				t.Error("the hub's README did not arrive")
			}
			// And back.
			b.advance()
			rel2 := b.write(mkNote(b, "from b", "back"))
			b.sync()
			a.sync()
			if a.read(rel2).Body != "back" {
				t.Fatal("b's note did not reach a")
			}
			if got := hubBranches(t, hub); got != "master" {
				t.Fatalf("hub branches after more syncs: %q", got)
			}
			if head, _ := a.repo.r.Reference(plumbing.HEAD, false); head.Target() != branchRef {
				t.Errorf("local HEAD: %v", head)
			}
			sameTrees(t, a, b)
			a.fsck()
			b.fsck()
		})
	}
}

// TestHubWithMainKeepsMain: a hub with main (every hub the Python tool or
// an earlier sync used) is synced on main even when its HEAD names another
// branch, and the report says nothing about branches.
func TestHubWithMainKeepsMain(t *testing.T) {
	hub := filepath.Join(t.TempDir(), "hub.git")
	seedHub(t, hub, "master")
	testutil.Git(t, hub, "branch", "main", "master")
	a := newMachine(t, "a", hub)
	a.write(mkNote(a, "n", "x"))
	rep := a.sync()
	if rep.Branch != "main" || rep.BranchNote != "" {
		t.Fatalf("report: %+v", rep)
	}
	if !strings.Contains(testutil.Git(t, hub, "log", "--format=%s", "main"), "sync from a") ||
		strings.Contains(testutil.Git(t, hub, "log", "--format=%s", "master"), "sync from a") {
		t.Fatal("pushed to the wrong branch")
	}
}

func TestChooseBranch(t *testing.T) {
	h := plumbing.NewHash("0123456789012345678901234567890123456789")
	refs := func(names ...string) map[plumbing.ReferenceName]plumbing.Hash {
		m := map[plumbing.ReferenceName]plumbing.Hash{}
		for _, n := range names {
			m[plumbing.NewBranchReferenceName(n)] = h
		}
		return m
	}
	for _, c := range []struct {
		adv          advert
		branch, note string
	}{
		{advert{refs: refs()}, "main", ""},
		{advert{refs: refs(), head: "refs/heads/master"}, "main", ""},
		{advert{refs: refs("main", "master"), head: "refs/heads/master"}, "main", ""},
		{advert{refs: refs("master"), head: "refs/heads/master"}, "master", "default branch master"},
		{advert{refs: refs("trunk", "dev"), head: "refs/heads/trunk"}, "trunk", "default branch trunk"},
		{advert{refs: refs("trunk")}, "trunk", "only branch trunk"},
		{advert{refs: refs("trunk", "dev")}, "main", "created main"},
	} {
		b, why := c.adv.chooseBranch()
		if b != c.branch || (c.note == "") != (why == "") || !strings.Contains(why, c.note) {
			t.Errorf("%+v: %q %q, want %q %q", c.adv, b, why, c.branch, c.note)
		}
	}
}
