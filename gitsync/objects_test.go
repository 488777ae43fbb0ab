package gitsync

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// The sizes a checkout checks before writing come from pack headers and
// the first bytes of deltas: they must be the objects' real sizes, for
// whole objects and deltas alike, including one over MaxBlobBytes.
func TestPackedSizesAreTheObjectsSizes(t *testing.T) {
	r, err := Open(ctx, filepath.Join(t.TempDir(), "memory"), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := bytes.Repeat([]byte("a line of a note that repeats\n"), MaxBlobBytes/30)
	sizes := map[plumbing.Hash]int{}
	for i := 0; i < 20; i++ {
		data := append(append([]byte{}, base...), fmt.Sprintf("edit %d\n", i)...)
		if i == 7 {
			data = append(data, bytes.Repeat([]byte("more\n"), 1000)...) // over the bound
		}
		h, err := r.writeBlob(data)
		if err != nil {
			t.Fatal(err)
		}
		sizes[h] = len(data)
	}
	var list strings.Builder
	for h := range sizes {
		list.WriteString(h.String() + "\n")
	}
	cmd := exec.Command("git", "pack-objects", "-q", filepath.Join(r.gitDir, "objects", "pack", "pack"))
	cmd.Dir, cmd.Stdin = r.Dir(), strings.NewReader(list.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git pack-objects: %v\n%s", err, out)
	}
	testutil.Git(t, r.Dir(), "prune-packed")
	if out := testutil.Git(t, r.Dir(), "verify-pack", "-v", filepath.Join(r.gitDir, "objects", "pack", packName(t, r)+".idx")); !strings.Contains(out, "chain length") {
		t.Fatalf("no deltas in the pack:\n%s", out)
	}
	objs := r.openObjects()
	defer objs.Close()
	over := 0
	for h, want := range sizes {
		if _, _, ok := objs.locate(h); !ok {
			t.Fatalf("%s is not in a pack", h)
		}
		got, err := objs.size(h)
		if err != nil || got != int64(want) {
			t.Errorf("size of %s: %d, %v; want %d", h, got, err, want)
		}
		if err := objs.checkBlobSize(h, "semantic/x.md", h); want > MaxBlobBytes {
			over++
			if err == nil {
				t.Errorf("a blob of %d bytes passed", want)
			}
		} else if err != nil {
			t.Error(err)
		}
	}
	if over != 1 {
		t.Fatalf("%d blobs over the bound, want 1", over)
	}
}

func packName(t *testing.T, r *Repo) string {
	t.Helper()
	for n := range r.packFiles() {
		return n
	}
	t.Fatal("no pack")
	return ""
}
