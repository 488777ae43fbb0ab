package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// noteFiles counts the note files under home's memory/ and local/.
func noteFiles(t *testing.T, home string) int {
	t.Helper()
	n := 0
	for _, tree := range []string{"memory", "local"} {
		filepath.WalkDir(filepath.Join(home, tree), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				n++
			}
			return nil
		})
	}
	return n
}

// A machine id git would reject in an author line is refused wherever it
// comes from, with one line naming the source, and nothing is written.
func TestBadMachineIDIsRefusedNamingItsSource(t *testing.T) {
	parallel(t)
	env := func(home, machine string) []string {
		var out []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "ANAMNESIS_") {
				out = append(out, e)
			}
		}
		return append(out, "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID="+machine)
	}
	write := []string{"write", "--type", "semantic", "--title", "t", "--body", "b"}
	cases := []struct {
		name, envID, flagID, config, source string
		code                                int
	}{
		{name: "flag", envID: "ok", flagID: "evil<x>", source: "--machine-id", code: 2},
		{name: "env", envID: "two\nlines", source: "ANAMNESIS_MACHINE_ID", code: 2},
		{name: "config", config: `{"machine_id": "desk>"}`, source: "config.json", code: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			mustOK(t, runCmd(t, env(home, "good"), "", write...))
			if tc.config != "" {
				os.WriteFile(filepath.Join(home, "config.json"), []byte(tc.config), 0o600)
			}
			args := write
			if tc.flagID != "" {
				args = append([]string{"--machine-id", tc.flagID}, write...)
			}
			r := runCmd(t, env(home, tc.envID), "", args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.source) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q: want exit %d and one line naming %s", r.code, r.stderr, tc.code, tc.source)
			}
			if n := noteFiles(t, home); n != 1 {
				t.Errorf("%d note files after the refused write, want 1", n)
			}
			initArgs := []string{"init", "--yes", "--local-only", "--no-claude", "--no-mcp", "--no-sync"}
			if tc.flagID != "" {
				initArgs = append([]string{"--machine-id", tc.flagID}, initArgs...)
			}
			if r := runCmd(t, env(home, tc.envID), "", initArgs...); r.code != tc.code || !strings.Contains(r.stderr, tc.source) {
				t.Errorf("init: exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// An unusual but valid machine id (spaces, quotes, non-ASCII) makes
// commits that a hub checking objects accepts.
func TestUnusualMachineIDPushesToACheckingHub(t *testing.T) {
	parallel(t)
	hub := testutil.BareHub(t)
	testutil.Git(t, hub, "config", "receive.fsckObjects", "true")
	home := t.TempDir()
	id := `Bob's "work" laptop — ünïcode (2)`
	mustOK(t, anmRemote(t, home, id, hub, "", "write", "--type", "semantic", "--title", "t", "--body", "b"))
	r := mustOK(t, anmRemote(t, home, id, hub, "", "sync", "--json"))
	if !strings.Contains(r.stdout, `"pushed": true`) {
		t.Fatalf("not pushed: %s", r.stdout)
	}
	testutil.Git(t, hub, "fsck", "--strict")
}
