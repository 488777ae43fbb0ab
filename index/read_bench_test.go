package index

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// BenchmarkReads times the row-reading paths of read.go on 10,000 notes
// (every tenth superseding the one before it, 500 files skipped as
// unreadable), so a change to how rows are read shows its time and
// allocations per call.
func BenchmarkReads(b *testing.B) {
	ix, ids := readIndex(b, 10000)
	some := ids[:100]
	cases := []struct {
		name string
		read func() error
	}{
		{"List50", func() error { _, err := ix.List(ctx, Filter{Limit: 50}); return err }},
		{"ListAll", func() error { _, err := ix.List(ctx, Filter{}); return err }},
		{"CountBySource", func() error { _, err := ix.CountBySource(ctx, "human"); return err }},
		{"SupersededIDs", func() error { _, err := ix.SupersededIDs(ctx); return err }},
		{"SupersededBy100", func() error { _, err := ix.SupersededBy(ctx, some); return err }},
		{"Forks", func() error { _, err := ix.Forks(ctx); return err }},
		{"ConflictCopiesOf", func() error { _, err := ix.ConflictCopiesOf(ctx, nil); return err }},
		{"Files", func() error { _, err := ix.Files(ctx); return err }},
		{"BadFiles", func() error { _, err := ix.BadFiles(ctx); return err }},
		{"DuplicatesOf100", func() error { _, err := ix.DuplicatesOf(ctx, some); return err }},
		{"Claimants100", func() error { _, err := ix.Claimants(ctx, some); return err }},
		{"ConflictCopies", func() error { _, err := ix.ConflictCopies(ctx); return err }},
		{"Facets", func() error { _, err := ix.Facets(ctx); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readIndex is an index of n notes for BenchmarkReads, and their ids.
func readIndex(b *testing.B, n int) (*Index, []string) {
	b.Helper()
	ix, _, err := Open(ctx, filepath.Join(b.TempDir(), "index.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var changes []Change
	var ids []string
	for i := range n {
		nt := note.New("semantic", fmt.Sprintf("note %d", i), fmt.Sprintf("body %d", i), t0.Add(time.Duration(i)*time.Second))
		nt.MachineID = "bench"
		if i%10 == 9 {
			nt.Supersedes = []string{ids[i-1]}
		}
		ids = append(ids, nt.ID)
		path := note.TreeDir(nt.Scope) + "/" + nt.RelPath()
		changes = append(changes, Change{File: File{Path: path, Size: 1, MtimeNS: 1, Hash: "h"}, Note: nt})
		if i%20 == 0 {
			changes = append(changes, Change{File: File{Path: path + ".bad.md", Size: 1, MtimeNS: 1, Hash: "x", NoteID: nt.ID, Error: "duplicate id"}})
		}
	}
	if _, err := ix.Apply(ctx, changes); err != nil {
		b.Fatal(err)
	}
	return ix, ids
}
