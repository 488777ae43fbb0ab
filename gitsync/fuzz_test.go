package gitsync

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// FuzzMerge3: one-sided merges return the edit; clean merges are the same
// whichever side is ours; the result is deterministic.
func FuzzMerge3(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("", "x\n", "y\n")
	f.Add("a\nb", "a\nb\nc", "z\na\nb")
	f.Fuzz(func(t *testing.T, base, a, b string) {
		if got, clean := Merge3(base, base, a); !clean || got != a {
			t.Fatalf("merge(base, base, a) = %q,%v want %q", got, clean, a)
		}
		m1, c1 := Merge3(base, a, b)
		m2, c2 := Merge3(base, b, a)
		if c1 != c2 || (c1 && m1 != m2) {
			t.Fatalf("not symmetric: %q,%v vs %q,%v", m1, c1, m2, c2)
		}
		if again, _ := Merge3(base, a, b); again != m1 {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzMergeNote: merging two edits of a note is deterministic, the same
// bytes whichever side is ours, loses no line either side wrote (it is in
// the merged note or the conflict copy), keeps every frontmatter key only
// one side changed with that side's value (a key both changed has one of
// their values), and merging the result with itself changes nothing. The
// *Front arguments are extra frontmatter lines: keys anamnesis does not
// know, and comments.
func FuzzMergeNote(f *testing.F) {
	f.Add("line one\nline two", "line ONE\nline two", "line one\nline TWO", "a,b", "b,c", int64(1), int64(2), "", "", "")
	f.Add("x", "y", "z", "", "t", int64(5), int64(5), "", "", "")
	f.Add("x", "x", "x", "", "", int64(1), int64(2),
		"priority: 5\nratio: 0.50\nwhen: 2026-01-01", "priority: 7\nratio: 0.5\nwhen: 2026-01-01",
		"priority: 5\nratio: 0.75\n# c\nnested:\n  a: 1\n  b: [x, y]\nwhen: 2026-01-01")
	f.Add("b1\nb2", "b1 a\nb2", "b1 b\nb2", "", "", int64(3), int64(2),
		"# top\nenabled: true\nnothing: null\na.b: 1", "enabled: false\nnothing: null\na.b: 1\n\"q k\": v  # c", "# top, edited\nenabled: true\na.b: 1")
	f.Fuzz(func(t *testing.T, baseBody, aBody, bBody, aTags, bTags string, aT, bT int64, baseFront, aFront, bFront string) {
		mk := func(body, tags string, sec int64, front string) []byte {
			n := note.New(note.TypeSemantic, "title", body, time.Unix(1700000000, 0))
			n.ID = "01FUZZ"
			n.UpdatedAt = note.Now(time.Unix(1700000000+sec%100000, 0))
			if tags != "" {
				n.Tags = strings.Split(tags, ",")
			}
			if n.Validate() != nil {
				return nil
			}
			data := note.Marshal(n)
			if front != "" {
				i := bytes.Index(data, []byte("\n---\n"))
				data = []byte(string(data[:i+1]) + front + string(data[i:]))
			}
			if back, err := note.Parse(data); err != nil || back.Body != n.Body {
				return nil // bodies and keys the format cannot carry are out of scope here
			}
			return data
		}
		base, a, b := mk(baseBody, "", 0, baseFront), mk(aBody, aTags, aT, aFront), mk(bBody, bTags, bT, bFront)
		if base == nil || a == nil || b == nil {
			t.Skip()
		}
		m1 := mergeNote("semantic/01FUZZ.md", base, a, b)
		m2 := mergeNote("semantic/01FUZZ.md", base, b, a)
		if !bytes.Equal(m1.merged, m2.merged) || m1.copyPath != m2.copyPath || !bytes.Equal(m1.copyData, m2.copyData) {
			t.Fatalf("not symmetric:\n%q\n%q", m1.merged, m2.merged)
		}
		if again := mergeNote("semantic/01FUZZ.md", base, a, b); !bytes.Equal(again.merged, m1.merged) {
			t.Fatal("not deterministic")
		}
		// Every line a side wrote (absent from the base) survives; a base
		// line may go when the other side rewrote it.
		kept := string(m1.merged) + string(m1.copyData)
		inBase := map[string]bool{}
		for _, line := range strings.Split(baseBody, "\n") {
			inBase[line] = true
		}
		for _, side := range []string{aBody, bBody} {
			for _, line := range strings.Split(side, "\n") {
				if !inBase[line] && !strings.Contains(kept, line) {
					t.Fatalf("line %q lost", line)
				}
			}
		}
		checkExtraMerged(t, base, a, b, m1.merged)
		if same := mergeNote("semantic/01FUZZ.md", m1.merged, m1.merged, m1.merged); !bytes.Equal(same.merged, m1.merged) || same.copyPath != "" {
			t.Fatal("merging a note with itself changed it")
		}
	})
}

// checkExtraMerged: each key the note package does not model is in the
// merged note as the one side that changed it left it, as the base had it
// if no side changed it, or as one of the sides had it if both did.
func checkExtraMerged(t *testing.T, base, a, b, merged []byte) {
	t.Helper()
	parse := func(data []byte) *note.Note {
		n, err := note.Parse(data)
		if err != nil {
			t.Fatalf("%v\n%q", err, data)
		}
		return n
	}
	nb, na, nB, nm := parse(base), parse(a), parse(b), parse(merged)
	get := func(n *note.Note, k string) (note.Field, bool) {
		for _, f := range n.Extra {
			if f.Key == k {
				return f, true
			}
		}
		return note.Field{}, false
	}
	same := func(x note.Field, okx bool, y note.Field, oky bool) bool {
		return okx == oky && (!okx || x.SameValue(y))
	}
	for _, n := range []*note.Note{nb, na, nB} {
		for _, f := range n.Extra {
			k := f.Key
			fb, okb := get(nb, k)
			fa, oka := get(na, k)
			fB, okB := get(nB, k)
			fm, okm := get(nm, k)
			ac, bc := !same(fb, okb, fa, oka), !same(fb, okb, fB, okB)
			var ok bool
			switch {
			case ac && !bc:
				ok = same(fm, okm, fa, oka)
			case bc && !ac:
				ok = same(fm, okm, fB, okB)
			case !ac && !bc:
				ok = same(fm, okm, fb, okb)
			default:
				ok = same(fm, okm, fa, oka) || same(fm, okm, fB, okB)
			}
			if !ok {
				t.Fatalf("key %q merged wrongly (changed by a: %v, by b: %v):\nbase %q\na %q\nb %q\nmerged %q", k, ac, bc, fb.Text(), fa.Text(), fB.Text(), fm.Text())
			}
		}
	}
}
