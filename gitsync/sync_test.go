package gitsync

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

var ctx = context.Background()

type machine struct {
	name string
	repo *Repo
	hub  string
	t    *testing.T
	tick time.Time
}

func newMachine(t *testing.T, name, hub string) *machine {
	dir := filepath.Join(t.TempDir(), name, "memory")
	m := &machine{name: name, hub: hub, t: t, tick: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r, err := Open(ctx, dir, name, func() time.Time { return m.tick })
	if err != nil {
		t.Fatal(err)
	}
	m.repo = r
	return m
}

func (m *machine) advance() { m.tick = m.tick.Add(time.Minute) }

func (m *machine) write(n *note.Note) string {
	m.t.Helper()
	return m.writeAt(n.RelPath(), n)
}

// writeAt writes n at rel (a conflict copy lives at a path that is not
// <type>/<id>.md).
func (m *machine) writeAt(rel string, n *note.Note) string {
	m.t.Helper()
	if err := note.WriteFileAtomic(filepath.Join(m.repo.Dir(), rel), note.Marshal(n)); err != nil {
		m.t.Fatal(err)
	}
	return rel
}

func (m *machine) read(rel string) *note.Note {
	m.t.Helper()
	data, err := os.ReadFile(filepath.Join(m.repo.Dir(), rel))
	if err != nil {
		m.t.Fatalf("%s: %v", m.name, err)
	}
	n, err := note.Parse(data)
	if err != nil {
		m.t.Fatalf("%s %s: %v", m.name, rel, err)
	}
	return n
}

func (m *machine) sync() Report {
	m.t.Helper()
	m.advance()
	rep, err := m.repo.Sync(ctx, Options{Remote: m.hub, Timeout: 20 * time.Second})
	if err != nil {
		m.t.Fatalf("%s sync: %v", m.name, err)
	}
	return rep
}

func (m *machine) tree() map[string]string {
	out := map[string]string{}
	filepath.WalkDir(m.repo.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(m.repo.Dir(), p)
		data, _ := os.ReadFile(p)
		out[rel] = string(data)
		return nil
	})
	return out
}

func (m *machine) fsck() {
	m.t.Helper()
	testutil.Git(m.t, m.repo.Dir(), "fsck", "--strict")
	if st := testutil.Git(m.t, m.repo.Dir(), "status", "--porcelain"); st != "" {
		m.t.Errorf("%s: git status not clean after sync:\n%s", m.name, st)
	}
}

func sameTrees(t *testing.T, ms ...*machine) {
	t.Helper()
	first := ms[0].tree()
	for _, m := range ms[1:] {
		other := m.tree()
		if len(other) != len(first) {
			t.Fatalf("%s has %d files, %s has %d", ms[0].name, len(first), m.name, len(other))
		}
		for p, c := range first {
			if other[p] != c {
				t.Fatalf("%s differs between %s and %s", p, ms[0].name, m.name)
			}
		}
	}
}

func mkNote(m *machine, title, body string) *note.Note {
	n := note.New(note.TypeSemantic, title, body, m.tick)
	n.MachineID = m.name
	return n
}

func TestEmptyStoreEmptyRemote(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	rep := a.sync()
	if rep.Pushed || rep.Committed {
		t.Fatalf("nothing to do, got %+v", rep)
	}
	// A remote added after a local-only start works too.
	n := mkNote(a, "first", "hello")
	a.write(n)
	if _, err := a.repo.Sync(ctx, Options{}); err != nil {
		t.Fatal(err)
	}
	rep = a.sync()
	if !rep.Pushed {
		t.Fatalf("first push: %+v", rep)
	}
	if log := testutil.Git(t, hub, "log", "--format=%an <%ae> %s", "main"); !strings.Contains(log, "anamnesis <anamnesis@a> anamnesis: sync from a at 2026-01-01T00:0") {
		t.Errorf("commit identity/message: %s", log)
	}
}

func TestNoteTravelsAndConcurrentEditsMerge(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	base := mkNote(a, "shared", "line one\nline two\nline three\nline four\nline five")
	base.Tags = []string{"x"}
	rel := a.write(base)
	other := a.write(mkNote(a, "other", "untouched"))
	a.sync()
	if rep := b.sync(); !rep.FastForward {
		t.Fatalf("b's first sync should fast-forward: %+v", rep)
	}
	if b.read(rel).Body != base.Body {
		t.Fatal("note did not reach b")
	}

	// Different lines of the same note, plus a tag on each side.
	na := a.read(rel)
	na.Body = strings.Replace(na.Body, "line one", "line ONE (a)", 1)
	na.Tags = append(na.Tags, "from-a")
	a.advance()
	na.UpdatedAt = note.Now(a.tick)
	a.write(na)
	nb := b.read(rel)
	nb.Body = strings.Replace(nb.Body, "line five", "line FIVE (b)", 1)
	nb.Tags = append(nb.Tags, "from-b")
	b.advance()
	b.advance()
	nb.UpdatedAt = note.Now(b.tick)
	b.write(nb)
	// And a note each.
	a.write(mkNote(a, "only a", "alpha"))
	b.write(mkNote(b, "only b", "beta"))

	a.sync()
	rep := b.sync()
	if !rep.Merged || len(rep.ConflictCopies) != 0 || !rep.Pushed {
		t.Fatalf("b merge: %+v", rep)
	}
	a.sync()
	sameTrees(t, a, b)
	got := a.read(rel)
	if !strings.Contains(got.Body, "line ONE (a)") || !strings.Contains(got.Body, "line FIVE (b)") {
		t.Errorf("body not merged: %q", got.Body)
	}
	if strings.Join(got.Tags, ",") != "x,from-b,from-a" {
		t.Errorf("tags not merged as a set (newer side first): %v", got.Tags)
	}
	if got.UpdatedAt != nb.UpdatedAt {
		t.Errorf("updated_at should be the newest: %s", got.UpdatedAt)
	}
	if a.read(other).Body != "untouched" {
		t.Error("untouched note changed")
	}
	a.fsck()
	b.fsck()
	graph := testutil.Git(t, b.repo.Dir(), "log", "--graph", "--oneline", "main")
	if !strings.Contains(graph, "|\\") && !strings.Contains(graph, "|/") {
		t.Errorf("history shows no merge:\n%s", graph)
	}
	parents := strings.Fields(testutil.Git(t, b.repo.Dir(), "log", "-1", "--merges", "--format=%P", "main"))
	if len(parents) != 2 {
		t.Errorf("merge commit parents: %v", parents)
	}
}

func TestOverlappingEditsMakeOneConflictCopy(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	n := mkNote(a, "contested", "the answer is 41")
	rel := a.write(n)
	a.sync()
	b.sync()
	na := a.read(rel)
	na.Body = "the answer is 42 (a)"
	a.advance()
	na.UpdatedAt = note.Now(a.tick)
	a.write(na)
	nb := b.read(rel)
	nb.Body = "the answer is 43 (b)"
	b.advance()
	b.advance()
	nb.UpdatedAt = note.Now(b.tick) // b is newer
	b.write(nb)
	a.sync()
	rep := b.sync()
	if len(rep.ConflictCopies) != 1 {
		t.Fatalf("want one conflict copy, got %+v", rep)
	}
	a.sync()
	b.sync()
	sameTrees(t, a, b)
	if got := a.read(rel); got.Body != "the answer is 43 (b)" || got.ID != n.ID {
		t.Errorf("newer note should stay at the path: %+v", got)
	}
	cp := a.read(rep.ConflictCopies[0])
	if cp.Body != "the answer is 42 (a)" || cp.ID == n.ID || !note.ValidID(cp.ID) {
		t.Errorf("conflict copy: %+v", cp)
	}
	if v, _ := cp.ExtraValue(ConflictKey); v != n.ID {
		t.Errorf("conflict_of = %q", v)
	}
	if !strings.Contains(rep.ConflictCopies[0], ".conflict-") {
		t.Errorf("copy name %s", rep.ConflictCopies[0])
	}
	a.fsck()
	b.fsck()
}

func TestDeleteVersusEditKeepsTheEdit(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	rel := a.write(mkNote(a, "fragile", "v1"))
	a.sync()
	b.sync()
	os.Remove(filepath.Join(a.repo.Dir(), rel))
	nb := b.read(rel)
	nb.Body = "v2 edited on b"
	b.write(nb)
	a.sync()
	b.sync()
	a.sync()
	sameTrees(t, a, b)
	if a.read(rel).Body != "v2 edited on b" {
		t.Error("edit lost to a delete")
	}
	// And the other way round: edit on a, delete on b.
	na := a.read(rel)
	na.Body = "v3 edited on a"
	a.write(na)
	os.Remove(filepath.Join(b.repo.Dir(), rel))
	b.sync()
	a.sync()
	b.sync()
	sameTrees(t, a, b)
	if b.read(rel).Body != "v3 edited on a" {
		t.Error("edit lost to a delete (reverse)")
	}
}

func TestUnrelatedHistoriesMerge(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	ra := a.write(mkNote(a, "from a", "a"))
	rb := b.write(mkNote(b, "from b", "b"))
	if _, err := b.repo.Sync(ctx, Options{}); err != nil { // b commits locally first
		t.Fatal(err)
	}
	a.sync()
	b.sync()
	a.sync()
	sameTrees(t, a, b)
	a.read(rb)
	b.read(ra)
	a.fsck()
	b.fsck()
}

func TestMergeRefusesToOverwriteUntrackedFile(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	b.write(mkNote(b, "b's", "b"))
	b.sync()
	rel := a.write(mkNote(a, "incoming", "from a"))
	a.sync()
	// An untracked file on b at the incoming path, written after b's commit:
	// simulate by merging directly without committing first.
	if err := os.MkdirAll(filepath.Dir(filepath.Join(b.repo.Dir(), rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.repo.Dir(), rel), []byte("precious local text"), 0o644)
	_, _, fetched, theirs, err := b.repo.fetch(ctx, Options{Remote: hub, Timeout: 10 * time.Second}, nil)
	if err != nil || !fetched {
		t.Fatalf("fetch: %v %v", fetched, err)
	}
	before, _ := b.repo.Head()
	_, err = b.repo.Merge(ctx, Hash(theirs))
	if !errors.Is(err, ErrDirtyPath) {
		t.Fatalf("want ErrDirtyPath, got %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(b.repo.Dir(), rel)); string(data) != "precious local text" {
		t.Fatal("untracked file overwritten")
	}
	if after, _ := b.repo.Head(); after != before {
		t.Fatal("head moved on a refused merge")
	}
	// A normal sync commits the file first, then merges it as an add/add conflict: both kept.
	rep := b.sync()
	if len(rep.ConflictCopies) != 1 {
		t.Fatalf("add/add: %+v", rep)
	}
	tree := b.tree()
	var texts []string
	for _, c := range tree {
		texts = append(texts, c)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "precious local text") || !strings.Contains(all, "from a") {
		t.Fatal("a version was lost")
	}
}

func TestConcurrentSyncsOnOneRepo(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	for i := 0; i < 5; i++ {
		a.write(mkNote(a, fmt.Sprintf("n%d", i), "x"))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	a.fsck()
	if got := strings.Count(testutil.Git(t, hub, "ls-tree", "-r", "--name-only", "main"), "\n"); got != 5 {
		t.Errorf("hub has %d files", got)
	}
}

func TestSyncTimesOutOnAHangingRemote(t *testing.T) {
	a := newMachine(t, "a", "")
	a.write(mkNote(a, "n", "x"))
	// A fake git-upload-pack that never answers, reached through a file:// remote.
	dir := t.TempDir()
	fake := filepath.Join(dir, "git-upload-pack")
	os.WriteFile(fake, []byte("#!/bin/sh\nsleep 30\n"), 0o755)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	start := time.Now()
	_, err := a.repo.Sync(ctx, Options{Remote: testutil.BareHub(t), Timeout: time.Second})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("want a timeout error quickly, got %v after %v", err, time.Since(start))
	}
	if head, _ := a.repo.Head(); head.IsZero() {
		t.Fatal("local note not committed before the network step")
	}
}

// TestRandomizedConvergence: several machines make random creates, edits
// and deletes and sync in random order. In the end all trees are equal and
// no text is lost: every line any machine wrote is still in some note or
// conflict copy, unless a later edit that saw it replaced it or the note
// was deleted.
func TestRandomizedConvergence(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	trace := func(format string, args ...any) {
		if os.Getenv("ANAMNESIS_TRACE") != "" {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	hub := testutil.BareHub(t)
	seed := int64(42)
	if s := os.Getenv("ANAMNESIS_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	r := rand.New(rand.NewSource(seed))
	ms := []*machine{newMachine(t, "a", hub), newMachine(t, "b", hub), newMachine(t, "c", hub)}
	introduced := map[string]bool{}
	killed := map[string]bool{}
	seq := 0
	line := func(kind string, m *machine) string {
		seq++
		l := fmt.Sprintf("%s %d by %s", kind, seq, m.name)
		introduced[l] = true
		return l
	}
	for round := 0; round < rounds; round++ {
		m := ms[r.Intn(len(ms))]
		m.advance()
		var rels []string
		for rel := range m.tree() {
			if strings.HasSuffix(rel, ".md") {
				rels = append(rels, rel)
			}
		}
		sort.Strings(rels)
		switch op := r.Intn(10); {
		case op < 4 || len(rels) == 0:
			body := line("first", m) + "\n" + line("second", m) + "\n" + line("third", m)
			n := mkNote(m, fmt.Sprintf("note %d", seq), body)
			n.ID = fmt.Sprintf("01TEST%020d", seq) // deterministic: the run must replay exactly
			rel := m.write(n)
			trace("%s create %s %q", m.name, rel, body)
		case op < 8:
			rel := rels[r.Intn(len(rels))]
			n := m.read(rel)
			lines := strings.Split(n.Body, "\n")
			i := r.Intn(len(lines))
			killed[lines[i]] = true
			lines[i] = line("edit", m)
			n.Body = strings.Join(lines, "\n")
			n.UpdatedAt = note.Now(m.tick)
			m.writeAt(rel, n)
			trace("%s edit %s -> %q (%s)", m.name, rel, n.Body, n.UpdatedAt)
		default:
			rel := rels[r.Intn(len(rels))]
			trace("%s delete %s", m.name, rel)
			for _, l := range strings.Split(m.read(rel).Body, "\n") {
				killed[l] = true
			}
			os.Remove(filepath.Join(m.repo.Dir(), rel))
		}
		if r.Intn(2) == 0 {
			rep := m.sync()
			trace("%s sync merged=%v ff=%v copies=%v old=%s new=%s", m.name, rep.Merged, rep.FastForward, rep.ConflictCopies, rep.Old[:7], rep.Head[:7])
			if w := os.Getenv("ANAMNESIS_TRACE_PATH"); w != "" {
				if data, err := os.ReadFile(filepath.Join(m.repo.Dir(), w)); err == nil {
					trace("   %s now: %q; log: %s", m.name, strings.SplitN(string(data), "---\n", 3)[2], strings.ReplaceAll(testutil.Git(t, m.repo.Dir(), "log", "--full-history", "--format=%h[%p] %s", "-4", "--", w), "\n", " | "))
				} else {
					trace("   %s now: absent", m.name)
				}
			}
		}
	}
	for i := 0; i < 2; i++ {
		for _, m := range ms {
			m.sync()
		}
	}
	sameTrees(t, ms...)
	for _, m := range ms {
		m.fsck()
	}
	present := map[string]bool{}
	copies := 0
	for rel := range ms[0].tree() {
		if strings.Contains(rel, ".conflict-") {
			copies++
		}
		for _, l := range strings.Split(ms[0].read(rel).Body, "\n") {
			present[l] = true
		}
	}
	lost := 0
	for l := range introduced {
		if !killed[l] && !present[l] {
			lost++
			t.Errorf("line lost: %q", l)
		}
	}
	t.Logf("%d rounds, %d lines written, %d files at the end (%d conflict copies), %d lost", rounds, len(introduced), len(ms[0].tree()), copies, lost)
}

// TestSyncRetriesWhenANoteChangesMidMerge: a note file appears at an
// incoming path after the sync committed (written mid-sync). The merge
// refuses to overwrite it, the sync commits it and merges again, and both
// versions survive.
func TestSyncRetriesWhenANoteChangesMidMerge(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	b.write(mkNote(b, "b's", "b"))
	b.sync()
	rel := a.write(mkNote(a, "incoming", "from a"))
	a.sync()
	fired := 0
	b.repo.beforeMerge = func() {
		if fired++; fired == 1 {
			os.MkdirAll(filepath.Dir(filepath.Join(b.repo.Dir(), rel)), 0o755)
			os.WriteFile(filepath.Join(b.repo.Dir(), rel), []byte("written mid-sync"), 0o644)
		}
	}
	rep := b.sync()
	if rep.Rounds < 2 || !rep.Pushed || len(rep.ConflictCopies) != 1 {
		t.Fatalf("sync should retry after the refused merge: %+v", rep)
	}
	all := ""
	for _, c := range b.tree() {
		all += c
	}
	if !strings.Contains(all, "written mid-sync") || !strings.Contains(all, "from a") {
		t.Fatal("a version was lost")
	}
	b.fsck()
}

func TestDirty(t *testing.T) {
	m := newMachine(t, "a", "")
	rel := m.write(mkNote(m, "n", "body one"))
	check := func(want bool, what string) {
		t.Helper()
		if got, err := m.repo.Dirty(); err != nil || got != want {
			t.Errorf("%s: dirty=%v err=%v, want %v", what, got, err, want)
		}
	}
	check(true, "uncommitted new file")
	if _, _, err := m.repo.CommitAll(ctx); err != nil {
		t.Fatal(err)
	}
	check(false, "after commit")
	time.Sleep(10 * time.Millisecond)
	n := m.read(rel)
	n.Body = "body two" // same size
	m.write(n)
	check(true, "same-size edit")
	m.repo.CommitAll(ctx)
	check(false, "after second commit")
	os.Remove(filepath.Join(m.repo.Dir(), rel))
	check(true, "deleted file")
	m.repo.CommitAll(ctx)
	check(false, "after committing the delete")
	os.WriteFile(filepath.Join(m.repo.Dir(), "x.md"), []byte("x"), 0o644)
	testutil.Git(t, m.repo.Dir(), "add", "x.md")
	os.Remove(filepath.Join(m.repo.Dir(), "x.md"))
	os.WriteFile(filepath.Join(m.repo.Dir(), "x.md"), []byte("x"), 0o644)
	check(true, "staged but not committed")
}

// TestTruncatedTrackingRefAfterACrash: go-git writes refs/remotes/...
// in place, so a sync killed mid-write leaves it empty (or cut short);
// the next sync must not fail on it ("ref file is empty"), and a real git
// must accept the repository afterwards.
func TestTruncatedTrackingRefAfterACrash(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	b := newMachine(t, "b", hub)
	a.write(mkNote(a, "first", "x"))
	a.sync()
	b.sync()
	for _, content := range []string{"", "3f2a9c", "not a ref at all\n"} {
		var tracking string
		filepath.WalkDir(filepath.Join(b.repo.GitDir(), "refs", "remotes"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				tracking = p
			}
			return nil
		})
		if tracking == "" {
			t.Fatal("no tracking ref after a sync")
		}
		os.WriteFile(tracking, []byte(content), 0o644)
		a.write(mkNote(a, "more "+content, "y"))
		a.sync()
		b.write(mkNote(b, "from b "+content, "z"))
		if rep := b.sync(); !rep.Fetched || !rep.Pushed {
			t.Fatalf("sync over a tracking ref holding %q: %+v", content, rep)
		}
		b.fsck()
	}
	a.sync()
	sameTrees(t, a, b)
}

// TestStaleRefLockAfterACrash: a refs/heads/main.lock left by a process
// killed mid-update does not block later syncs.
func TestStaleRefLockAfterACrash(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "a", hub)
	a.write(mkNote(a, "first", "x"))
	a.sync()
	lock := filepath.Join(a.repo.GitDir(), "refs", "heads", "main.lock")
	os.WriteFile(lock, []byte("garbage from a killed process\n"), 0o644)
	os.WriteFile(filepath.Join(a.repo.Dir(), "semantic", "left.md.anamnesis-tmp"), []byte("half a checkout"), 0o644)
	a.write(mkNote(a, "second", "y"))
	if rep := a.sync(); !rep.Committed || !rep.Pushed {
		t.Fatalf("sync with a stale ref lock: %+v", rep)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("stale lock still there")
	}
	if _, err := os.Stat(filepath.Join(a.repo.Dir(), "semantic", "left.md.anamnesis-tmp")); err == nil {
		t.Error("stale checkout temp file still there")
	}
	a.fsck()
}

// A machine id git cannot hold in an identity must never reach a commit:
// a hub that checks objects (receive.fsckObjects, as hosted git does)
// would refuse this push and every later one.
func TestHostileMachineIDStillMakesCommitsGitAccepts(t *testing.T) {
	hub := testutil.BareHub(t)
	testutil.Git(t, hub, "config", "receive.fsckObjects", "true")
	m := newMachine(t, "m", hub)
	r, err := Open(ctx, m.repo.Dir(), "evil <x@y>\nname\x00", func() time.Time { return m.tick })
	if err != nil {
		t.Fatal(err)
	}
	m.repo = r
	m.write(mkNote(m, "first", "hello"))
	rep := m.sync()
	if !rep.Pushed {
		t.Fatalf("not pushed: %+v", rep)
	}
	testutil.Git(t, hub, "fsck", "--strict")
	m.fsck()
	if log := testutil.Git(t, hub, "log", "--format=%ae", "main"); strings.ContainsAny(strings.TrimSpace(log), "<>\n") {
		t.Errorf("author email %q", log)
	}
}

// TestStatusDuringCheckoutLeavesItAlone: `anamnesis status` (another
// process, no lock) asks whether memory/ is dirty while a sync is writing
// the files it pulled. The reader must not touch the checkout's temporary
// files: removing one made the sync fail ("rename ... no such file or
// directory") with the pulled notes half written, and the next sync then
// committed the other machine's notes as a local commit.
func TestStatusDuringCheckoutLeavesItAlone(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	for i := 0; i < 5; i++ {
		a.write(mkNote(a, fmt.Sprintf("note %d", i), "from a"))
	}
	a.sync()
	reader, err := Open(ctx, b.repo.Dir(), "b", nil) // what a status process opens
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	b.repo.checkoutTemp = func(tmp string) {
		if seen++; seen < 3 {
			return // a few files already in place, as deep into a long pull
		}
		if _, err := reader.Dirty(); err != nil {
			t.Errorf("status during checkout: %v", err)
		}
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("the reader touched the checkout: %v", err)
		}
	}
	b.advance()
	rep, err := b.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err != nil {
		t.Errorf("sync with a reader alongside: %v", err) // go on: the next sync shows the harm
	} else if seen != 5 || !rep.FastForward {
		t.Fatalf("checkout wrote %d files (want 5), report %+v", seen, rep)
	}
	b.repo.checkoutTemp = nil
	rep = b.sync()
	if rep.Committed {
		t.Error("the next sync committed pulled notes as local changes")
	}
	if hubHead := strings.TrimSpace(testutil.Git(t, hub, "rev-parse", "main")); rep.Head != hubHead {
		t.Errorf("b's head %s is not the hub's %s", rep.Head, hubHead)
	}
	sameTrees(t, a, b)
	b.fsck()
}

// LastCommitByMachine reads what `git log --format='%ae %cI'` shows,
// newest commit per machine, with no git process.
func TestLastCommitByMachine(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "desk", hub), newMachine(t, "laptop", hub)
	a.write(mkNote(a, "one", "first"))
	a.sync()
	b.sync()
	b.write(mkNote(b, "two", "second"))
	b.sync()
	a.sync()
	got, err := a.repo.LastCommitByMachine(ctx, 2000)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(testutil.Git(t, a.repo.dir, "log", "--format=%ae %cI")), "\n") {
		email, when, _ := strings.Cut(line, " ")
		if m, ok := strings.CutPrefix(email, "anamnesis@"); ok && want[m] == "" {
			want[m] = when
		}
	}
	if len(want) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, git log says %v", got, want)
	}
}

// WalkLog visits as many commits as git log lists, newest first, and says
// whether it saw them all: cut short by n, not when n covers the history
// exactly, and complete when the visitor stops it.
func TestWalkLog(t *testing.T) {
	hub := testutil.BareHub(t)
	a := newMachine(t, "desk", hub)
	for i := 0; i < 3; i++ {
		a.write(mkNote(a, fmt.Sprintf("n%d", i), "body"))
		a.sync()
	}
	want := strings.Fields(testutil.Git(t, a.repo.dir, "log", "--format=%H"))
	walk := func(n, stopAt int) ([]string, bool) {
		var seen []string
		complete, err := a.repo.WalkLog(ctx, n, func(c Commit) (bool, error) {
			seen = append(seen, c.Hash.String())
			return len(seen) == stopAt, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen, complete
	}
	if seen, complete := walk(len(want), 0); !complete || strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("whole history: complete=%v %v, git log %v", complete, seen, want)
	}
	if seen, complete := walk(len(want)-1, 0); complete || len(seen) != len(want)-1 {
		t.Errorf("cut short: complete=%v, %d commits", complete, len(seen))
	}
	if seen, complete := walk(len(want), 1); !complete || len(seen) != 1 {
		t.Errorf("stopped by the visitor: complete=%v, %d commits", complete, len(seen))
	}
}
