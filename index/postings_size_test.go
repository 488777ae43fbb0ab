//go:build unix

package index

import (
	"path/filepath"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
)

// TestPostingChunksStayInTheirPage: every chunk of index_postings,
// written by a full build and by the merge of later notes, fits in its
// b-tree page (SQLite keeps at most 1,002 bytes of a WITHOUT ROWID row
// in a 4 KiB page and sends the rest to an overflow page, which tripled
// the table's size and cost a pull an overflow page per token).
func TestPostingChunksStayInTheirPage(t *testing.T) {
	const inPage = 1002 - 40 // less the row's key and header
	g := synth.NewGen(synth.NewVocab(20000, 1), 6000)
	ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Rebuild(ctx, synthChanges(g, 0, 5000)); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var rows, over, most int
		err := ix.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(data) > ?), 0), coalesce(max(length(data)), 0) FROM index_postings`, inPage).Scan(&rows, &over, &most)
		if err != nil {
			t.Fatal(err)
		}
		if over > 0 {
			t.Errorf("%s: %d of %d chunks are over %d bytes (the largest %d)", when, over, rows, inPage, most)
		}
		t.Logf("%s: %d chunks, the largest %d bytes", when, rows, most)
	}
	check("after the build")
	if _, err := ix.Apply(ctx, synthChanges(g, 5000, 1000)); err != nil {
		t.Fatal(err)
	}
	check("after a merge of 1,000 notes")
}
