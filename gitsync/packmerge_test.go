package gitsync

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

func packNames(t *testing.T, m *machine) []string {
	t.Helper()
	packs, err := listPacks(filepath.Join(m.repo.gitDir, "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range packs {
		out = append(out, p.name)
	}
	slices.Sort(out)
	return out
}

// TestPullsLeaveFewPacks: a machine that pulls after every write of
// another gets a pack per pull; past packMergeAt a sync merges the small
// ones into one pack whose index is byte for byte the one git index-pack
// writes for it, and git fsck finds every object. The sources stay while
// a reader may still have them listed, and go at the first sync after
// mergedPackGrace; the notes are the writer's throughout.
func TestPullsLeaveFewPacks(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	var merged Report
	for i := 0; len(packNames(t, b)) <= packMergeAt || merged.PacksMerged == 0; i++ {
		if i > 3*packMergeAt {
			t.Fatalf("%d pulls and no merge: %d packs", i, len(packNames(t, b)))
		}
		for k := 0; k < 3; k++ {
			a.write(mkNote(a, fmt.Sprintf("note %d.%d", i, k), strings.Repeat(fmt.Sprintf("line %d of %d\n", k, i), 20)))
		}
		a.sync()
		merged = b.sync()
		if merged.PackError != "" {
			t.Fatal(merged.PackError)
		}
	}
	sameTrees(t, a, b)
	b.fsck()
	dir := filepath.Join(b.repo.gitDir, "objects", "pack")
	list, err := os.ReadFile(filepath.Join(b.repo.gitDir, mergedPacksFile))
	if err != nil {
		t.Fatal(err)
	}
	sources := strings.Fields(string(list))
	if len(sources) != merged.PacksMerged || len(sources) < 2 {
		t.Fatalf("merged %d packs, listed %d", merged.PacksMerged, len(sources))
	}
	// The merged pack is the one that is no source and lists every
	// source's objects; its index is git's.
	want := 0
	for _, s := range sources {
		x, err := readPackIdx(filepath.Join(dir, s+".idx"))
		if err != nil {
			t.Fatal(err)
		}
		want += x.n
	}
	var into string
	for _, p := range packNames(t, b) {
		if x, err := readPackIdx(filepath.Join(dir, p+".idx")); err == nil && !slices.Contains(sources, p) && x.n == want {
			into = p
		}
	}
	if into == "" {
		t.Fatalf("no pack lists the %d objects of the %d merged", want, len(sources))
	}
	data, err := os.ReadFile(filepath.Join(dir, into+".pack"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(dir, into+".idx"))
	if err != nil {
		t.Fatal(err)
	}
	if gits, name := gitIndex(t, data); "pack-"+name != into || !bytes.Equal(ours, gits) {
		t.Fatalf("merged pack %s: index of %d bytes, git index-pack writes %d for pack-%s", into, len(ours), len(gits), name)
	}

	// Within the grace the sources stay and no new merge starts.
	a.write(mkNote(a, "one more", "x"))
	a.sync()
	if rep := b.sync(); rep.PacksMerged != 0 {
		t.Fatalf("merged again within the grace: %+v", rep)
	}
	for _, s := range sources {
		if _, err := os.Stat(filepath.Join(dir, s+".pack")); err != nil {
			t.Fatalf("source %s gone within the grace: %v", s, err)
		}
	}
	// After it, the next sync removes them; every object is still there.
	b.tick = time.Now().Add(mergedPackGrace + time.Minute)
	b.sync()
	left := packNames(t, b)
	for _, s := range sources {
		if slices.Contains(left, s) {
			t.Fatalf("source %s left after the grace: %v", s, left)
		}
	}
	if _, err := os.Stat(filepath.Join(b.repo.gitDir, mergedPacksFile)); !os.IsNotExist(err) {
		t.Fatalf("the list of merged packs stayed: %v", err)
	}
	if len(left) > packMergeAt/2 {
		t.Fatalf("%d packs left: %v", len(left), left)
	}
	b.fsck()
	a.write(mkNote(a, "after the merge", "y"))
	a.sync()
	b.sync()
	sameTrees(t, a, b)
	b.fsck()
}

// TestMergeLeavesADamagedPackAlone: a source whose bytes do not sum to
// its checksum stops the merge before anything is installed or listed;
// the sync itself succeeds and says why the packs were not merged.
func TestMergeLeavesADamagedPackAlone(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	for i := 0; len(packNames(t, b)) < packMergeAt; i++ {
		a.write(mkNote(a, fmt.Sprintf("note %d", i), "body"))
		a.sync()
		if rep := b.sync(); rep.PacksMerged != 0 {
			t.Fatalf("merged at %d packs", len(packNames(t, b)))
		}
	}
	dir := filepath.Join(b.repo.gitDir, "objects", "pack")
	packs, _ := listPacks(dir)
	slices.SortFunc(packs, func(x, y packOnDisk) int { return int(x.size - y.size) })
	victim := filepath.Join(dir, packs[0].name+".pack")
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	os.Chmod(victim, 0o644)
	if err := os.WriteFile(victim, data, 0o444); err != nil {
		t.Fatal(err)
	}
	before := packNames(t, b)
	a.write(mkNote(a, "the last", "body"))
	a.sync()
	rep := b.sync()
	if rep.PacksMerged != 0 || !strings.Contains(rep.PackError, "checksum") {
		t.Fatalf("merged %d packs, error %q", rep.PacksMerged, rep.PackError)
	}
	after := packNames(t, b)
	if len(after) != len(before)+1 {
		t.Fatalf("%d packs before the pull, %d after: the failed merge left or removed some", len(before), len(after))
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp_") {
			t.Fatalf("%s left behind", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(b.repo.gitDir, mergedPacksFile)); !os.IsNotExist(err) {
		t.Fatalf("a failed merge listed packs to remove: %v", err)
	}
}

func TestGeometricSplit(t *testing.T) {
	for _, c := range []struct {
		sizes []int64
		want  int
	}{
		{[]int64{1, 1, 1, 1}, 4},            // all alike: all merged
		{[]int64{1, 1, 1, 100}, 3},          // a first sync's pack stays
		{[]int64{1, 2, 4, 8, 100}, 4},       // 8 < 2*(1+2+4)
		{[]int64{1, 3, 9, 27}, 1},           // geometric already: nothing to merge
		{[]int64{5, 5, 20, 1000, 10000}, 2}, // 20 >= 2*10 stays, and what is above it
	} {
		var packs []packOnDisk
		for i, s := range c.sizes {
			packs = append(packs, packOnDisk{name: fmt.Sprint(i), size: s})
		}
		if got := geometricSplit(packs); got != c.want {
			t.Errorf("%v: merge %d, want %d", c.sizes, got, c.want)
		}
	}
}
