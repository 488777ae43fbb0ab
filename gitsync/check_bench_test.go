package gitsync

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// BenchmarkVerifyHistory is what checking a first sync's whole history
// costs: 10,000 notes in four type directories, then 1,000 commits that
// each change one note (every commit brings a new root tree and a new
// type directory tree of about 2,500 entries), packed as a fetch leaves
// them.
func BenchmarkVerifyHistory(b *testing.B) {
	r, err := Open(ctx, filepath.Join(b.TempDir(), "memory"), "bench", func() time.Time { return time.Unix(1767225600, 0) })
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]entry{}
	types := []string{"semantic", "episodic", "procedural", "preference"}
	for i := 0; i < 10000; i++ {
		h, err := r.writeBlob([]byte(fmt.Sprintf("---\nid: %d\n---\nnote %d\n", i, i)))
		if err != nil {
			b.Fatal(err)
		}
		files[fmt.Sprintf("%s/01NOTE%020d.md", types[i%4], i)] = entry{Mode: filemode.Regular, Hash: h}
	}
	var head plumbing.Hash
	for c := 0; c < 1000; c++ {
		h, _ := r.writeBlob([]byte(fmt.Sprintf("edit %d\n", c)))
		files[fmt.Sprintf("%s/01NOTE%020d.md", types[c%4], c)] = entry{Mode: filemode.Regular, Hash: h}
		tree, err := r.buildTree(files)
		if err != nil {
			b.Fatal(err)
		}
		var parents []plumbing.Hash
		if !head.IsZero() {
			parents = []plumbing.Hash{head}
		}
		if head, err = r.writeCommit(tree, parents, "c\n"); err != nil {
			b.Fatal(err)
		}
	}
	// As a fetch leaves them: one pack, trees stored as deltas.
	if out, err := exec.Command("git", "-C", r.Dir(), "update-ref", "refs/heads/main", head.String()).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", r.Dir(), "repack", "-adq").CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	if r, err = Open(ctx, r.Dir(), "bench", nil); err != nil {
		b.Fatal(err)
	}
	objs := r.openObjects()
	defer objs.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.verifyIncoming(ctx, objs, plumbing.ZeroHash, head); err != nil {
			b.Fatal(err)
		}
	}
}
