package anamnesis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// The public API as a program embedding anamnesis uses it: two machines
// (two homes) and a hub, real files and real git.
func TestPublicAPI(t *testing.T) {
	ctx := context.Background()
	hub := testutil.BareHub(t)
	open := func(machine string) *anamnesis.Store { return openMachine(t, hub, machine) }
	desk, laptop := open("desk"), open("laptop")

	n, path, err := desk.Write(ctx, anamnesis.WriteRequest{Type: note.TypeProcedural, Title: "Release with make ship",
		Body: "Run make ship from a clean tree; it tags and pushes.", Project: "app", Tags: []string{"release"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, "memory/procedural/") || n.MachineID != "desk" {
		t.Errorf("write: path %s, machine %s", path, n.MachineID)
	}
	if _, _, err := desk.Write(ctx, anamnesis.WriteRequest{Type: "opinion", Title: "x"}); !errors.Is(err, anamnesis.ErrInvalid) {
		t.Errorf("a bad type is not ErrInvalid: %v", err)
	}
	got, _, err := desk.Get(ctx, n.ID)
	if err != nil || got.Title != n.Title {
		t.Fatalf("get: %v %v", got, err)
	}
	hits, err := desk.Search(ctx, "how do I release", anamnesis.Filter{Project: "app"})
	if err != nil || len(hits) != 1 || hits[0].ID != n.ID {
		t.Fatalf("search: %v %v", hits, err)
	}
	if hits, _ := desk.Search(ctx, "release", anamnesis.Filter{Project: "other"}); len(hits) != 0 {
		t.Errorf("the project filter let through %v", hits)
	}

	// A hand edit is picked up by Reconcile.
	file := filepath.Join(desk.Home(), path)
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "tags and pushes", "tags, signs and pushes", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := desk.Reconcile(ctx)
	if err != nil || rep.Updated != 1 || rep.Indexed != 1 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	if hits, _ := desk.Search(ctx, "signs", anamnesis.Filter{}); len(hits) != 1 {
		t.Error("the hand edit is not searchable")
	}

	// Sync: the note reaches the other machine.
	if _, err := desk.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	sr, err := laptop.Sync(ctx, anamnesis.SyncOptions{})
	if err != nil || !sr.Fetched || sr.Reindexed.Added != 1 {
		t.Fatalf("laptop sync: %+v %v", sr, err)
	}
	if hits, _ := laptop.Search(ctx, "signs release", anamnesis.Filter{}); len(hits) != 1 || hits[0].ID != n.ID {
		t.Errorf("laptop does not find desk's note: %v", hits)
	}
	list, err := laptop.List(ctx, anamnesis.Filter{Type: note.TypeProcedural})
	if err != nil || len(list) != 1 {
		t.Errorf("list: %v %v", list, err)
	}
	st, err := laptop.Status(ctx)
	if err != nil || st.Notes.Total != 1 || st.Sync.Head == "" || st.Sync.Dirty {
		t.Errorf("status: %+v %v", st, err)
	}
	if notes, projectTotal, _, err := laptop.Inject(ctx, "app", 8); err != nil || len(notes) != 1 || projectTotal != 1 {
		t.Errorf("inject: %v %d %v", notes, projectTotal, err)
	}
}

// openMachine opens a new home in a temporary directory as machine, with
// hub as its remote; it is closed when the test ends.
func openMachine(t *testing.T, hub, machine string) *anamnesis.Store {
	t.Helper()
	s, err := anamnesis.Open(context.Background(), t.TempDir(), anamnesis.Options{MachineID: machine, Remote: hub, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
