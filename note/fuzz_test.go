package note

import (
	"bytes"
	"testing"
)

// FuzzParse: any input either fails with ErrMalformed or parses into a
// note whose serialization parses back to the same serialization.
func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nid: 01ABC\ntype: semantic\ntitle: t\n---\nbody\n"))
	f.Add([]byte("---\nid: 01ABC\ntype: procedural\ntitle: 'yes'\ntags:\n- a\n- 'on'\nsupersedes: X\n---\n---\n"))
	f.Add([]byte("---\nid: &a 01ABC\ntype: semantic\ntitle: *a\n---\n"))
	f.Add([]byte("---\n{[\n---\n"))
	f.Add([]byte("not a note"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			return
		}
		once := Marshal(n)
		back, err := Parse(once)
		if err != nil {
			t.Fatalf("our own output does not parse: %v\n%q", err, once)
		}
		if twice := Marshal(back); !bytes.Equal(once, twice) {
			t.Fatalf("round trip not stable:\n%q\n%q", once, twice)
		}
	})
}
