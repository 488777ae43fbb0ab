package anamnesis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestFirstSyncIndexesTheClone: a machine whose index holds no file yet
// indexes what its first sync brings with the bulk build (firstIndex):
// every note searchable, each one another machine wrote marked as
// arrived, duplicates settled as a reconcile settles them, and the
// next sync with nothing new changes nothing.
func TestFirstSyncIndexesTheClone(t *testing.T) {
	ctx := context.Background()
	hub := testutil.BareHub(t)
	open := func(machine string) *anamnesis.Store { return openMachine(t, hub, machine) }
	desk := open("desk")
	var ids []string
	for _, title := range []string{"Deploys go through make ship", "Staging runs in eu-west-3", "The cache is warmed at nine"} {
		n, _, err := desk.Write(ctx, anamnesis.WriteRequest{Type: "semantic", Title: title, Body: title + ".", Project: "app"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	if _, err := desk.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	laptop := open("laptop")
	rep, err := laptop.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reindexed.Added != len(ids) {
		t.Errorf("first sync indexed %+v, want %d added", rep.Reindexed, len(ids))
	}
	hits, err := laptop.Search(ctx, "staging eu-west-3", index.Filter{Project: "app"})
	if err != nil || len(hits) == 0 || hits[0].ID != ids[1] {
		t.Fatalf("search after the first sync: %v %v", hits, err)
	}
	arrived, err := laptop.Arrived(ctx, "app", before)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range arrived {
		got = append(got, h.ID)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		t.Errorf("arrived after the first sync: %v, want %v", got, want)
	}
	rep, err = laptop.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil || rep.Reindexed != (anamnesis.ReindexCounts{}) {
		t.Errorf("a second sync with nothing new reindexed %+v (%v)", rep.Reindexed, err)
	}
}
