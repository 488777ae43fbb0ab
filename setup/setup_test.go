package setup

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
)

var ctx = context.Background()

// newMachine is a machine with nothing set up: a user home in a
// temporary directory, no claude on PATH, no store, local only.
func newMachine(t *testing.T) Machine {
	t.Helper()
	uh := t.TempDir()
	return Machine{
		Home:       filepath.Join(uh, ".anamnesis"),
		MachineID:  "box",
		Binary:     filepath.Join(uh, "bin", "anamnesis"),
		ClaudeDir:  filepath.Join(uh, ".claude"),
		ClaudeJSON: filepath.Join(uh, ".claude.json"),
	}
}

// fakeClaude puts a claude CLI script in a directory of its own: it
// logs its arguments (one call a line) to the returned file and runs
// body (sh, with the arguments in "$@").
func fakeClaude(t *testing.T, body string) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	path, log = filepath.Join(dir, "claude"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> '" + log + "'\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, log
}

var everything = Choices{Hooks: true, MCP: true, GitHooks: true, Sync: true}

// apply plans init and carries it out, returning the plan, the steps
// reported and the result.
func apply(t *testing.T, m Machine, ch Choices) (*InitPlan, []Step, Result) {
	t.Helper()
	p, err := PlanInit(ctx, m, ch, anamnesis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	res, err := p.Apply(ctx, func(s Step) { steps = append(steps, s) })
	if err != nil {
		t.Fatalf("apply: %v (steps %v)", err, steps)
	}
	return p, steps, res
}

func names(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// On a fresh machine without claude, the plan says what it will create
// and writes nothing; Apply then creates the store, config.json, git
// hooks, Claude Code's hooks and the MCP entry in ~/.claude.json, syncs,
// and says a new session picks up the hooks and the server.
func TestInitOnAFreshMachine(t *testing.T) {
	m := newMachine(t)
	p, err := PlanInit(ctx, m, everything, anamnesis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan := p.String()
	for _, want := range []string{
		"  store home : " + m.Home + "\n",
		"  remote     : (none: local only)\n",
		"  git hooks  : ",
		"exec form: binary and arguments, no shell) in " + filepath.Join(m.ClaudeDir, "settings.json") + ", will be created\n",
		"  mcp        : server \"anamnesis\" in " + m.ClaudeJSON + " (claude is not on PATH)\n",
		"  sync       : a first sync\n",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	for _, p := range []string{m.Home, m.ClaudeDir, m.ClaudeJSON} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("planning wrote %s", p)
		}
	}

	var steps []Step
	res, err := p.Apply(ctx, func(s Step) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(steps), []string{"config", "git hooks", "claude", "mcp", "sync"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for _, s := range steps[:4] {
		if !s.Changed || s.Failed {
			t.Errorf("step %s: %+v", s.Name, s)
		}
	}
	if !reflect.DeepEqual(res.Activate, []string{"the hooks", "the MCP server"}) || res.Embed {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(res.String(), "Start a new Claude Code session for the hooks and the MCP server to take effect.") {
		t.Errorf("last line %q", res)
	}
	if s := read(t, filepath.Join(m.ClaudeDir, "settings.json")); !strings.Contains(s, `"session-start"`) || !strings.Contains(s, `"mcp__anamnesis__memory_search"`) {
		t.Errorf("settings.json:\n%s", s)
	}
	if s := read(t, m.ClaudeJSON); !strings.Contains(s, `"anamnesis"`) || !strings.Contains(s, m.Binary) {
		t.Errorf("~/.claude.json:\n%s", s)
	}
	if s := read(t, filepath.Join(m.Home, anamnesis.ConfigFile)); !strings.Contains(s, `"machine_id": "box"`) {
		t.Errorf("config.json:\n%s", s)
	}
	read(t, filepath.Join(m.Home, "memory", ".git", "hooks", "post-merge"))
}

// A second init on a machine already set up changes no file, says so,
// and asks for no new session.
func TestInitAgainChangesNothing(t *testing.T) {
	m := newMachine(t)
	apply(t, m, everything)
	settings := filepath.Join(m.ClaudeDir, "settings.json")
	before, mcpBefore := read(t, settings), read(t, m.ClaudeJSON)

	p, steps, res := apply(t, m, everything)
	if !strings.Contains(p.String(), ", already up to date\n") {
		t.Errorf("plan:\n%s", p)
	}
	for _, s := range steps {
		if s.Name == "claude" || s.Name == "mcp" {
			if s.Changed || !strings.Contains(s.Text, "already") {
				t.Errorf("second init: %+v", s)
			}
		}
	}
	if len(res.Activate) != 0 || res.String() != "init: done." {
		t.Errorf("second init asks for a new session: %+v", res)
	}
	if read(t, settings) != before || read(t, m.ClaudeJSON) != mcpBefore {
		t.Error("a second init changed settings.json or ~/.claude.json")
	}
	if _, err := os.Stat(settings + ".bak"); err == nil {
		t.Error("a backup was written though nothing changed")
	}
}

// With claude on PATH, init asks it for its version and registers the
// server with `claude mcp add` (removing an earlier registration first),
// not by writing ~/.claude.json, which Claude Code owns then.
func TestInitRegistersWithClaude(t *testing.T) {
	m := newMachine(t)
	var log string
	m.Claude, log = fakeClaude(t, `[ "$1" = --version ] && echo "2.1.330 (Claude Code)"; exit 0`)
	p, steps, res := apply(t, m, Choices{Hooks: true, MCP: true})
	if want := "  mcp        : claude mcp add-json --scope user anamnesis {"; !strings.Contains(p.String(), want) {
		t.Errorf("plan lacks %q:\n%s", want, p)
	}
	calls := strings.Split(strings.TrimSpace(read(t, log)), "\n")
	if len(calls) != 3 || calls[0] != "--version" || calls[1] != "mcp remove --scope user anamnesis" || !strings.HasPrefix(calls[2], "mcp add-json --scope user anamnesis {") {
		t.Errorf("claude calls: %q", calls)
	}
	if got := steps[len(steps)-1]; got.String() != "mcp: registered anamnesis (user scope)" || !got.Changed {
		t.Errorf("mcp step %+v", got)
	}
	if _, err := os.Stat(m.ClaudeJSON); err == nil {
		t.Error("init wrote ~/.claude.json beside claude")
	}
	if !reflect.DeepEqual(res.Activate, []string{"the hooks", "the MCP server"}) {
		t.Errorf("result %+v", res)
	}
}

// A failing `claude mcp add` is reported with claude's own words and
// does not stop init: the sync after it still runs, and only the hooks
// are said to take effect.
func TestInitGoesOnAfterAFailingMCPAdd(t *testing.T) {
	m := newMachine(t)
	m.Claude, _ = fakeClaude(t, `[ "$1 $2" = "mcp add-json" ] && { echo "registry locked" >&2; exit 3; }; exit 0`)
	_, steps, res := apply(t, m, everything)
	if got, want := names(steps), []string{"config", "git hooks", "claude", "mcp", "sync"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	mcp := steps[3]
	if !mcp.Failed || !strings.Contains(mcp.Text, "claude mcp add failed") || !strings.Contains(mcp.Text, "registry locked") || !strings.Contains(mcp.Text, "run `anamnesis init` again later") {
		t.Errorf("mcp step %+v", mcp)
	}
	if steps[4].Failed {
		t.Errorf("sync after a failed registration: %+v", steps[4])
	}
	if !reflect.DeepEqual(res.Activate, []string{"the hooks"}) {
		t.Errorf("result %+v", res)
	}
}

// A settings.json init cannot parse stops the plan before anything is
// written.
func TestInitRefusesBrokenSettings(t *testing.T) {
	m := newMachine(t)
	os.MkdirAll(m.ClaudeDir, 0o755)
	os.WriteFile(filepath.Join(m.ClaudeDir, "settings.json"), []byte(`{"hooks": [`), 0o600)
	if _, err := PlanInit(ctx, m, everything, anamnesis.Options{}); err == nil || !strings.Contains(err.Error(), "refusing to run") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(m.Home); err == nil {
		t.Error("the store was created")
	}
}

// Uninstall after init takes out the hooks, the MCP entry and the git
// hooks and keeps the notes; a second uninstall finds nothing to remove.
func TestUninstallUndoesInit(t *testing.T) {
	m := newMachine(t)
	apply(t, m, everything)
	run := func() []Step {
		t.Helper()
		p, err := PlanUninstall(m)
		if err != nil {
			t.Fatal(err)
		}
		var steps []Step
		if err := p.Apply(ctx, func(s Step) { steps = append(steps, s) }); err != nil {
			t.Fatal(err)
		}
		return steps
	}
	steps := run()
	if got, want := names(steps), []string{"claude", "mcp", "git hooks"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	if s := read(t, filepath.Join(m.ClaudeDir, "settings.json")); strings.Contains(s, "anamnesis") {
		t.Errorf("settings.json after uninstall:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(m.Home, "memory", ".git", "hooks", "post-merge")); err == nil {
		t.Error("git hook left")
	}
	for _, s := range run()[:2] {
		if s.Changed {
			t.Errorf("second uninstall: %+v", s)
		}
	}
}

// The plan shows a remote's credentials hidden, as text and as JSON.
func TestPlanHidesTheRemotesSecret(t *testing.T) {
	m := newMachine(t)
	m.Remote = "https://ann:s3cret-token@git.example.com/memory.git"
	p, err := PlanInit(ctx, m, Choices{}, anamnesis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"text": p.String(), "json": string(js)} {
		if strings.Contains(out, "s3cret-token") || !strings.Contains(out, "git.example.com/memory.git") {
			t.Errorf("%s plan:\n%s", what, out)
		}
	}
}
