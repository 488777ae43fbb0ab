package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// storeWithNotes makes a store of n portable notes written straight to
// disk (faster than n processes) and indexes it once.
func storeWithNotes(t *testing.T, n int) string {
	t.Helper()
	home := t.TempDir()
	tree := note.Tree{Root: filepath.Join(home, note.PortableDir), Scope: note.ScopePortable}
	for i := 0; i < n; i++ {
		nt := note.New(note.TypeSemantic, fmt.Sprintf("note %d", i), "body", time.Now())
		nt.MachineID = "clitest"
		if _, err := tree.Write(nt); err != nil {
			t.Fatal(err)
		}
	}
	mustOK(t, anm(t, home, "", "reindex"))
	return home
}

// A full reindex shows its progress on stderr when stderr is a terminal
// (run under a pseudo-terminal with util-linux script), and prints nothing
// extra when it is not.
func TestReindexProgressOnlyOnATerminal(t *testing.T) {
	home := storeWithNotes(t, 300)
	r := mustOK(t, anm(t, home, "", "reindex", "--full"))
	if r.stderr != "" {
		t.Errorf("progress written to a stderr that is not a terminal: %q", r.stderr)
	}

	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script (util-linux) is not installed: no pseudo-terminal to test with")
	}
	cmd := exec.Command(script, "-q", "-e", "-c", binary+" reindex --full", "/dev/null")
	cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%q", err, out)
	}
	tty := string(out)
	if !strings.Contains(tty, "\r\x1b[Kanamnesis: rebuilding the index from the note files: 0/300") {
		t.Errorf("no progress on the terminal:\n%q", tty)
	}
	// The line is cleared before the report, which starts on a clean line.
	if !strings.Contains(tty, "\r\x1b[Kreindex: 300 added") {
		t.Errorf("progress not cleared before the report:\n%q", tty)
	}
}
