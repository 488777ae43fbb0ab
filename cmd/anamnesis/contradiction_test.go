package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
)

// Contradictions surface at write time (issue 25): memory_write answers
// with the project's live notes whose titles are close to the new one's,
// so the model can supersede the old version in the same turn.
func TestMCPWriteReturnsSimilarNotes(t *testing.T) {
	cs, _ := mcpSession(t)
	_, text := call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Widget deploys with Fly.io", "body": "fly deploy", "project": "widget"})
	var fly writeOut
	if err := json.Unmarshal([]byte(text), &fly); err != nil {
		t.Fatal(err, text)
	}
	call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Lunch is at noon", "body": "x", "project": "widget"})
	call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Widget deploys with Heroku", "body": "other project", "project": "gadget"})
	_, text = call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Widget deploys with Render", "body": "render deploy", "project": "widget"})
	var out writeOut
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err, text)
	}
	if len(out.Similar) != 1 || out.Similar[0].ID != fly.ID || out.Similar[0].Similarity < 0.5 {
		t.Fatalf("similar: %+v (answer %s)", out.Similar, text)
	}
	// Superseded, the old note is no longer offered.
	_, text = call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Widget deploys with Render", "body": "render deploy", "project": "widget", "supersedes": []string{fly.ID, out.ID}})
	if strings.Contains(text, fly.ID) || !strings.Contains(text, `"similar":[]`) {
		t.Errorf("after supersedes: %s", text)
	}
}

// write --json answers as memory_write does.
func TestWriteJSONReturnsSimilarNotes(t *testing.T) {
	home := t.TempDir()
	initHome(t, home)
	fly := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--project", "widget", "--title", "Widget deploys with Fly.io", "--body", "b")).stdout)
	r := mustOK(t, anm(t, home, "", "write", "--json", "--type", "semantic", "--project", "widget", "--title", "Widget deploys with Render", "--body", "b"))
	var out writeOut
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err, r.stdout)
	}
	if len(out.Similar) != 1 || out.Similar[0].ID != fly {
		t.Fatalf("similar: %s", r.stdout)
	}
	// Search marks the pair until one supersedes the other.
	r = mustOK(t, anm(t, home, "", "search", "--json", "widget deploys"))
	var res struct {
		Results []struct {
			ID        string   `json:"id"`
			LooksLike []string `json:"looks_like"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, h := range res.Results {
		if h.ID == out.ID && len(h.LooksLike) == 1 && h.LooksLike[0] == fly {
			marked++
		}
		if h.ID == fly && len(h.LooksLike) == 1 && h.LooksLike[0] == out.ID {
			marked++
		}
	}
	if marked != 2 {
		t.Errorf("search does not mark the pair:\n%s", r.stdout)
	}
}

// Notes Claude writes through memory_write say so (issue 25), with a
// prov_source the Python tool's index accepts.
func TestMCPWriteProvenance(t *testing.T) {
	cs, s := mcpSession(t)
	_, text := call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Widget deploys with Render", "body": "render deploy", "project": "widget"})
	var out writeOut
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err, text)
	}
	data, err := os.ReadFile(filepath.Join(s.Home(), out.Path))
	if err != nil {
		t.Fatal(err)
	}
	python := []string{"human", "session-end", "reflection", "import", "merge"}
	var src, model string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "prov_source: "); ok {
			src = v
		}
		if v, ok := strings.CutPrefix(line, "prov_model: "); ok {
			model = strings.Trim(v, "'")
		}
	}
	if !slices.Contains(python, src) || model != anamnesis.ProvModelMCP {
		t.Errorf("prov_source %q, prov_model %q:\n%s", src, model, data)
	}
}
