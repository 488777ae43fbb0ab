package note

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// handNote is a note a user (or another tool) edited by hand: keys this
// package does not know, of every YAML shape, and comments.
const handNote = `---
# kept by hand; the tool must not eat this
id: 01HANDWRITTEN00000000000000
type: semantic
title: typed keys
priority: 5
enabled: true
ratio: 0.50
when: 2026-01-01
nothing: null
nested:
  a: 1   # inner comment
  b: [x, y]
a.b: dotted
"quoted key": v   # trailing comment
# between two keys
project: demo
created_at: '2026-01-01T00:00:00+00:00'
updated_at: '2026-01-01T00:00:00+00:00'
list_of_maps:
- k: 1
- k: 2
notes: |
  # not a comment: block scalar text
  second line
tags:
- x
# after the last key
---
body text
`

// frontMap decodes a note file's frontmatter with YAML types intact.
func frontMap(t *testing.T, data []byte) map[string]any {
	t.Helper()
	s := string(data)
	end := strings.Index(s[4:], "\n---\n")
	if !strings.HasPrefix(s, "---\n") || end < 0 {
		t.Fatalf("not a note file: %q", s)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s[4:4+end+1]), &m); err != nil {
		t.Fatalf("frontmatter: %v\n%s", err, s)
	}
	return m
}

// TestUnknownKeysKeepTypesValuesAndComments: a rewrite (Parse, then
// Marshal) keeps every key this package does not know with its YAML type,
// its value and its source text, and keeps whole-line comments and the
// comments inside unknown keys.
func TestUnknownKeysKeepTypesValuesAndComments(t *testing.T) {
	n, err := Parse([]byte(handNote))
	if err != nil {
		t.Fatal(err)
	}
	out := Marshal(n)
	want := frontMap(t, []byte(handNote))
	got := frontMap(t, out)
	for _, k := range []string{"priority", "enabled", "ratio", "when", "nothing", "nested", "a.b", "quoted key", "list_of_maps", "notes"} {
		if _, ok := got[k]; !ok {
			t.Errorf("key %q dropped:\n%s", k, out)
			continue
		}
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("key %q: got %#v (%T), want %#v (%T)", k, got[k], got[k], want[k], want[k])
		}
	}
	// Untouched unknown keys are their source text, byte for byte.
	for _, text := range []string{
		"\npriority: 5\n", "\nenabled: true\n", "\nratio: 0.50\n", "\nwhen: 2026-01-01\n", "\nnothing: null\n",
		"\nnested:\n  a: 1   # inner comment\n  b: [x, y]\n", "\na.b: dotted\n", "\n\"quoted key\": v   # trailing comment\n",
		"\nlist_of_maps:\n- k: 1\n- k: 2\n", "\nnotes: |\n  # not a comment: block scalar text\n  second line\n",
		"---\n# kept by hand; the tool must not eat this\nid: ", "\n# between two keys\nproject: demo\n",
		"\n# after the last key\n---\nbody text\n",
	} {
		if !strings.Contains(string(out), text) {
			t.Errorf("output lacks %q:\n%s", text, out)
		}
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("our output does not parse: %v\n%s", err, out)
	}
	if again := Marshal(back); string(again) != string(out) {
		t.Errorf("second rewrite differs:\n%s\n---- vs ----\n%s", again, out)
	}
	// Known keys are still written the Python tool's way.
	if !strings.HasPrefix(string(out), "---\n# kept by hand; the tool must not eat this\nid: 01HANDWRITTEN00000000000000\ntype: semantic\ntitle: typed keys\n# between two keys\nproject: demo\nmachine_id: unknown\n") {
		t.Errorf("known keys not in the Python tool's order:\n%s", out)
	}
}
