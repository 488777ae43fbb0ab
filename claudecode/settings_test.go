package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestHookFormFor(t *testing.T) {
	for v, want := range map[string]HookForm{
		"2.1.330 (Claude Code)": ExecForm,
		"2.1.139 (Claude Code)": ExecForm,
		"2.1.138 (Claude Code)": ShellForm,
		"2.0.999 (Claude Code)": ShellForm,
		"1.9.0":                 ShellForm,
		"3.0.0":                 ExecForm,
		"":                      ExecForm, // no claude to ask
		"claude: not found":     ExecForm,
	} {
		if got := HookFormFor(v); got != want {
			t.Errorf("HookFormFor(%q) = %v, want %v", v, got, want)
		}
	}
}

// settingsHooks reads settings.json's hooks: event → groups.
func settingsHooks(t *testing.T, data []byte) map[string][]group {
	t.Helper()
	var doc struct {
		Hooks map[string][]group `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("settings.json: %v\n%s", err, data)
	}
	return doc.Hooks
}

func writeSettings(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestExecFormKeepsPathsWhole: the binary and the home arrive as they are,
// one argument each, with nothing for a shell to split or unquote.
func TestExecFormKeepsPathsWhole(t *testing.T) {
	dir := t.TempDir()
	bin := `/opt/it's a dir/$HOME/anamnesis`
	home := `/home/o'brien/my "memory"`
	plan, err := PlanSettings(dir, Setup{Binary: bin, Home: home}, true)
	if err != nil {
		t.Fatal(err)
	}
	hooks := settingsHooks(t, plan.New)
	for _, spec := range Hooks() {
		gs := hooks[spec.Event]
		if len(gs) != 1 || len(gs[0].Hooks) != 1 {
			t.Fatalf("%s: %+v", spec.Event, gs)
		}
		h := gs[0].Hooks[0]
		want := handler{Type: "command", Command: bin, Args: []string{"--home", home, "hook", spec.Name, UnlessPlugin}, Timeout: spec.Timeout}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("%s: %+v, want %+v", spec.Event, h, want)
		}
		if gs[0].Matcher != spec.Matcher {
			t.Errorf("%s: matcher %q", spec.Event, gs[0].Matcher)
		}
	}
}

// TestShellFormIsWhatEarlierVersionsWrote: for a Claude Code before
// 2.1.139 init still writes the quoted command line earlier versions
// wrote, with --unless-plugin at the end.
func TestShellFormIsWhatEarlierVersionsWrote(t *testing.T) {
	h := hookHandler(ShellForm, "/opt/it's/anamnesis", "/home/a b", "prompt", 10)
	want := `'/opt/it'\''s/anamnesis' --home '/home/a b' hook prompt --unless-plugin`
	if h.Command != want || h.Args != nil {
		t.Errorf("shell form: %+v, want command %s", h, want)
	}
}

// oldSettings holds hooks written by an earlier anamnesis (shell form),
// by the Python tool, and the user's own, interleaved.
const oldSettings = `{
  "hooks": {
    "SessionStart": [
      {"hooks": [{"type": "command", "command": "echo first"}]},
      {"matcher": "startup|resume|clear|compact", "hooks": [{"type": "command", "command": "'/old/bin/anamnesis' --home '/home/u/.anamnesis' hook session-start", "timeout": 10}]},
      {"hooks": [{"type": "command", "command": "echo last"}]}
    ],
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "ANAMNESIS_MACHINE_ID=box uv run --project /x anamnesis inject"}]},
      {"hooks": [{"type": "command", "command": "echo mine"}]},
      {"hooks": [{"type": "command", "command": "'/old/bin/anamnesis' --home '/home/u/.anamnesis' hook prompt", "timeout": 10}]}
    ],
    "PreCompact": [
      {"hooks": [{"type": "command", "command": "/usr/local/bin/anamnesis", "args": ["--home", "/elsewhere", "hook", "pre-compact"]}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify", "args": ["hook", "prompt"]}]}]
  }
}
`

// TestUpgradeRewritesInPlace: init over entries of earlier versions puts
// each new entry where the first old one stood, drops the other old ones,
// keeps the user's hooks in order, and a second run changes nothing.
func TestUpgradeRewritesInPlace(t *testing.T) {
	dir := t.TempDir()
	writeSettings(t, dir, oldSettings)
	setup := Setup{Binary: "/new bin/anamnesis", Home: "/home/u/.anamnesis"}
	plan, err := PlanSettings(dir, setup, true)
	if err != nil {
		t.Fatal(err)
	}
	hooks := settingsHooks(t, plan.New)
	describe := func(g group) string {
		h := g.Hooks[0]
		if h.Command == setup.Binary {
			if i := slices.Index(h.Args, "hook"); i >= 0 && i+1 < len(h.Args) && h.Args[len(h.Args)-1] == UnlessPlugin {
				return "ours:" + h.Args[i+1]
			}
		}
		return h.Command
	}
	want := map[string][]string{
		"SessionStart":     {"echo first", "ours:session-start", "echo last"},
		"UserPromptSubmit": {"ours:prompt", "echo mine"},
		"PreCompact":       {"ours:pre-compact"},
		"SessionEnd":       {"ours:session-end"},
		"Stop":             {"notify"}, // runs a program named notify: not ours
	}
	for ev, w := range want {
		var got []string
		for _, g := range hooks[ev] {
			got = append(got, describe(g))
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: %q, want %q", ev, got, w)
		}
	}
	if strings.Contains(string(plan.New), "/old/bin") || strings.Contains(string(plan.New), "inject") || strings.Contains(string(plan.New), "/elsewhere") {
		t.Errorf("an old entry survived:\n%s", plan.New)
	}
	if err := plan.Apply(); err != nil {
		t.Fatal(err)
	}
	again, err := PlanSettings(dir, setup, true)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed {
		t.Errorf("a second run changes settings.json:\n%s", again.New)
	}

	// Uninstall takes the exec-form entries out and leaves the rest.
	rm, err := PlanSettings(dir, setup, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rm.New), "anamnesis") {
		t.Errorf("uninstall left an entry:\n%s", rm.New)
	}
	for _, mine := range []string{"echo first", "echo last", "echo mine", "notify"} {
		if !strings.Contains(string(rm.New), mine) {
			t.Errorf("uninstall removed %q", mine)
		}
	}
}

func TestIsOurExec(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want bool
	}{
		{"/usr/bin/anamnesis", []string{"--home", "/h", "hook", "prompt"}, true},
		{`C:\Program Files\anamnesis\anamnesis.exe`, []string{"hook", "session-end"}, true},
		{"anamnesis", []string{"hook", "session-start"}, true},
		{"/usr/bin/anamnesis", []string{"hook", "post-merge"}, false}, // a git hook name
		{"/usr/bin/anamnesis", []string{"search", "hook"}, false},
		{"/usr/bin/other", []string{"hook", "prompt"}, false},
		{"/anamnesis/bin/notify", []string{"hook", "prompt"}, false},
	} {
		if got := isOurExec(c.cmd, c.args); got != c.want {
			t.Errorf("isOurExec(%q, %q) = %v", c.cmd, c.args, got)
		}
	}
}
