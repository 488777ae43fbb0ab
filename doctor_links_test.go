package anamnesis

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// TestDoctorNamesAndFixRemovesLinks: a linked type directory with a note
// written through it (as versions without the guard did), a linked
// state/ and a linked note file: doctor names each as a problem; Fix
// removes the links, never their targets, recreates the directories,
// lists the stranded note, and a write then lands inside memory/.
func TestDoctorNamesAndFixRemovesLinks(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	if _, _, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "first session", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	outside := linkDir(t, filepath.Join(home, "memory", "episodic"))
	stranded := note.New("episodic", "written through the link", "b", time.Now())
	strandedPath := filepath.Join(outside, stranded.ID+".md")
	if err := os.WriteFile(strandedPath, note.Marshal(stranded), 0o644); err != nil {
		t.Fatal(err)
	}
	stateOutside := linkDir(t, filepath.Join(home, "state"))
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	linkedNote := filepath.Join(home, "local", "semantic", "01HZZZZZZZZZZZZZZZZZZZZZZZ.md")
	os.MkdirAll(filepath.Dir(linkedNote), 0o755)
	if err := os.Symlink(secret, linkedNote); err != nil {
		t.Fatal(err)
	}

	var check *Check
	checks := s.Doctor(ctx, Install{Problem: "not checked"})
	for i := range checks {
		if checks[i].Name == "links in the store" {
			check = &checks[i]
		}
	}
	if check == nil || check.State != CheckProblem || !strings.Contains(check.Fix, "anamnesis doctor --fix") {
		t.Fatalf("doctor's links check: %+v", check)
	}
	want := []string{"local/semantic/01HZZZZZZZZZZZZZZZZZZZZZZZ.md -> " + secret, "memory/episodic -> " + outside, "state -> " + stateOutside}
	if !slices.Equal(check.Items, want) {
		t.Errorf("doctor names %q, want %q", check.Items, want)
	}

	rep, err := s.Fix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Links.Removed, want) || !slices.Equal(rep.Links.Recreated, []string{"memory/episodic", "state"}) ||
		!slices.Equal(rep.Links.Stranded, []string{strandedPath}) {
		t.Errorf("fix report: %+v", rep.Links)
	}
	for _, p := range []string{strandedPath, secret} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("fix removed what a link pointed to: %v", err)
		}
	}
	for _, d := range []string{"memory/episodic", "state"} {
		if fi, err := os.Lstat(filepath.Join(home, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s after fix: %v %v", d, fi, err)
		}
	}
	if _, err := os.Lstat(linkedNote); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("linked note file after fix: %v", err)
	}
	n, path, err := s.Write(ctx, WriteRequest{Type: "episodic", Title: "after the fix", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "memory", "episodic", n.ID+".md")); err != nil || path != "memory/episodic/"+n.ID+".md" {
		t.Errorf("write after fix: %s %v", path, err)
	}
	if got := entries(t, outside); len(got) != 1 {
		t.Errorf("where the link pointed: %v", got)
	}
	for _, c := range s.Doctor(ctx, Install{Problem: "not checked"}) {
		if c.Name == "links in the store" && c.State != CheckOK {
			t.Errorf("after fix: %+v", c)
		}
	}
}

// TestLinkedIndexAndConfigAreRefusedAndFixed: index.db as a link makes
// Open refuse (SQLite would write through it); config.json as a link makes
// SaveConfig refuse. FixLinks removes the index link (the index is rebuilt
// from the notes) and turns config.json into a copy of its target.
func TestLinkedIndexAndConfigAreRefusedAndFixed(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	n, _, err := s.Write(ctx, WriteRequest{Type: "semantic", Title: "kept note", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MachineID: "desk"}
	if err := SaveConfig(home, cfg); err != nil {
		t.Fatal(err)
	}
	s.Close()

	elsewhere := t.TempDir()
	ixTarget := filepath.Join(elsewhere, "index.db")
	if err := os.Rename(filepath.Join(home, IndexFile), ixTarget); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ixTarget, filepath.Join(home, IndexFile)); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	cfgTarget := filepath.Join(elsewhere, "config.json")
	os.Rename(filepath.Join(home, ConfigFile), cfgTarget)
	if err := os.Symlink(cfgTarget, filepath.Join(home, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	cfgBytes, _ := os.ReadFile(cfgTarget)

	_, err = Open(ctx, home, Options{MachineID: "testbox"})
	assertLinkRefusal(t, "open", err, filepath.Join(home, IndexFile))
	err = SaveConfig(home, Config{MachineID: "other"})
	assertLinkRefusal(t, "save config", err, filepath.Join(home, ConfigFile))
	if got, _ := os.ReadFile(cfgTarget); string(got) != string(cfgBytes) {
		t.Errorf("SaveConfig wrote through the link: %s", got)
	}

	rep, err := FixLinks(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.CopiedConfig || len(rep.Removed) != 2 {
		t.Errorf("fix: %+v", rep)
	}
	if fi, err := os.Lstat(filepath.Join(home, ConfigFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("config.json after fix: %v %v", fi, err)
	}
	if _, err := os.Stat(ixTarget); err != nil {
		t.Errorf("fix removed the index the link pointed to: %v", err)
	}
	s2, _ := openHome(t, home)
	if s2.Config().MachineID != "desk" {
		t.Errorf("config after fix: %+v", s2.Config())
	}
	if _, _, err := s2.Get(ctx, n.ID); err != nil {
		t.Errorf("note after the index was rebuilt: %v", err)
	}
}
