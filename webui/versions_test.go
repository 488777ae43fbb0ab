package webui

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/note"
)

// The version index gives every note the versions Store.History's walk
// finds, merges included, and a restarted server reads it back from its
// file (a damaged file is rebuilt).
func TestVersionIndexMatchesWalk(t *testing.T) {
	home := t.TempDir()
	s, err := anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "desk", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, write(t, s, fmt.Sprintf("Note %d", i), fmt.Sprintf("Body of note %d.", i)))
	}
	s.Close()
	if err := AddCommits(filepath.Join(home, note.PortableDir), 80); err != nil { // three merges
		t.Fatal(err)
	}
	if s, err = anamnesis.Open(ctx, home, anamnesis.Options{MachineID: "desk"}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n, _, _ := s.Get(ctx, ids[3])
	n.Body += "\nOne more edit through the Store."
	if _, err := s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	compare := func(srv *Server) {
		t.Helper()
		for _, id := range ids {
			want, err := s.History(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, path, _, _ := s.GetFile(ctx, id)
			got, total, building, err := srv.historyOf(ctx, path, 0, 1000)
			if err != nil || building {
				t.Fatalf("%s: %v (building %v)", id, err, building)
			}
			key := func(h anamnesis.History) []string {
				var out []string
				for _, v := range h.Versions {
					out = append(out, v.Commit+" "+v.Machine+" "+v.Time+" "+fmt.Sprint(v.Deleted, len(v.Content)))
				}
				return out
			}
			if !slices.Equal(key(got), key(want)) || got.Complete != want.Complete || total != len(want.Versions) {
				t.Errorf("%s: index gives\n%q (complete %v, total %d)\nthe walk gives\n%q (complete %v)", id, key(got), got.Complete, total, key(want), want.Complete)
			}
		}
	}
	srv := newServer(t, s)
	compare(srv)
	file := srv.vers.file
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the index was not kept: %v", err)
	}
	compare(newServer(t, s)) // from the file
	if err := os.WriteFile(file, []byte("anamnesis-webui-versions\ngarbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	compare(newServer(t, s)) // rebuilt
}

// A damaged or truncated file is an error, never a panic.
func TestDecodeVersionsTruncated(t *testing.T) {
	d := versionData{Format: versionFormat, Head: "abc", Commits: []commitRec{{Unix: 5, Machine: "desk", Subject: "x", Merge: true}},
		Paths: map[string][]changeRec{"semantic/a.md": {{Commit: 0, Added: true}}}}
	b := encodeVersions(&d)
	got, err := decodeVersions(b)
	if err != nil || got.Head != "abc" || len(got.Commits) != 1 || !got.Commits[0].Merge || !got.Paths["semantic/a.md"][0].Added {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// Paths share one array when read: adding a change to one must not
	// touch another's.
	d.Paths["semantic/b.md"] = []changeRec{{Commit: 0, Blob: [20]byte{7}}}
	got, err = decodeVersions(encodeVersions(&d))
	if err != nil {
		t.Fatal(err)
	}
	for p := range got.Paths {
		got.Paths[p] = append(got.Paths[p], changeRec{Commit: 0, Blob: [20]byte{9}})
	}
	if a, b := got.Paths["semantic/a.md"], got.Paths["semantic/b.md"]; len(a) != 2 || len(b) != 2 || a[0].Blob != ([20]byte{}) || b[0].Blob != ([20]byte{7}) {
		t.Errorf("appending crossed paths: %+v %+v", a, b)
	}
	for i := range len(b) {
		if _, err := decodeVersions(b[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
	}
}
