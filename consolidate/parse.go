package consolidate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anamnesis-memory/anamnesis/note"
)

// Distilled is one note a reflection proposes.
type Distilled struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Group is one merge group in the Python tool's format: "keep" names the
// note that already says everything, "synthesize" writes a new one.
type Group struct {
	Action        string   `json:"action"`
	KeeperID      string   `json:"keeper_id,omitempty"`
	Type          string   `json:"type,omitempty"`
	Title         string   `json:"title,omitempty"`
	Body          string   `json:"body,omitempty"`
	SupersededIDs []string `json:"superseded_ids"`
}

// stripFences is the Python tool's _strip_fences: models wrap JSON in a
// markdown code fence however they are told.
func stripFences(t string) string {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "```") {
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[i+1:]
		} else {
			t = ""
		}
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	return strings.TrimSpace(t)
}

// array returns the JSON array a reply holds: the reply itself (the
// Python tool's format) or the array under key in an object (structured
// output, which must be an object).
func array(text, key string) (json.RawMessage, error) {
	t := stripFences(text)
	if strings.HasPrefix(t, "{") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(t), &obj); err != nil {
			return nil, fmt.Errorf("reply is not JSON: %w", err)
		}
		raw, ok := obj[key]
		if !ok {
			return nil, fmt.Errorf("reply object has no %q array", key)
		}
		t = string(raw)
	}
	if !strings.HasPrefix(t, "[") {
		return nil, fmt.Errorf("reply is not a JSON array: %.80q", t)
	}
	return json.RawMessage(t), nil
}

// ParseReflection reads a reflection reply. As in the Python tool, any
// element out of shape rejects the whole reply: a half-understood answer
// is not applied.
func ParseReflection(text string) ([]Distilled, error) {
	raw, err := array(text, "notes")
	if err != nil {
		return nil, err
	}
	var out []Distilled
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("reflection reply: %w", err)
	}
	for i := range out {
		d := &out[i]
		d.Title, d.Body = strings.TrimSpace(d.Title), strings.TrimSpace(d.Body)
		if d.Type != note.TypeSemantic && d.Type != note.TypeProcedural {
			return nil, fmt.Errorf("reflection reply: note %d has type %q (want semantic or procedural)", i+1, d.Type)
		}
		if d.Title == "" || d.Body == "" {
			return nil, fmt.Errorf("reflection reply: note %d has an empty title or body", i+1)
		}
	}
	return out, nil
}

// ParseMerge reads a merge reply against the ids that were sent: every id
// must be one of them and none may be in two groups.
func ParseMerge(text string, valid map[string]bool) ([]Group, error) {
	raw, err := array(text, "groups")
	if err != nil {
		return nil, err
	}
	var out []Group
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("merge reply: %w", err)
	}
	used := map[string]bool{}
	use := func(i int, id string) error {
		if !valid[id] {
			return fmt.Errorf("merge reply: group %d names %q, which was not sent", i+1, id)
		}
		if used[id] {
			return fmt.Errorf("merge reply: %s is in two groups", id)
		}
		used[id] = true
		return nil
	}
	for i := range out {
		g := &out[i]
		if len(g.SupersededIDs) == 0 {
			return nil, fmt.Errorf("merge reply: group %d supersedes nothing", i+1)
		}
		if err := checkAction(i, g); err != nil {
			return nil, err
		}
		if g.Action == "keep" {
			if err := use(i, g.KeeperID); err != nil {
				return nil, err
			}
		}
		for _, id := range g.SupersededIDs {
			if err := use(i, id); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// checkAction checks group i's action and what it needs: a keeper to
// keep, or a type, title and body (trimmed here) to synthesize.
func checkAction(i int, g *Group) error {
	switch g.Action {
	case "keep":
		if g.KeeperID == "" {
			return fmt.Errorf("merge reply: group %d keeps no note", i+1)
		}
	case "synthesize":
		g.Title, g.Body = strings.TrimSpace(g.Title), strings.TrimSpace(g.Body)
		if g.Type != note.TypeSemantic && g.Type != note.TypeProcedural {
			return fmt.Errorf("merge reply: group %d has type %q", i+1, g.Type)
		}
		if g.Title == "" || g.Body == "" {
			return fmt.Errorf("merge reply: group %d has an empty title or body", i+1)
		}
	default:
		return fmt.Errorf("merge reply: group %d has action %q (want keep or synthesize)", i+1, g.Action)
	}
	return nil
}
