package anamnesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateKeepsUnknownFrontmatter: rewriting a note in place (what the
// session-end capture does to refresh a session's note) keeps the keys
// anamnesis does not know, with their YAML types, and the comments.
func TestUpdateKeepsUnknownFrontmatter(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	const id = "01HANDKEPT0000000000000000"
	src := "---\nid: " + id + "\ntype: episodic\ntitle: a session\n# mine\npriority: 5\nenabled: true\nratio: 0.50\n" +
		"when: 2026-01-01\nnothing: null\nnested:\n  a: 1   # inner\n\"quoted key\": v\n" +
		"created_at: '2026-01-01T00:00:00+00:00'\nupdated_at: '2026-01-01T00:00:00+00:00'\n---\nold summary\n"
	p := filepath.Join(home, "memory", "episodic", id+".md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n, _, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n.Title, n.Body = "a session, summarized again", "new summary"
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"\ntitle: a session, summarized again\n", "\n# mine\npriority: 5\nenabled: true\nratio: 0.50\nwhen: 2026-01-01\n",
		"\nnothing: null\nnested:\n  a: 1   # inner\n\"quoted key\": v\n", "\nnew summary\n"} {
		if !strings.Contains(string(data), text) {
			t.Errorf("updated note lacks %q:\n%s", text, data)
		}
	}
}
