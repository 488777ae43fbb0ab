package gitsync

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

func TestParseHash(t *testing.T) {
	const s = "0123456789abcdef0123456789abcdef01234567"
	h, err := ParseHash(s)
	if err != nil || h.String() != s || h.IsZero() {
		t.Fatalf("ParseHash(%q) = %v, %v", s, h, err)
	}
	for _, bad := range []string{"", "abc", s + "0", strings.Replace(s, "0", "g", 1)} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) took it", bad)
		}
	}
	if !(Hash{}).IsZero() {
		t.Error("the zero Hash is not zero")
	}
}

// TestHistoryReading checks the API the packages above read the history
// through against the git CLI: commits, blobs, and a tree diff that
// reports exactly the files that changed, in nested directories too.
func TestHistoryReading(t *testing.T) {
	hub := testutil.BareHub(t)
	m := newMachine(t, "desk", hub)
	put := func(rel, text string) {
		t.Helper()
		p := filepath.Join(m.repo.Dir(), rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit := func() Hash {
		t.Helper()
		m.tick = m.tick.Add(time.Minute)
		h, ok, err := m.repo.CommitAll(ctx)
		if err != nil || !ok {
			t.Fatalf("commit: %v %v", ok, err)
		}
		return h
	}
	put("semantic/a.md", "a1")
	put("semantic/deep/b.md", "b1")
	put("episodic/c.md", "c1")
	first := commit()
	put("semantic/deep/b.md", "b2")
	if err := os.Remove(filepath.Join(m.repo.Dir(), "episodic/c.md")); err != nil {
		t.Fatal(err)
	}
	put("procedural/d.md", "d1")
	second := commit()

	head, err := m.repo.Head()
	if err != nil || head != second {
		t.Fatalf("Head = %v, %v; want %v", head, err, second)
	}
	if got := strings.TrimSpace(testutil.Git(t, m.repo.Dir(), "rev-parse", "HEAD")); got != second.String() {
		t.Fatalf("git says HEAD is %s, Head %s", got, second)
	}
	c2, err := m.repo.CommitAt(second)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := m.repo.CommitAt(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Parents) != 1 || c2.Parents[0] != first || c2.Machine != "desk" || !c2.Time.Equal(m.tick) || c2.Tree.IsZero() {
		t.Errorf("commit %+v", c2)
	}
	if _, err := m.repo.CommitAt(Hash{1}); !errors.Is(err, ErrNoObject) {
		t.Errorf("CommitAt of an unknown commit: %v", err)
	}

	trees := m.repo.Trees()
	type change struct{ path, from, to string }
	read := func(h Hash) string {
		if h.IsZero() {
			return "-"
		}
		b, err := m.repo.ReadBlob(h, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var got []change
	if err := trees.ChangedFiles(c1.Tree, c2.Tree, func(path string, from, to Hash) error {
		got = append(got, change{path, read(from), read(to)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []change{{"episodic/c.md", "c1", "-"}, {"procedural/d.md", "-", "d1"}, {"semantic/deep/b.md", "b1", "b2"}}
	if len(got) != len(want) {
		t.Fatalf("ChangedFiles: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ChangedFiles[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	var all int
	if err := trees.ChangedFiles(Hash{}, c1.Tree, func(string, Hash, Hash) error { all++; return nil }); err != nil || all != 3 {
		t.Errorf("from the empty tree: %d files, %v", all, err)
	}

	for _, tc := range []struct {
		tree      Hash
		path, has string
	}{
		{c1.Tree, "semantic/deep/b.md", "b1"},
		{c2.Tree, "semantic/deep/b.md", "b2"},
		{c2.Tree, "episodic/c.md", "-"},
		{c2.Tree, "semantic/deep", "-"}, // a directory is no file
		{c2.Tree, "semantic/a.md/x", "-"},
		{c2.Tree, "nowhere/x.md", "-"},
	} {
		b, err := trees.BlobAt(tc.tree, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(b); got != tc.has {
			t.Errorf("BlobAt(%s) = %q, want %q", tc.path, got, tc.has)
		}
	}
	b, _ := trees.BlobAt(c1.Tree, "semantic/a.md")
	if data, err := m.repo.ReadBlob(b, 1); !errors.Is(err, ErrBlobTooLarge) || data != nil {
		t.Errorf("ReadBlob of a blob over its limit: %q, %v; want it refused", data, err)
	}
	if got := string(mustRead(t, m.repo, b, int64(len(read(b))))); got != read(b) {
		t.Errorf("ReadBlob at exactly its size: %q", got)
	}

	var walked []Hash
	if _, err := m.repo.WalkLog(ctx, 10, func(c Commit) (bool, error) { walked = append(walked, c.Hash); return false, nil }); err != nil {
		t.Fatal(err)
	}
	if len(walked) != 2 || walked[0] != second || walked[1] != first {
		t.Errorf("WalkLog: %v", walked)
	}
}

func mustRead(t *testing.T, r *Repo, h Hash, limit int64) []byte {
	t.Helper()
	b, err := r.ReadBlob(h, limit)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
