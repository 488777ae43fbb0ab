package note

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// serialWalk is Tree.Walk as it was before it went parallel
// (filepath.WalkDir and lstat by path), kept as the reference the walk
// must agree with.
func serialWalk(t Tree, fn func(Entry) error) error {
	err := filepath.WalkDir(t.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == t.Root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if p == t.Root {
			return nil
		}
		rel, err := filepath.Rel(t.Root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.Contains(rel, "/") || !ValidType(rel) {
				return fs.SkipDir
			}
			return nil
		}
		if !IsNotePath(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return fn(Entry{Rel: rel, Size: info.Size(), MtimeNS: info.ModTime().UnixNano()})
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", t.Root, err)
	}
	return nil
}

// listing is a walk's output as text: every entry with its size and
// mtime, in the order given, then the error.
func listing(walk func(fn func(Entry) error) error) string {
	var b strings.Builder
	err := walk(func(e Entry) error {
		fmt.Fprintf(&b, "%s %d %d\n", e.Rel, e.Size, e.MtimeNS)
		return nil
	})
	fmt.Fprintf(&b, "error: %v\n", err)
	return b.String()
}

// walkListing is the listing of tr.Walk, or with afterList of the walk
// that calls it.
func walkListing(tr Tree, afterList func()) string {
	return listing(func(fn func(Entry) error) error {
		if afterList == nil {
			return tr.Walk(context.Background(), fn)
		}
		entries, err := tr.list(context.Background(), afterList)
		for _, e := range entries {
			fn(e)
		}
		return err
	})
}

func serialListing(tr Tree) string {
	return listing(func(fn func(Entry) error) error { return serialWalk(tr, fn) })
}

// writeTree creates files (paths relative to root, forward slashes) with
// contents of varied length and distinct mtimes.
func writeTree(t *testing.T, root string, files []string) {
	t.Helper()
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, rel := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("x", i%97)), 0o644); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * 1234567 * time.Nanosecond)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// bigTree builds a tree like a store's: three type directories, one of
// them over several walk chunks, with everything a walk must skip or
// report around the notes, and links that must not be followed. It
// returns the tree and the outside directory its links point to.
func bigTree(t *testing.T) (Tree, string) {
	t.Helper()
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	tr := Tree{Root: filepath.Join(dir, "memory"), Scope: ScopePortable}
	var files []string
	for i := range 3*walkChunk + 17 {
		files = append(files, fmt.Sprintf("episodic/01M8096W5QX5ZSS42R5%05d.md", i))
	}
	for i := range 40 {
		files = append(files, fmt.Sprintf("semantic/note-%03d.md", i), fmt.Sprintf("procedural/P%03d.conflict-0a0b0c%02x.md", i, i))
	}
	files = append(files,
		// Not notes: skipped without a look.
		"README.md", "docs/setup.md", ".github/ISSUE_TEMPLATE/bug.md", ".git/semantic/X1.md",
		"semantic/sub/X2.md", "semantic/sub/deeper/X3.md", "semantic/.tmp-anamnesis-123", "semantic/has space.md",
		"semantic/x.conflict-zz.md", "semantic/.hidden.md", "semantic/x.md.txt", "Semantic/X1.md", "opinions/X1.md",
		// Outside the tree, where links point.
		"../outside/semantic/Secret1.md", "../outside/Secret2.md",
	)
	writeTree(t, tr.Root, files)
	for _, dirLike := range []string{"semantic/Y1.md", "episodic/Y2.md"} { // directories at note paths
		if err := os.MkdirAll(filepath.Join(tr.Root, dirLike), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"semantic/L1.md":         filepath.Join(outside, "Secret2.md"), // out of the tree
		"semantic/L2.md":         "note-001.md",                        // inside it
		"semantic/L3.md":         filepath.Join(dir, "missing.md"),     // dangling
		"semantic/L4.md":         filepath.Join(outside, "semantic"),   // to a directory
		"procedural/sub":         filepath.Join(outside, "semantic"),
		"episodic/01LINK0000.md": filepath.Join(outside, "semantic", "Secret1.md"),
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(tr.Root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	return tr, outside
}

// TestWalkMatchesSerialWalk: the parallel walk lists exactly what the
// serial one did (same entries, sizes, mtimes, order) on a tree with big
// and small type directories, nested directories, directories and links
// at note paths, and noise.
func TestWalkMatchesSerialWalk(t *testing.T) {
	tr, _ := bigTree(t)
	want := serialListing(tr)
	if got := walkListing(tr, nil); got != want {
		t.Fatalf("walk:\n%s\nserial walk:\n%s", got, want)
	}
	got := listing(func(fn func(Entry) error) error {
		entries, err := tr.List(context.Background())
		for _, e := range entries {
			fn(e)
		}
		return err
	})
	if got != want {
		t.Fatalf("List:\n%s\nserial walk:\n%s", got, want)
	}
	if n := strings.Count(want, "\n"); n < 3*walkChunk {
		t.Fatalf("the reference listed only %d lines", n)
	}
	// Links are listed as what they are (so a reconcile reports them),
	// never followed.
	for _, rel := range []string{"semantic/L1.md", "semantic/L3.md", "semantic/L4.md", "episodic/01LINK0000.md"} {
		if !strings.Contains("\n"+want, "\n"+rel+" ") {
			t.Errorf("link %s not listed", rel)
		}
	}
}

// TestWalkDoesNotFollowLinkedTypeDir: a type directory that is a link
// (to anywhere) is not read, nor is a tree whose root is a link, as
// filepath.WalkDir did not follow them; and a type directory swapped for
// a link after the root was read is not opened through it.
func TestWalkDoesNotFollowLinkedTypeDir(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	writeTree(t, outside, []string{"semantic/Secret1.md", "episodic/Secret2.md"})
	tr := Tree{Root: filepath.Join(dir, "memory"), Scope: ScopePortable}
	writeTree(t, tr.Root, []string{"procedural/P1.md"})
	if err := os.Symlink(filepath.Join(outside, "semantic"), filepath.Join(tr.Root, "semantic")); err != nil {
		t.Fatal(err)
	}
	want := "procedural/P1.md 0 1709294400000000000\nerror: <nil>\n"
	if got, ref := walkListing(tr, nil), serialListing(tr); got != want || ref != want {
		t.Fatalf("walk:\n%s\nserial walk:\n%s\nwant:\n%s", got, ref, want)
	}
	linkedRoot := Tree{Root: filepath.Join(dir, "linked"), Scope: ScopePortable}
	if err := os.Symlink(outside, linkedRoot.Root); err != nil {
		t.Fatal(err)
	}
	if got, ref := walkListing(linkedRoot, nil), serialListing(linkedRoot); got != "error: <nil>\n" || ref != got {
		t.Fatalf("a linked root: walk:\n%s\nserial walk:\n%s", got, ref)
	}
	root, err := openWalkRoot(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer root.close()
	if d, err := root.openTypeDir("semantic"); !errors.Is(err, errGone) {
		d.close()
		t.Fatalf("a linked type directory opened: %v", err)
	}
}

// TestWalkFilesRemovedMidWalk: files removed after their directory was
// read, a whole type directory's among them, are left out, as the serial
// walk left out what it did not find.
func TestWalkFilesRemovedMidWalk(t *testing.T) {
	tr, _ := bigTree(t)
	var removed []string
	remove := func() {
		for _, rel := range []string{"episodic/01M8096W5QX5ZSS42R500000.md", "episodic/01M8096W5QX5ZSS42R500700.md",
			"episodic/01LINK0000.md", "semantic/L3.md"} {
			removed = append(removed, rel)
			if err := os.Remove(filepath.Join(tr.Root, rel)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range walkChunk + 3 { // a whole chunk and more
			if err := os.Remove(filepath.Join(tr.Root, fmt.Sprintf("episodic/01M8096W5QX5ZSS42R5%05d.md", 1000+i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.RemoveAll(filepath.Join(tr.Root, "procedural")); err != nil {
			t.Fatal(err)
		}
	}
	got := walkListing(tr, remove)
	if want := serialListing(tr); got != want {
		t.Fatalf("walk:\n%s\nserial walk after the removals:\n%s", got, want)
	}
	for _, rel := range append(removed, "procedural/P000.conflict-0a0b0c00.md") {
		if strings.Contains(got, rel) {
			t.Errorf("removed %s listed", rel)
		}
	}
}

// TestWalkWhileFilesChange: walks while other goroutines add and remove
// notes never fail and always list every note that stays.
func TestWalkWhileFilesChange(t *testing.T) {
	tr, _ := bigTree(t)
	stay := walkListing(tr, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				p := filepath.Join(tr.Root, "semantic", fmt.Sprintf("churn-%d-%d.md", w, i%50))
				os.WriteFile(p, []byte("x"), 0o644)
				os.Remove(p)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	for range 20 {
		got := walkListing(tr, nil)
		var kept []string
		for line := range strings.Lines(got) {
			if !strings.HasPrefix(line, "semantic/churn-") {
				kept = append(kept, line)
			}
		}
		if strings.Join(kept, "") != stay {
			t.Fatalf("a walk during changes:\n%s\nwant (besides the changing files):\n%s", got, stay)
		}
	}
}

// TestWalkMissingAndOddRoots: a missing tree, or a root that is a file,
// is empty, as it was.
func TestWalkMissingAndOddRoots(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, root := range []string{filepath.Join(dir, "missing"), file} {
		tr := Tree{Root: root}
		if got, ref := walkListing(tr, nil), serialListing(tr); got != "error: <nil>\n" || ref != got {
			t.Errorf("%s: walk:\n%s\nserial walk:\n%s", root, got, ref)
		}
	}
}

// TestWalkStopsWithCallerError: an error from fn ends the walk, wrapped.
func TestWalkStopsWithCallerError(t *testing.T) {
	tr, _ := bigTree(t)
	stop := errors.New("enough")
	n := 0
	err := tr.Walk(context.Background(), func(Entry) error {
		if n++; n == walkChunk+1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != walkChunk+1 {
		t.Fatalf("walk after fn failed: %v, %d calls", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Walk(ctx, func(Entry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled walk: %v", err)
	}
}

// TestWalkUnreadableDirs: a type directory that cannot be read, or whose
// files cannot be looked up, fails the walk with the error the serial
// walk gave; an unreadable directory that is not a type directory is not
// looked at. Root reads everything, so as root the test runs itself
// again without the capabilities that let it (setpriv).
func TestWalkUnreadableDirs(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv("ANAMNESIS_TEST_NO_DAC") == "" {
		rerunWithoutDAC(t)
		return
	}
	tr, _ := bigTree(t)
	if err := os.Chmod(filepath.Join(tr.Root, ".github"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(tr.Root, ".github"), 0o755)
	if got, want := walkListing(tr, nil), serialListing(tr); got != want || strings.Contains(got, "denied") {
		t.Fatalf("an unreadable .github/: walk:\n%s\nserial walk:\n%s", got, want)
	}
	for _, mode := range []os.FileMode{0, 0o444} { // neither readable nor searchable; readable only
		t.Run(mode.String(), func(t *testing.T) {
			sem := filepath.Join(tr.Root, "semantic")
			if err := os.Chmod(sem, mode); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(sem, 0o755)
			if _, err := os.Lstat(filepath.Join(sem, "note-000.md")); err == nil {
				t.Skip("this process may read any directory")
			}
			got, want := walkListing(tr, nil), serialListing(tr)
			if got != want {
				t.Fatalf("walk:\n%s\nserial walk:\n%s", got, want)
			}
			if !strings.Contains(got, "permission denied") {
				t.Fatalf("the walk did not fail:\n%s", got)
			}
		})
	}
}

// rerunWithoutDAC runs the calling test in a process of root without
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, where file modes bind.
func rerunWithoutDAC(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("root, and no setpriv to drop the capabilities that read any directory")
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search",
		os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ANAMNESIS_TEST_NO_DAC=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s without DAC capabilities: %v\n%s", t.Name(), err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("skipped without DAC capabilities too:\n%s", out)
	}
	t.Logf("%s", out)
}
