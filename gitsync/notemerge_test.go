package gitsync

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"go.yaml.in/yaml/v3"
)

// typedBase is a note a user keeps by hand: keys anamnesis does not know,
// of several YAML types and shapes, and comments.
const typedBase = `---
id: 01HANDWRITTEN00000000000000
type: semantic
title: typed keys
project: demo
created_at: '2026-01-01T00:00:00+00:00'
updated_at: '2026-01-01T00:00:00+00:00'
tags:
- x
# how urgent, 1-9
priority: 5
enabled: true
ratio: 0.50
when: 2026-01-01
nothing: null
nested:
  a: 1   # inner comment
  b: [x, y]
a.b: dotted
"quoted key": v
---
line one
line two
`

// edit applies old->new replacements to a note's text, failing the test
// if one does not apply.
func edit(t *testing.T, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("edit: %q not in the note", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// frontOf decodes a note file's frontmatter with YAML types intact.
func frontOf(t *testing.T, data []byte) map[string]any {
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

func wantKeys(t *testing.T, data []byte, want map[string]any) {
	t.Helper()
	got := frontOf(t, data)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == nil && ok:
			t.Errorf("key %q should be gone, is %#v\n%s", k, g, data)
		case v != nil && !reflect.DeepEqual(g, v):
			t.Errorf("key %q = %#v (%T), want %#v (%T)\n%s", k, g, g, v, v, data)
		}
	}
}

func day(s string) time.Time {
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return d
}

// TestMergeKeepsUnknownKeysWithTheirTypes: each side edits different
// keys it does not know; the merge keeps every edit with its YAML type,
// a reformatting that keeps a value is no change (no conflict either),
// and comments stay.
func TestMergeKeepsUnknownKeysWithTheirTypes(t *testing.T) {
	a := edit(t, typedBase, // older
		"updated_at: '2026-01-01", "updated_at: '2026-01-02",
		"line one", "line ONE",
		"priority: 5", "priority: 7",
		"ratio: 0.50", "ratio: 0.75",
		"\"quoted key\": v\n", "\"quoted key\": v\nowner: alice\n")
	b := edit(t, typedBase, // newer
		"updated_at: '2026-01-01", "updated_at: '2026-01-03",
		"line two", "line TWO",
		"enabled: true", "enabled: false",
		"ratio: 0.50", "ratio: 0.5",
		"when: 2026-01-01", "when: 2026-03-03",
		"nothing: null\n", "",
		"nested:", "# checked by b\nnested:")
	m := mergeNote("semantic/01HANDWRITTEN00000000000000.md", []byte(typedBase), []byte(a), []byte(b))
	if m.copyPath != "" {
		t.Fatalf("edits of different lines made a conflict copy:\n%s", m.copyData)
	}
	if other := mergeNote("semantic/01HANDWRITTEN00000000000000.md", []byte(typedBase), []byte(b), []byte(a)); !bytes.Equal(other.merged, m.merged) {
		t.Fatalf("merge depends on which side is ours:\n%s\n---- vs ----\n%s", m.merged, other.merged)
	}
	wantKeys(t, m.merged, map[string]any{
		"priority": 7, "enabled": false, "ratio": 0.75, "when": day("2026-03-03"), "nothing": nil,
		"nested": map[string]any{"a": 1, "b": []any{"x", "y"}}, "a.b": "dotted", "quoted key": "v", "owner": "alice",
	})
	for _, text := range []string{"\n# how urgent, 1-9\npriority: 7\n", "\n# checked by b\nnested:\n  a: 1   # inner comment\n", "\nline ONE\nline TWO\n"} {
		if !strings.Contains(string(m.merged), text) {
			t.Errorf("merged note lacks %q:\n%s", text, m.merged)
		}
	}
}

// TestConflictCopyKeepsUnknownKeys: when both sides rewrote the same body
// line, the older version is kept as a conflict copy, with its own keys,
// their types and its comments.
func TestConflictCopyKeepsUnknownKeys(t *testing.T) {
	a := edit(t, typedBase, "updated_at: '2026-01-01", "updated_at: '2026-01-02", "line one", "line one (a)", "priority: 5", "priority: 8")
	b := edit(t, typedBase, "updated_at: '2026-01-01", "updated_at: '2026-01-03", "line one", "line one (b)")
	m := mergeNote("semantic/01HANDWRITTEN00000000000000.md", []byte(typedBase), []byte(a), []byte(b))
	if m.copyPath == "" {
		t.Fatalf("no conflict copy:\n%s", m.merged)
	}
	wantKeys(t, m.copyData, map[string]any{
		"priority": 8, "enabled": true, "ratio": 0.5, "when": day("2026-01-01"), ConflictKey: "01HANDWRITTEN00000000000000",
		"nested": map[string]any{"a": 1, "b": []any{"x", "y"}}, "a.b": "dotted", "quoted key": "v",
	})
	if got := frontOf(t, m.copyData); got["id"] == "01HANDWRITTEN00000000000000" {
		t.Errorf("conflict copy kept the note's id")
	}
	if _, ok := frontOf(t, m.copyData)["nothing"]; !ok {
		t.Errorf("conflict copy dropped a null key:\n%s", m.copyData)
	}
	if !strings.Contains(string(m.copyData), "\n# how urgent, 1-9\npriority: 8\n") {
		t.Errorf("conflict copy lost a comment:\n%s", m.copyData)
	}
	wantKeys(t, m.merged, map[string]any{"priority": 8, "enabled": true})
}

// TestSyncKeepsUnknownKeys: the same through real repositories and a hub:
// two machines edit different parts of one hand-kept note and sync.
func TestSyncKeepsUnknownKeys(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	rel := "semantic/01HANDWRITTEN00000000000000.md"
	put := func(m *machine, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(m.repo.Dir(), "semantic"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.repo.Dir(), rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(m *machine) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(m.repo.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	put(a, typedBase)
	a.sync()
	b.sync()
	if get(b) != typedBase {
		t.Fatalf("the note changed on its way to b:\n%s", get(b))
	}
	put(a, edit(t, get(a), "line one", "line ONE", "priority: 5", "priority: 6\nowner: alice"))
	put(b, edit(t, get(b), "enabled: true", "enabled: false\n# b was here", "line two", "line TWO"))
	a.sync()
	b.sync()
	a.sync()
	sameTrees(t, a, b)
	got := []byte(get(a))
	wantKeys(t, got, map[string]any{
		"priority": 6, "owner": "alice", "enabled": false, "ratio": 0.5, "when": day("2026-01-01"),
		"nested": map[string]any{"a": 1, "b": []any{"x", "y"}}, "a.b": "dotted", "quoted key": "v",
	})
	if _, ok := frontOf(t, got)["nothing"]; !ok {
		t.Errorf("null key dropped:\n%s", got)
	}
	for _, text := range []string{"\nline ONE\nline TWO\n", "# b was here\n", "# how urgent, 1-9\n", "  a: 1   # inner comment\n"} {
		if !strings.Contains(string(got), text) {
			t.Errorf("synced note lacks %q:\n%s", text, got)
		}
	}
	a.fsck()
	b.fsck()
}
