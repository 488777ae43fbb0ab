package index

import "testing"

// A copy is known by the index's record or, failing that, by its
// frontmatter key; an ordinary note is neither.
func TestConflictCopyOf(t *testing.T) {
	byKey := Hit{}
	byKey.SetExtra(ConflictKey, "01ORIGINAL")
	emptyKey := Hit{}
	emptyKey.SetExtra(ConflictKey, "")
	for _, c := range []struct {
		name string
		h    Hit
		of   string
		ok   bool
	}{
		{"ordinary", Hit{}, "", false},
		{"indexed", Hit{ConflictOf: "01INDEXED"}, "01INDEXED", true},
		{"frontmatter", byKey, "01ORIGINAL", true},
		{"empty frontmatter", emptyKey, "", true},
	} {
		if of, ok := c.h.ConflictCopyOf(); of != c.of || ok != c.ok {
			t.Errorf("%s: ConflictCopyOf() = %q, %v; want %q, %v", c.name, of, ok, c.of, c.ok)
		}
	}
}
