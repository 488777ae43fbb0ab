package note

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FuzzParse: any input either fails with ErrMalformed or parses into a
// note whose serialization parses back to the same serialization.
func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nid: 01ABC\ntype: semantic\ntitle: t\n---\nbody\n"))
	f.Add([]byte("---\nid: 01ABC\ntype: procedural\ntitle: 'yes'\ntags:\n- a\n- 'on'\nsupersedes: X\n---\n---\n"))
	f.Add([]byte("---\nid: &a 01ABC\ntype: semantic\ntitle: *a\n---\n"))
	f.Add([]byte("---\n{[\n---\n"))
	f.Add([]byte("not a note"))
	// Keys this package does not know, of every YAML shape, and comments.
	f.Add([]byte(handNote))
	f.Add([]byte("---\n{id: 01ABC, type: semantic, title: t, n: 5, m: {a: [1, 2]}}\n---\n"))
	f.Add([]byte("---\nid: 01ABC\ntype: semantic\nk: |+\n  keep\n\n# c\ntitle: t # x\n? odd\n: 1\n---\n"))
	f.Add([]byte("---\nid: 01ABC\ntype: semantic\ntitle: t\nx: ~\n...\ny: 2\n---\n"))
	f.Add([]byte("---\nid: 01ABC\ntype: semantic\ntitle: a long title that PyYAML folds over two lines because it is wider than eighty\n  columns\nproject: global\nmachine_id: m\nscope: portable\nuser_id: self\nworkspace_id: personal\nprov_source: human\nconfidence: 1.0\ncreated_at: '2026'\nupdated_at: '2026'\ntags:\n- 'yes'\n- b\n---\nbody\n"))
	// Line breaks YAML counts and a split at "\n" does not: a comment
	// that hides a key from one and not the other.
	for _, br := range []string{"\r", "\u0085", "\u2028", "\u2029"} {
		f.Add([]byte("---\nid: 0\ntype: semantic\ntitle:\ns:\n- k\n#" + br + "at: 1\ng:\n---\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The shortcut for canonical frontmatter reads what the YAML
		// parser reads, whenever it answers.
		if front, _, ok := splitFront(string(data)); ok && utf8.Valid(data) {
			compareCanonical(t, front)
		}
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
		// Every key this package does not know comes out with its value
		// and YAML type.
		in, out := unknownValues(t, data), unknownValues(t, once)
		for k, v := range in {
			if out[k] != v {
				t.Fatalf("key %q: %s became %s\n%q\n%q", k, v, out[k], data, once)
			}
		}
	})
}

// unknownValues maps each unknown top-level key of a parsed note file to
// its canonical value.
func unknownValues(t *testing.T, data []byte) map[string]string {
	front, _, ok := splitFront(string(data))
	if !ok {
		t.Fatalf("a parsed note has no frontmatter: %q", data)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		t.Fatalf("a parsed note's frontmatter does not parse: %v", err)
	}
	out := map[string]string{}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; !isKnownKey(k) {
			out[k] = canonical(root.Content[i+1])
		}
	}
	return out
}
