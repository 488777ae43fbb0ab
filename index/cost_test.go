package index

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/note"
)

// SessionStart counts a project's live notes and lists its newest of some
// types in a process whose connection has read no page yet: each note it
// looks at in the table costs a page read, so these queries must be
// answered from an index alone (5.8 ms against 0.55 ms for a count of 500
// notes at 10,000).
func TestSessionStartQueriesReadNoTableRows(t *testing.T) {
	ix := openTemp(t)
	for i := range 30 {
		n := mk([]string{note.TypeSemantic, note.TypeEpisodic, note.TypeProcedural}[i%3], fmt.Sprintf("note %d", i), "body")
		n.Project = []string{"github.com/x/a", note.DefaultProject}[i%2]
		upsert(t, ix, n)
	}
	for name, q := range map[string]func() (string, []any){
		"count": func() (string, []any) { return countSQL(Filter{Project: "github.com/x/a", Live: true}) },
		"durable": func() (string, []any) {
			return listSQL(Filter{Project: "github.com/x/a", Types: []string{note.TypeProcedural, note.TypeSemantic}, Live: true, Limit: 20})
		},
		"recent": func() (string, []any) {
			return listSQL(Filter{Project: "github.com/x/a", Type: note.TypeEpisodic, Live: true, Limit: 20})
		},
		"global": func() (string, []any) { return listSQL(Filter{Project: note.DefaultProject, Live: true, Limit: 10}) },
	} {
		sql, args := q()
		if got := sqlitePlan(t, ix, name, sql, args...); !strings.Contains(got, "SEARCH m USING COVERING INDEX") {
			t.Errorf("%s reads table rows: %s", name, got)
		}
	}
}

// A hook reads through one connection: a second one reads the schema
// and every page again. Preparing a statement for the cache while a
// transaction held the connection opened a second one.
func TestOneConnectionWithoutStatementCache(t *testing.T) {
	for _, cache := range []bool{false, true} {
		ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{CacheStatements: cache})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			n := mk(note.TypeSemantic, fmt.Sprintf("deploy canary %d", i), fmt.Sprintf("the canary_rollout waits for migration %d", i))
			n.Project = "github.com/x/a"
			upsert(t, ix, n)
		}
		ix.Close()
		// A fresh Index, as a new process opens it.
		ix, _, err = Open(ctx, ix.Path(), Options{CacheStatements: cache})
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for range 2 {
			if _, err := ix.Count(ctx, Filter{Project: "github.com/x/a", Live: true}); err != nil {
				t.Fatal(err)
			}
			l, err := ix.List(ctx, Filter{Project: "github.com/x/a", Live: true, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			s, err := ix.Search(ctx, "canary_rollout migration 7", Filter{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, append(ids(l), ids(s)...))
		}
		if len(got[0]) != 8 || strings.Join(got[0], ",") != strings.Join(got[1], ",") {
			t.Errorf("cache %v: results %v", cache, got)
		}
		if n := ix.db.Stats().OpenConnections; !cache && n != 1 {
			t.Errorf("without the statement cache the index opened %d connections", n)
		}
		ix.Close()
	}
}

// SessionEnd looks up the note an earlier capture of its session wrote:
// through idx_mem_session, never a scan of the notes table (6% of a
// SessionEnd at 100,000 notes before go-10).
func TestFindSessionUsesItsIndex(t *testing.T) {
	ix := openTemp(t)
	for i := range 30 {
		n := mk(note.TypeEpisodic, fmt.Sprintf("session %d", i), "body")
		if i%2 == 0 {
			n.ProvSession = fmt.Sprintf("s-%d", i)
		}
		upsert(t, ix, n)
	}
	if got := sqlitePlan(t, ix, "FindSession", findSessionSQL, "s-4"); !strings.Contains(got, "USING INDEX idx_mem_session") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("FindSession does not use idx_mem_session in order: %s", got)
	}
	if id, err := ix.FindSession(ctx, "s-4"); err != nil || id == "" {
		t.Errorf("FindSession(s-4) = %q, %v", id, err)
	}
	if id, err := ix.FindSession(ctx, "s-5"); err != nil || id != "" {
		t.Errorf("FindSession(s-5) = %q, %v, want none", id, err)
	}
}

// sqlitePlan is SQLite's plan for sql, its steps' details joined by "; ".
func sqlitePlan(t *testing.T, ix *Index, name, sql string, args ...any) string {
	t.Helper()
	rows, err := ix.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
