//go:build unix

package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// These use the scale hubs of pullscale_test.go (git fast-import), which
// are Unix-only.

// A pull reads each tree it needs from the object store once: verifying
// what came and checking it out walk the same changed directories (a
// 2 MB tree each at 100,000 notes), and the checkout takes them from the
// cache. Before the cache every changed tree was inflated twice.
func TestPullReadsEachTreeOnce(t *testing.T) {
	hub := scaleHub(t, 300)
	r := openBench(t, filepath.Join(t.TempDir(), "memory"))
	if _, err := r.Sync(ctx, Options{Remote: hub}); err != nil {
		t.Fatal(err)
	}
	hubCommit(t, hub, 300, 3, 2) // one new note in each of the three directories
	r2 := openBench(t, r.Dir())  // a new process: nothing cached
	rep, err := r2.Sync(ctx, Options{Remote: hub})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.FastForward {
		t.Fatalf("pull: %+v", rep)
	}
	// The root and the three directories, each before and after.
	if got, want := r2.treeReads.Load(), int32(8); got > want {
		t.Errorf("%d tree reads from the object store for a pull of three notes, want at most %d", got, want)
	}
}

// Every object of a pack made by git (whole objects and deltas, the
// latter made from their bases by our reader) reads as git reads it; a
// read of the wrong type or over the limit is refused from the header.
func TestPackedReadsAreGitsObjects(t *testing.T) {
	r := openBench(t, filepath.Join(t.TempDir(), "memory"))
	for i := range 30 {
		body := strings.Repeat(fmt.Sprintf("line of note %d that repeats\n", i%3), 200) + fmt.Sprintf("edit %d\n", i)
		p := filepath.Join(r.Dir(), "semantic", fmt.Sprintf("n%02d.md", i%10))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Sync(ctx, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, r.Dir(), "gc", "-q", "--aggressive")
	if out := testutil.Git(t, r.Dir(), "count-objects", "-v"); !strings.Contains(out, "count: 0") {
		t.Fatalf("loose objects left after gc:\n%s", out)
	}
	list := testutil.Git(t, r.Dir(), "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(deltabase)")
	objs := r.openObjects()
	defer objs.Close()
	deltas := 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(line)
		h := plumbing.NewHash(f[0])
		typ, err := plumbing.ParseObjectType(f[1])
		if err != nil {
			t.Fatal(err)
		}
		if f[2] != plumbing.ZeroHash.String() {
			deltas++
		}
		got, err := objs.raw(h, typ, MaxBlobBytes*4)
		if err != nil {
			t.Fatalf("read %s %s: %v", typ, h, err)
		}
		cmd := exec.Command("git", "cat-file", f[1], f[0])
		cmd.Dir = r.Dir()
		want, err := cmd.Output()
		if err != nil {
			t.Fatalf("git cat-file %s %s: %v", f[1], f[0], err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s reads %d bytes unlike git's %d", typ, h, len(got), len(want))
		}
		other := plumbing.BlobObject
		if typ == plumbing.BlobObject {
			other = plumbing.CommitObject
		}
		if _, err := objs.read(h, other, MaxBlobBytes); err == nil {
			t.Errorf("%s %s read as a %s", typ, h, other)
		}
		var tl *tooLargeError
		if _, err := objs.read(h, typ, 1); !errors.As(err, &tl) {
			t.Errorf("%s %s over a limit of 1 byte: %v", typ, h, err)
		}
	}
	if deltas == 0 {
		t.Fatal("git's pack holds no deltas: reading deltas is untested")
	}
}
