package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSupersedesMustNameANote: --supersedes with an id no note has is
// refused with exit 2 and nothing is written; an id that exists is
// accepted.
func TestSupersedesMustNameANote(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	old := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "old", "--body", "b")).stdout)
	r := anm(t, home, "", "write", "--type", "semantic", "--title", "new", "--body", "b", "--supersedes", old+",01N0SUCHN0TE00000000000000")
	if r.code != 2 || !strings.Contains(r.stderr, "supersedes: no note has the id 01N0SUCHN0TE00000000000000") {
		t.Errorf("unknown superseded id: exit %d, stderr %q", r.code, r.stderr)
	}
	var lr struct{ Results []any }
	if err := json.Unmarshal([]byte(mustOK(t, anm(t, home, "", "list", "--json")).stdout), &lr); err != nil || len(lr.Results) != 1 {
		t.Errorf("the refused write left a note: %v %d", err, len(lr.Results))
	}
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "new", "--body", "b", "--supersedes", old))
}
