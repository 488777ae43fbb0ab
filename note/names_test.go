package note

import (
	"regexp"
	"testing"
)

// ValidID and validExtraKey replaced regexps (compiled by every process at
// start-up); they must accept exactly what those accepted.
func TestLoopsMatchRegexps(t *testing.T) {
	id := regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$`)
	key := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
	alpha := []byte("aZ09_-./ é\n")
	var gen func(prefix []byte, depth int)
	n := 0
	gen = func(prefix []byte, depth int) {
		s := string(prefix)
		n++
		if ValidID(s) != id.MatchString(s) || validExtraKey(s) != key.MatchString(s) {
			t.Fatalf("%q: id %v/%v key %v/%v", s, ValidID(s), id.MatchString(s), validExtraKey(s), key.MatchString(s))
		}
		if depth == 0 {
			return
		}
		for _, c := range alpha {
			gen(append(prefix, c), depth-1)
		}
	}
	gen(nil, 4)
	for _, l := range []int{63, 64, 65, 127, 128, 129} {
		for _, c := range []byte("a_-") {
			b := make([]byte, l)
			for i := range b {
				b[i] = c
			}
			s := string(b)
			if ValidID(s) != id.MatchString(s) || validExtraKey(s) != key.MatchString(s) {
				t.Fatalf("len %d %q", l, c)
			}
		}
	}
	t.Logf("%d strings", n)
}
