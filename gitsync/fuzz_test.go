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
// the merged note or the conflict copy), and merging the result with
// itself changes nothing.
func FuzzMergeNote(f *testing.F) {
	f.Add("line one\nline two", "line ONE\nline two", "line one\nline TWO", "a,b", "b,c", int64(1), int64(2))
	f.Add("x", "y", "z", "", "t", int64(5), int64(5))
	f.Fuzz(func(t *testing.T, baseBody, aBody, bBody, aTags, bTags string, aT, bT int64) {
		mk := func(body, tags string, sec int64) []byte {
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
			if back, err := note.Parse(data); err != nil || back.Body != n.Body {
				return nil // bodies the format cannot carry are out of scope here
			}
			return data
		}
		base, a, b := mk(baseBody, "", 0), mk(aBody, aTags, aT), mk(bBody, bTags, bT)
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
		if same := mergeNote("semantic/01FUZZ.md", m1.merged, m1.merged, m1.merged); !bytes.Equal(same.merged, m1.merged) || same.copyPath != "" {
			t.Fatal("merging a note with itself changed it")
		}
	})
}
