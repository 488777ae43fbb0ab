package gitsync

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// FuzzIncoming feeds arbitrary trees, as a hostile hub or peer would
// serve them, to the merge and checkout path: the fuzzer's bytes are read
// as nested tree entries with any mode, any name (separators, NULs, .git
// variants, duplicates, case twins) and symlink targets pointing out of
// the store. Whatever the tree, nothing may appear outside the store, no
// symlink may appear inside it, and a merge either refuses with
// ErrRefused or leaves only regular files at most MaxPathDepth deep.
func FuzzIncoming(f *testing.F) {
	f.Add([]byte("\x02\x07episode\x00\x01\x07episode\x00\x00\x07.bashrc\x00"))
	f.Add([]byte("\x00\x04a.md\x00\x00\x04A.md\x00"))
	f.Add([]byte("\x01\x04.git\x00\x00\x06config\x00"))
	f.Add([]byte("\x01\x01a\x01\x01b\x01\x01c\x01\x01d\x00\x04e.md\x00"))
	f.Add([]byte("\x00\x05../x\x00\x00\x01/\x00\x04\x02sm\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		outside := filepath.Join(root, "outside")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "home", "memory")
		r, err := Open(ctx, dir, "victim", func() time.Time { return time.Unix(1767225600, 0) })
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "semantic"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "semantic", "01LOCAL.md"), []byte("local\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		head, _, err := r.CommitAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := &treeBuilder{r: r, data: data, outside: outside}
		tree := b.tree(0)
		c, err := r.writeCommit(tree, []plumbing.Hash{plumbing.Hash(head)}, "hub\n")
		if err != nil {
			t.Fatal(err)
		}
		_, mergeErr := r.Merge(ctx, Hash(c))
		if mergeErr != nil && !errors.Is(mergeErr, ErrRefused) && !errors.Is(mergeErr, ErrDirtyPath) {
			// Any other failure must still leave the store intact; it is
			// checked below like a success.
			t.Logf("merge: %v", mergeErr)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("written outside the store: %v (merge: %v)", ents, mergeErr)
		}
		if ents, _ := os.ReadDir(filepath.Join(root, "home")); len(ents) != 1 {
			t.Fatalf("written beside memory/: %v", ents)
		}
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" && p != dir {
				if filepath.Dir(p) != dir {
					t.Fatalf("a .git directory at %s", p)
				}
				return fs.SkipDir
			}
			if d.Type()&fs.ModeSymlink != 0 {
				t.Fatalf("a symlink at %s (merge: %v)", p, mergeErr)
			}
			rel, _ := filepath.Rel(dir, p)
			if mergeErr == nil && !d.IsDir() && len(strings.Split(filepath.ToSlash(rel), "/")) > MaxPathDepth {
				t.Fatalf("a file %d deep at %s", len(strings.Split(rel, "/")), rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// treeBuilder reads fuzz bytes as tree entries: a mode byte, a name
// length and name, then a file's content length and content, or a
// directory's entries up to a zero name length.
type treeBuilder struct {
	r       *Repo
	data    []byte
	outside string
}

func (b *treeBuilder) next() byte {
	if len(b.data) == 0 {
		return 0
	}
	c := b.data[0]
	b.data = b.data[1:]
	return c
}

func (b *treeBuilder) take(n int) []byte {
	n = min(n, len(b.data))
	out := b.data[:n]
	b.data = b.data[n:]
	return out
}

var fuzzModes = []string{modeFile, modeDir, "120000", modeExec, "160000", "040000", "100664", "0"}

func (b *treeBuilder) tree(depth int) plumbing.Hash {
	var raw bytes.Buffer
	for n := 0; len(b.data) > 0 && n < 32; n++ {
		mode := fuzzModes[int(b.next())%len(fuzzModes)]
		nameLen := int(b.next())
		if nameLen == 0 && depth > 0 {
			break
		}
		name := b.take(nameLen)
		var h plumbing.Hash
		switch {
		case (mode == modeDir || mode == "040000") && depth < 8:
			h = b.tree(depth + 1)
		case mode == "120000":
			// A link's target: somewhere outside the store, or what the
			// fuzzer wrote.
			target := []byte(b.outside)
			if b.next()%2 == 1 {
				target = b.take(int(b.next()))
			}
			h = b.blob(target)
		default:
			h = b.blob(b.take(int(b.next())))
		}
		raw.WriteString(mode + " ")
		raw.Write(name)
		raw.WriteByte(0)
		raw.Write(h[:])
	}
	obj := b.r.r.Storer.NewEncodedObject()
	obj.SetType(plumbing.TreeObject)
	w, _ := obj.Writer()
	w.Write(raw.Bytes())
	w.Close()
	h, err := b.r.r.Storer.SetEncodedObject(obj)
	if err != nil {
		panic(err)
	}
	return h
}

func (b *treeBuilder) blob(data []byte) plumbing.Hash {
	h, err := b.r.writeBlob(data)
	if err != nil {
		panic(err)
	}
	return h
}
