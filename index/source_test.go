package index

import "testing"

// List filters by prov_source, and CountBySource counts one source per
// project and machine.
func TestProvSourceFilterAndCounts(t *testing.T) {
	ix := openTemp(t)
	add := func(title, project, machine, source string) string {
		n := mk("semantic", title, "body of "+title)
		n.Project, n.MachineID, n.ProvSource = project, machine, source
		upsert(t, ix, n)
		return n.ID
	}
	a := add("a", "app", "desk", "claude-auto-memory")
	b := add("b", "app", "laptop", "claude-auto-memory")
	c := add("c", "app", "desk", "claude-auto-memory")
	add("d", "app", "desk", "human")
	add("e", "lib", "desk", "claude-code")
	hits, err := ix.List(ctx, Filter{ProvSource: "claude-auto-memory"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, h := range hits {
		got[h.ID] = true
	}
	if len(hits) != 3 || !got[a] || !got[b] || !got[c] {
		t.Errorf("list by source: %v", ids(hits))
	}
	counts, err := ix.CountBySource(ctx, "claude-auto-memory")
	if err != nil {
		t.Fatal(err)
	}
	want := []SourceCount{{"app", "desk", 2}, {"app", "laptop", 1}}
	if len(counts) != len(want) || counts[0] != want[0] || counts[1] != want[1] {
		t.Errorf("counts %+v, want %+v", counts, want)
	}
}
