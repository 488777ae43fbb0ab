package index

import (
	"slices"
	"testing"

	"github.com/anamnesis-memory/anamnesis/note"
)

// TestClaimMovesAnIDToAnotherFile: Apply keeps the first file of an id
// and reports the duplicate; a Claim gives the id to the claimant, and the
// former owner becomes the recorded duplicate, so the caller's rule, not
// the order files were seen in, decides.
func TestClaimMovesAnIDToAnotherFile(t *testing.T) {
	ix := openTemp(t)
	n := mk(note.TypeSemantic, "orig", "orig heron")
	p := upsert(t, ix, n)
	dup := *n
	dup.Body = "copy pelican"
	const dp = "memory/episodic/copy.md"
	res, err := ix.Apply(ctx, []Change{{File: File{Path: dp}, Note: &dup}})
	if err != nil || res.Skipped != 1 || !slices.Equal(res.Duplicates, []string{n.ID}) {
		t.Fatalf("apply dup: %+v %v", res, err)
	}
	if c, err := ix.Claimants(ctx, []string{n.ID, n.ID, "nobody"}); err != nil || len(c) != 1 || !slices.Equal(c[n.ID], []string{p, dp}) {
		t.Fatalf("claimants: %v %v", c, err)
	}
	if _, err := ix.Apply(ctx, []Change{{File: File{Path: dp}, Note: &dup, Claim: true}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := ix.Get(ctx, n.ID); h.Path != dp || h.Body != "copy pelican" {
		t.Fatalf("claim did not move the id: %+v", h)
	}
	if c, _ := ix.Claimants(ctx, []string{n.ID}); !slices.Equal(c[n.ID], []string{dp, p}) {
		t.Fatalf("claimants after the claim: %v", c)
	}
	bad, _ := ix.BadFiles(ctx)
	if len(bad) != 1 || bad[0].Path != p || bad[0].Error != DuplicateError(n.ID, dp) {
		t.Fatalf("former owner not recorded as the duplicate: %+v", bad)
	}
	if st, _ := ix.Stats(ctx); st.Total != 1 {
		t.Fatalf("notes: %d", st.Total)
	}
	ftsAligned(t, ix)
}

// TestClaimantsManyIDs: Claimants answers for more ids than one statement
// may bind (it asks in batches), each id once however often it is asked
// for, its files in order.
func TestClaimantsManyIDs(t *testing.T) {
	ix := openTemp(t)
	var changes []Change
	var ids []string
	for i := 0; i < 1200; i++ {
		n := mk(note.TypeSemantic, "t", "b")
		changes = append(changes, changeFor(n))
		if i%100 == 0 {
			dup := *n
			changes = append(changes, Change{File: File{Path: "memory/episodic/copy" + n.ID + ".md"}, Note: &dup})
		}
		ids = append(ids, n.ID)
	}
	if _, err := ix.Apply(ctx, changes); err != nil {
		t.Fatal(err)
	}
	asked := append(slices.Clone(ids), ids[0], ids[1100], "nobody")
	c, err := ix.Claimants(ctx, asked)
	if err != nil || len(c) != len(ids) {
		t.Fatalf("claimants of %d ids: %d, %v", len(ids), len(c), err)
	}
	for i, id := range ids {
		want := []string{"memory/semantic/" + id + ".md"}
		if i%100 == 0 {
			want = append(want, "memory/episodic/copy"+id+".md")
		}
		if !slices.Equal(c[id], want) {
			t.Fatalf("%s: %v, want %v", id, c[id], want)
		}
	}
}
