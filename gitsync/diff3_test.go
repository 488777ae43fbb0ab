package gitsync

import (
	"math/rand"
	"strings"
	"testing"
)

func lines(s ...string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "\n") + "\n"
}

func TestMerge3Table(t *testing.T) {
	base := lines("a", "b", "c", "d", "e")
	cases := []struct {
		name, ours, theirs, want string
		clean                    bool
	}{
		{"no-op", base, base, base, true},
		{"one side", lines("a", "B", "c", "d", "e"), base, lines("a", "B", "c", "d", "e"), true},
		{"disjoint", lines("A", "b", "c", "d", "e"), lines("a", "b", "c", "d", "E"), lines("A", "b", "c", "d", "E"), true},
		{"adjacent lines", lines("a", "B", "c", "d", "e"), lines("a", "b", "C", "d", "e"), lines("a", "B", "C", "d", "e"), true},
		{"identical edit", lines("a", "X", "c", "d", "e"), lines("a", "X", "c", "d", "e"), lines("a", "X", "c", "d", "e"), true},
		{"same line differs", lines("a", "X", "c", "d", "e"), lines("a", "Y", "c", "d", "e"), lines("a", "X", "c", "d", "e"), false},
		{"prepend and append", lines("p", "a", "b", "c", "d", "e"), lines("a", "b", "c", "d", "e", "z"), lines("p", "a", "b", "c", "d", "e", "z"), true},
		{"delete and append", lines("a", "c", "d", "e"), lines("a", "b", "c", "d", "e", "z"), lines("a", "c", "d", "e", "z"), true},
		{"both insert same point", lines("a", "b", "X", "c", "d", "e"), lines("a", "b", "Y", "c", "d", "e"), lines("a", "b", "X", "c", "d", "e"), false},
	}
	for _, c := range cases {
		got, clean := Merge3(base, c.ours, c.theirs)
		if got != c.want || clean != c.clean {
			t.Errorf("%s: got %q clean=%v, want %q clean=%v", c.name, got, clean, c.want, c.clean)
		}
	}
}

func randomEdit(r *rand.Rand, base []string) []string {
	out := append([]string(nil), base...)
	for n := r.Intn(3); n >= 0; n-- {
		i := r.Intn(len(out) + 1)
		switch r.Intn(3) {
		case 0:
			out = append(out[:i], append([]string{string(rune('A' + r.Intn(26)))}, out[i:]...)...)
		case 1:
			if i < len(out) {
				out = append(out[:i], out[i+1:]...)
			}
		default:
			if i < len(out) {
				out[i] = string(rune('a' + r.Intn(26)))
			}
		}
	}
	return out
}

// TestMerge3Properties: one-sided merges return the edit, and merging is
// symmetric: the same clean result whichever side is "ours".
func TestMerge3Properties(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 3000; i++ {
		var base []string
		for n := r.Intn(12); n > 0; n-- {
			base = append(base, string(rune('a'+r.Intn(6))))
		}
		b := lines(base...)
		x := lines(randomEdit(r, base)...)
		y := lines(randomEdit(r, base)...)
		if got, clean := Merge3(b, b, x); !clean || got != x {
			t.Fatalf("merge(b,b,x) = %q,%v; want %q", got, clean, x)
		}
		if got, clean := Merge3(b, x, b); !clean || got != x {
			t.Fatalf("merge(b,x,b) = %q,%v; want %q", got, clean, x)
		}
		m1, c1 := Merge3(b, x, y)
		m2, c2 := Merge3(b, y, x)
		if c1 != c2 || (c1 && m1 != m2) {
			t.Fatalf("not symmetric: base %q x %q y %q: %q,%v vs %q,%v", b, x, y, m1, c1, m2, c2)
		}
	}
}
