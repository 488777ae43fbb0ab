package gitsync

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// titles returns every title of note id's versions in m's tree: the note
// itself and its conflict copies.
func titles(m *machine, id string) []string {
	m.t.Helper()
	var out []string
	for rel := range m.tree() {
		n := m.read(rel)
		if of, _ := n.ExtraValue(ConflictKey); n.ID == id || of == id {
			out = append(out, n.Title)
		}
	}
	return out
}

// TestClockAheadLosesNoTitle: machine a's clock runs a day ahead. Both
// machines retitle one note without seeing each other's edit; b edits
// later in real time but, by the clocks, a day "before" a. Before the
// fix the merge took a's title for being newer and dropped b's without a
// trace; now the note keeps one title and the other is a conflict copy,
// the same on both machines.
func TestClockAheadLosesNoTitle(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	a.tick = a.tick.Add(24 * time.Hour)
	x := mkNote(a, "original title", "body stays")
	rel := a.write(x)
	a.sync()
	b.sync()

	na := a.read(rel)
	na.Title = "title from a (clock ahead)"
	a.advance()
	na.UpdatedAt = note.Now(a.tick)
	a.write(na)
	a.sync()

	// Later in real time; b has not synced since, so the edits are
	// concurrent, and b's updated_at is a day older than a's.
	nb := b.read(rel)
	nb.Title = "title from b (correct clock)"
	b.advance()
	nb.UpdatedAt = note.Now(b.tick)
	b.write(nb)
	if nb.UpdatedAt >= na.UpdatedAt {
		t.Fatalf("setup: b's stamp %s should look older than a's %s", nb.UpdatedAt, na.UpdatedAt)
	}
	rep := b.sync()
	if len(rep.ConflictCopies) != 1 {
		t.Fatalf("concurrent retitles should leave one conflict copy, got %+v", rep)
	}
	a.sync()
	b.sync()
	sameTrees(t, a, b)
	for _, m := range []*machine{a, b} {
		got := titles(m, x.ID)
		if len(got) != 2 || !contains(got, nb.Title) || !contains(got, na.Title) {
			t.Errorf("%s: versions of the note have titles %q, want both edits", m.name, got)
		}
		if n := m.read(rel); n.ID != x.ID || n.Body != "body stays" || n.UpdatedAt != na.UpdatedAt {
			t.Errorf("%s: note after merge: id %s body %q updated_at %s", m.name, n.ID, n.Body, n.UpdatedAt)
		}
	}
	a.fsck()
	b.fsck()
}

// TestHistoryOrdersEditsDespiteClock: when b has seen a's edit before
// making its own, the history says b's came later, and b's title wins
// with no conflict copy even though a's clock, a day ahead, stamped a
// newer updated_at and a keeps editing the body meanwhile.
func TestHistoryOrdersEditsDespiteClock(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	a.tick = a.tick.Add(24 * time.Hour)
	x := mkNote(a, "original title", "line one\nline two")
	rel := a.write(x)
	a.sync()
	b.sync()

	na := a.read(rel)
	na.Title = "title from a"
	a.advance()
	na.UpdatedAt = note.Now(a.tick)
	a.write(na)
	a.sync()
	b.sync() // b now has a's title

	nb := b.read(rel)
	nb.Title = "title from b, after seeing a's"
	b.advance()
	nb.UpdatedAt = note.Now(b.tick)
	b.write(nb)
	na = a.read(rel)
	na.Body = "line one\nline two, edited on a"
	a.advance()
	na.UpdatedAt = note.Now(a.tick)
	a.write(na)
	a.sync()
	if rep := b.sync(); !rep.Merged || len(rep.ConflictCopies) != 0 {
		t.Fatalf("b's merge: %+v", rep)
	}
	a.sync()
	sameTrees(t, a, b)
	for _, m := range []*machine{a, b} {
		n := m.read(rel)
		if n.Title != nb.Title || n.Body != na.Body {
			t.Errorf("%s: title %q body %q, want b's title and a's body", m.name, n.Title, n.Body)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestMergeFrontmatterConflictsPerKey: which concurrent frontmatter edits
// make a conflict copy. Both sides always stamp updated_at, and tags merge
// as a set, so neither makes one; a value both changed (a known key, a key
// the note package does not model, a comment block) does, and the copy is
// the version the note did not take, whole.
func TestMergeFrontmatterConflictsPerKey(t *testing.T) {
	const p = "semantic/01HANDWRITTEN00000000000000.md"
	stamp := func(s, day string) string { return edit(t, s, "updated_at: '2026-01-01", "updated_at: '"+day) }
	cases := []struct {
		name   string
		a, b   string // edits applied to typedBase; a's stamp is newer
		copied bool
	}{
		{"only updated_at", "", "", false},
		{"tags on both sides", "- x\n|- x\n- ya\n", "- x\n|- x\n- yb\n", false},
		{"same new value on both sides", "title: typed keys|title: same", "title: typed keys|title: same", false},
		{"different keys", "title: typed keys|title: from a", "project: demo|project: from-b", false},
		{"title both changed", "title: typed keys|title: from a", "title: typed keys|title: from b", true},
		{"project both changed", "project: demo|project: pa", "project: demo|project: pb", true},
		{"created_at both changed", "created_at: '2026-01-01|created_at: '2025-01-01", "created_at: '2026-01-01|created_at: '2024-01-01", true},
		{"unknown key both changed", "priority: 5|priority: 6", "priority: 5|priority: 7", true},
		{"unknown key removed and changed", "priority: 5\n|", "priority: 5|priority: 7", true},
		{"unknown key reformatted and changed", "ratio: 0.50|ratio: 0.5", "ratio: 0.50|ratio: 0.75", false},
		{"comment block both changed", "# how urgent, 1-9|# a's words", "# how urgent, 1-9|# b's words", true},
	}
	apply := func(s, pairs string) string {
		if pairs == "" {
			return s
		}
		return edit(t, s, strings.Split(pairs, "|")...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := stamp(apply(typedBase, c.a), "2026-01-03")
			b := stamp(apply(typedBase, c.b), "2026-01-02")
			m := mergeNote(p, []byte(typedBase), []byte(a), []byte(b))
			if other := mergeNote(p, []byte(typedBase), []byte(b), []byte(a)); !bytes.Equal(other.merged, m.merged) || other.copyPath != m.copyPath || !bytes.Equal(other.copyData, m.copyData) {
				t.Fatalf("merge depends on which side is ours")
			}
			if (m.copyPath != "") != c.copied {
				t.Fatalf("conflict copy made: %v, want %v\nmerged:\n%s\ncopy:\n%s", m.copyPath != "", c.copied, m.merged, m.copyData)
			}
			wantKeys(t, m.merged, map[string]any{"updated_at": "2026-01-03T00:00:00+00:00"})
			if !c.copied {
				return
			}
			// The note is a's (newer stamp) where they disagree; the copy
			// is b whole, but for its own id and conflict_of.
			want, err := note.Parse([]byte(b))
			if err != nil {
				t.Fatal(err)
			}
			got, err := note.Parse(m.copyData)
			if err != nil {
				t.Fatal(err)
			}
			if of, _ := got.ExtraValue(ConflictKey); of != want.ID || got.ID == want.ID {
				t.Errorf("copy id %s conflict_of %s", got.ID, of)
			}
			got.ID = want.ID
			got.Extra = got.Extra[:len(got.Extra)-1]
			if !bytes.Equal(note.Marshal(got), note.Marshal(want)) {
				t.Errorf("copy is not b whole:\n%s\nwant\n%s", note.Marshal(got), b)
			}
		})
	}
}

// TestRandomizedConvergenceSkewedClocks: TestRandomizedConvergence with
// titles edited as well as body lines and one machine's clock a day
// ahead: the trees converge, and every title and line written survives
// somewhere unless an edit that saw it replaced it or its file was
// deleted. ANAMNESIS_SEED replays one seed.
func TestRandomizedConvergenceSkewedClocks(t *testing.T) {
	t.Parallel() // CPU-bound: runs beside the package's other long tests
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	seed := int64(7)
	if s := os.Getenv("ANAMNESIS_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("ANAMNESIS_SEED: %v", err)
		}
	}
	r := rand.New(rand.NewSource(seed))
	hub := testutil.BareHub(t)
	ms := []*machine{newMachine(t, "a", hub), newMachine(t, "b", hub), newMachine(t, "c", hub)}
	ms[0].tick = ms[0].tick.Add(24 * time.Hour)
	introduced, killed := map[string]bool{}, map[string]bool{}
	seq := 0
	text := func(kind string, m *machine) string {
		seq++
		s := fmt.Sprintf("%s %d by %s", kind, seq, m.name)
		introduced[s] = true
		return s
	}
	for round := 0; round < rounds; round++ {
		m := ms[r.Intn(len(ms))]
		m.advance()
		var rels []string
		for rel := range m.tree() {
			rels = append(rels, rel)
		}
		sort.Strings(rels)
		switch op := r.Intn(10); {
		case op < 3 || len(rels) == 0:
			n := mkNote(m, text("title", m), text("first", m)+"\n"+text("second", m))
			n.ID = fmt.Sprintf("01SKEW%020d", seq)
			m.write(n)
		case op < 6:
			rel := rels[r.Intn(len(rels))]
			n := m.read(rel)
			killed[n.Title] = true
			n.Title = text("title", m)
			n.UpdatedAt = note.Now(m.tick)
			m.writeAt(rel, n)
		case op < 9:
			rel := rels[r.Intn(len(rels))]
			n := m.read(rel)
			lines := strings.Split(n.Body, "\n")
			i := r.Intn(len(lines))
			killed[lines[i]] = true
			lines[i] = text("edit", m)
			n.Body = strings.Join(lines, "\n")
			n.UpdatedAt = note.Now(m.tick)
			m.writeAt(rel, n)
		default:
			rel := rels[r.Intn(len(rels))]
			n := m.read(rel)
			killed[n.Title] = true
			for _, l := range strings.Split(n.Body, "\n") {
				killed[l] = true
			}
			if err := os.Remove(filepath.Join(m.repo.Dir(), rel)); err != nil {
				t.Fatal(err)
			}
		}
		if r.Intn(2) == 0 {
			m.sync()
		}
	}
	for i := 0; i < 2; i++ {
		for _, m := range ms {
			m.sync()
		}
	}
	sameTrees(t, ms...)
	present := map[string]bool{}
	copies := 0
	for rel := range ms[0].tree() {
		if strings.Contains(rel, ".conflict-") {
			copies++
		}
		n := ms[0].read(rel)
		present[n.Title] = true
		for _, l := range strings.Split(n.Body, "\n") {
			present[l] = true
		}
	}
	for s := range introduced {
		if !killed[s] && !present[s] {
			t.Errorf("lost: %q", s)
		}
	}
	t.Logf("seed %d: %d rounds, %d files at the end (%d conflict copies)", seed, rounds, len(ms[0].tree()), copies)
	for _, m := range ms {
		m.fsck()
	}
}
