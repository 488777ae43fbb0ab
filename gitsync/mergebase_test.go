package gitsync

import (
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// verifyIncoming finds the merge base on its walk; it must be the one
// go-git's MergeBase picks (the least by hash of the best common
// ancestors), on histories with merges and criss-crosses, so machines
// running this and the build before merge alike.
func TestMergeBaseOfTheWalkIsGitsMergeBase(t *testing.T) {
	r, err := Open(ctx, filepath.Join(t.TempDir(), "memory"), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.writeTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(29))
	var commits []plumbing.Hash
	for i := 0; i < 120; i++ {
		var parents []plumbing.Hash
		if len(commits) > 0 {
			parents = append(parents, commits[len(commits)-1-rng.Intn(min(len(commits), 8))])
			if rng.Intn(3) == 0 {
				if p := commits[rng.Intn(len(commits))]; p != parents[0] {
					parents = append(parents, p)
				}
			}
		}
		if i == 60 {
			parents = nil // a second root: some pairs share nothing
		}
		c, err := r.writeCommit(tree, parents, "c "+string(rune('a'+i%26))+"\n")
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
	}
	objs := r.openObjects()
	defer objs.Close()
	compared, several, unrelated := 0, 0, 0
	for k := 0; k < 300; k++ {
		head, tip := commits[rng.Intn(len(commits))], commits[rng.Intn(len(commits))]
		in, err := r.verifyIncoming(ctx, objs, head, tip)
		if err != nil {
			t.Fatal(err)
		}
		if in.upToDate || in.fastForward {
			continue
		}
		L, _ := r.r.CommitObject(head)
		R, _ := r.r.CommitObject(tip)
		bases, err := L.MergeBase(R)
		if err != nil {
			t.Fatal(err)
		}
		var want plumbing.Hash
		switch len(bases) {
		case 0:
			unrelated++
		case 1:
		default:
			several++
		}
		if len(bases) > 0 {
			sort.Slice(bases, func(i, j int) bool { return bases[i].Hash.String() < bases[j].Hash.String() })
			want = bases[0].Hash
		}
		if in.base != want {
			t.Fatalf("merge base of %s and %s: %s, go-git says %s", head, tip, in.base, want)
		}
		compared++
	}
	if compared < 50 || several == 0 || unrelated == 0 {
		t.Fatalf("%d pairs needed a merge, %d with several best bases, %d unrelated", compared, several, unrelated)
	}
}
