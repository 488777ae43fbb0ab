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

// TestPostingsWrittenWithLargerChunksMergeOn: an index whose lists were
// written with the chunks of before (512 entries) takes new notes with
// today's sizes: every posting, count and total still equals FTS5's own,
// and no chunk over today's size is written (the old ones only split).
func TestPostingsWrittenWithLargerChunksMergeOn(t *testing.T) {
	g := synth.NewGen(synth.NewVocab(20000, 1), 3000)
	ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.chunkMax, ix.chunkTarget = 512, 256
	if _, err := ix.Rebuild(ctx, synthChanges(g, 0, 2500)); err != nil {
		t.Fatal(err)
	}
	var big int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_postings WHERE n > ?`, defaultChunkMax).Scan(&big); err != nil || big == 0 {
		t.Fatalf("%d chunks over %d entries (%v): the old sizes are not exercised", big, defaultChunkMax, err)
	}
	ix.chunkMax, ix.chunkTarget = defaultChunkMax, defaultChunkTarget
	more := synthChanges(g, 2500, 500)
	for i := 0; i < len(more); i += 50 {
		if _, err := ix.Apply(ctx, more[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	var bigAfter int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_postings WHERE n > ?`, defaultChunkMax).Scan(&bigAfter); err != nil {
		t.Fatal(err)
	}
	if bigAfter > big {
		t.Errorf("%d chunks over %d entries after the merge, %d before: new ones were written", bigAfter, defaultChunkMax, big)
	}
	// Chunks from before stay as they were until a merge rewrites them:
	// each is checked against the larger size it was written with.
	ix.chunkMax = 512
	terms, postings, split := comparePostings(t, ix)
	t.Logf("%d → %d chunks over %d entries; %d tokens, %d postings, %d chunks after a token's first", big, bigAfter, defaultChunkMax, terms, postings, split)
}
