package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rawControls are the characters no terminal printout may carry raw.
var rawControls = []string{"\x1b", "\x07", "\x7f", "\u0085", "\u009b", "\u202e"}

// TestControlCharactersRefusedOnWrite: a title or project holding a
// terminal escape or a bidirectional override is refused with exit 2 and
// an error naming the field and the character; nothing is written.
func TestControlCharactersRefusedOnWrite(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "fine", "--body", "b"))
	cases := []struct{ flag, value, want string }{
		{"--title", "clear \x1b[2J screen", `title contains the control character \u001b (U+001B)`},
		{"--title", "two\nlines", `title contains the control character \n (U+000A)`},
		{"--project", "evil\u202egnp", `project contains the control character \u202e (U+202E)`},
		{"--project", "csi\u009b31m", `project contains the control character \u009b (U+009B)`},
	}
	for _, c := range cases {
		args := []string{"write", "--type", "semantic", "--title", "t", "--body", "b", c.flag, c.value}
		r := anm(t, home, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s %q: exit %d, stderr %q; want exit 2 and %q", c.flag, c.value, r.code, r.stderr, c.want)
		}
	}
	var lr struct{ Results []any }
	r := mustOK(t, anm(t, home, "", "list", "--json"))
	if err := json.Unmarshal([]byte(r.stdout), &lr); err != nil || len(lr.Results) != 1 {
		t.Errorf("refused writes left notes behind: %v\n%s", err, r.stdout)
	}
}

const evilTitle = "heron \x1b]0;pwned\x07\x1b[2J \u202egnp.exe"

// evilNote arrives from a machine that does not check titles: YAML
// escapes in its frontmatter, raw controls in its body.
const evilNote = "---\nid: 01EV1LN0TE0000000000000000\ntype: semantic\ntitle: \"heron \\e]0;pwned\\a\\e[2J \\u202Egnp.exe\"\n" +
	"project: \"proj\\e[31m\\N\"\ncreated_at: '2026-01-01T00:00:00+00:00'\nupdated_at: '2026-01-01T00:00:00+00:00'\n---\n" +
	"the heron body \x1b[2J with \u009b31m a csi\n"

// TestControlCharactersEscapedOnOutput: a note from another machine with
// terminal escapes in its title, project and body is listed, searched and
// reported with those characters escaped; JSON stays JSON with the same
// strings; show prints the file's bytes when they go to a pipe, escaped
// when they go to a terminal.
func TestControlCharactersEscapedOnOutput(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "fine", "--body", "b"))
	if err := os.WriteFile(filepath.Join(home, "memory", "semantic", "01EV1LN0TE0000000000000000.md"), []byte(evilNote), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, anm(t, home, "", "reindex"))
	text := map[string][]string{
		"list":   {"list"},
		"search": {"search", "heron"},
		"status": {"status"},
	}
	for name, args := range text {
		r := mustOK(t, anm(t, home, "", args...))
		for _, c := range rawControls {
			if strings.Contains(r.stdout+r.stderr, c) {
				t.Errorf("%s prints %q raw:\n%q", name, c, r.stdout)
			}
		}
		if name != "status" && !strings.Contains(r.stdout, `heron \u001b]0;pwned\u0007\u001b[2J \u202egnp.exe`) {
			t.Errorf("%s does not show the title escaped:\n%s", name, r.stdout)
		}
	}
	if r := mustOK(t, anm(t, home, "", "search", "heron")); !strings.Contains(r.stdout, `body \u001b[2J with \u009b31m`) {
		t.Errorf("search snippet not escaped:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"list", "--json"}, {"search", "--json", "heron"}, {"show", "--json", "01EV1LN0TE0000000000000000"}, {"status", "--json"}} {
		r := mustOK(t, anm(t, home, "", args...))
		for _, c := range rawControls {
			if strings.Contains(r.stdout, c) {
				t.Errorf("%v prints %q raw", args, c)
			}
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%v is not JSON any more: %v\n%s", args, err, r.stdout)
		}
		if args[0] != "status" && !strings.Contains(r.stdout, `heron \u001b]0;pwned\u0007\u001b[2J \u202egnp.exe`) {
			t.Errorf("%v: title not escaped:\n%s", args, r.stdout)
		}
	}
	var lr struct {
		Results []struct{ Title, Project string }
	}
	r := mustOK(t, anm(t, home, "", "list", "--json", "--project", "proj\x1b[31m\u0085"))
	if err := json.Unmarshal([]byte(r.stdout), &lr); err != nil || len(lr.Results) != 1 || lr.Results[0].Title != evilTitle {
		t.Errorf("JSON does not carry the title itself: %v %+v", err, lr.Results)
	}
	if r := mustOK(t, anm(t, home, "", "show", "01EV1LN0TE0000000000000000")); r.stdout != evilNote {
		t.Errorf("show to a pipe is not the file:\n%q", r.stdout)
	}
	// On a terminal (script(1) gives the command one), show escapes.
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to run show on a terminal")
	}
	cmd := exec.Command("script", "-qec", binary+" show 01EV1LN0TE0000000000000000", "/dev/null")
	cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home, "TERM=dumb")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "\x1b") || !strings.Contains(string(out), `body \u001b[2J with \u009b31m`) {
		t.Errorf("show on a terminal prints escapes raw:\n%q", out)
	}
}
