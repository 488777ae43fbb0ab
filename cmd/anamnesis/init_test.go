package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/fakeembed"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// anmUser runs the CLI as a user whose home directory is userHome.
func anmUser(t *testing.T, userHome string, args ...string) result {
	t.Helper()
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "CLAUDE_CONFIG_DIR=") && !strings.HasPrefix(e, "ANAMNESIS_") && !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	env = append(env, "HOME="+userHome, "PATH=/usr/bin:/bin", "ANAMNESIS_MACHINE_ID=box") // no `claude` on PATH
	return runCmd(t, env, "", args...)
}

const userSettings = `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo check"}]}],
    "SessionStart": [
      {"matcher": "startup|resume|clear", "hooks": [{"type": "command", "command": "ANAMNESIS_MACHINE_ID=box uv run --project /x/server anamnesis inject", "timeout": 15}]},
      {"hooks": [{"type": "command", "command": "echo mine"}]}
    ]
  },
  "statusLine": {"type": "command", "command": "echo <status>"},
  "permissions": {"allow": ["Bash(ls:*)"], "deny": ["WebFetch"]}
}
`

func TestInitIsIdempotentAndUninstallRestores(t *testing.T) {
	uh := t.TempDir()
	settings := filepath.Join(uh, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(userSettings), 0o644)

	r := mustOK(t, anmUser(t, uh, "init", "--print", "--local-only"))
	if !strings.Contains(r.stdout, "nothing was written") {
		t.Errorf("--print: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(uh, ".anamnesis")); err == nil {
		t.Fatal("--print created the store")
	}
	if data, _ := os.ReadFile(settings); string(data) != userSettings {
		t.Fatal("--print changed settings.json")
	}

	mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only"))
	first, _ := os.ReadFile(settings)
	s := string(first)
	for _, want := range []string{"echo check", "echo mine", "echo <status>", `"model": "opus"`, "hook session-start", "hook prompt", "hook session-end", "hook pre-compact"} {
		if !strings.Contains(s, want) {
			t.Errorf("settings.json lacks %q", want)
		}
	}
	if strings.Contains(s, "anamnesis inject") {
		t.Error("the Python tool's hook was not replaced")
	}
	// The read-only tools run without asking (a readOnlyHint alone leaves
	// them denied in claude -p); the user's own rules stay.
	for _, want := range []string{`"Bash(ls:*)"`, `"WebFetch"`, `"mcp__anamnesis__memory_search"`, `"mcp__anamnesis__memory_list"`, `"mcp__anamnesis__memory_get"`, `"mcp__anamnesis__memory_status"`} {
		if !strings.Contains(s, want) {
			t.Errorf("settings.json permissions lack %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "memory_write") || strings.Contains(s, "memory_sync") {
		t.Error("a tool that writes must still ask")
	}
	if bak, _ := os.ReadFile(settings + ".bak"); string(bak) != userSettings {
		t.Error("no backup of the original settings")
	}
	if fi, _ := os.Stat(settings); fi.Mode().Perm() != 0o600 {
		t.Errorf("settings mode %v", fi.Mode().Perm())
	}
	cfg, _ := os.ReadFile(filepath.Join(uh, ".anamnesis", "config.json"))
	if !strings.Contains(string(cfg), `"machine_id": "box"`) || strings.Contains(string(cfg), "remote") {
		t.Errorf("config.json: %s", cfg)
	}
	if mcp, _ := os.ReadFile(filepath.Join(uh, ".claude.json")); !strings.Contains(string(mcp), `"anamnesis"`) || !strings.Contains(string(mcp), `"mcp"`) || !strings.Contains(string(mcp), `"alwaysLoad": true`) {
		t.Errorf("MCP not registered in ~/.claude.json: %s", mcp)
	}
	if _, err := os.Stat(filepath.Join(uh, ".anamnesis", "memory", ".git", "hooks", "post-merge")); err != nil {
		t.Error("git hooks not installed")
	}

	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "ok:     claude code hooks: installed") {
		t.Errorf("doctor after init does not see the Claude Code hooks:\n%s", d.stdout)
	}
	mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only"))
	second, _ := os.ReadFile(settings)
	if string(second) != string(first) {
		t.Error("a second init changed settings.json")
	}
	if strings.Count(string(second), "hook session-start") != 1 {
		t.Error("hooks duplicated")
	}

	mustOK(t, anmUser(t, uh, "uninstall"))
	after, _ := os.ReadFile(settings)
	for _, want := range []string{"echo check", "echo mine", "echo <status>", `"Bash(ls:*)"`, `"WebFetch"`} {
		if !strings.Contains(string(after), want) {
			t.Errorf("uninstall removed %q", want)
		}
	}
	if strings.Contains(string(after), "anamnesis") {
		t.Errorf("uninstall left anamnesis in settings.json:\n%s", after)
	}
	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "claude code hooks: not installed") {
		t.Errorf("doctor after uninstall still sees Claude Code hooks:\n%s", d.stdout)
	}
	os.WriteFile(settings, []byte(strings.Replace(string(second), "hook session-start", "hook session-start --old", 1)), 0o600)
	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "claude code hooks: out of date") {
		t.Errorf("doctor does not notice hand-edited hooks:\n%s", d.stdout)
	}
	os.WriteFile(settings, after, 0o600)
	if mcp, _ := os.ReadFile(filepath.Join(uh, ".claude.json")); strings.Contains(string(mcp), `"anamnesis"`) {
		t.Error("MCP registration not removed")
	}
	if _, err := os.Stat(filepath.Join(uh, ".anamnesis", "memory")); err != nil {
		t.Error("uninstall must keep the notes")
	}
}

func TestInitRefusesBrokenSettings(t *testing.T) {
	uh := t.TempDir()
	settings := filepath.Join(uh, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"hooks": {`), 0o644)
	r := anmUser(t, uh, "init", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "not valid JSON") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(uh, ".anamnesis")); err == nil {
		t.Error("init created the store before refusing")
	}
	if data, _ := os.ReadFile(settings); string(data) != `{"hooks": {` {
		t.Error("broken settings.json was modified")
	}
}

func TestInitRespectsClaudeConfigDirAndRemote(t *testing.T) {
	uh := t.TempDir()
	cdir := filepath.Join(t.TempDir(), "claude-config")
	hub := testutil.BareHub(t)
	cmd := exec.Command(binary, "init", "--yes", "--remote", hub)
	cmd.Env = append(os.Environ(), "HOME="+uh, "CLAUDE_CONFIG_DIR="+cdir, "PATH=/usr/bin:/bin", "ANAMNESIS_HOME=", "ANAMNESIS_GIT_REMOTE=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if data, err := os.ReadFile(filepath.Join(cdir, "settings.json")); err != nil || !strings.Contains(string(data), "hook session-start") {
		t.Errorf("CLAUDE_CONFIG_DIR not used: %v %s", err, data)
	}
	if _, err := os.Stat(filepath.Join(cdir, ".claude.json")); err != nil {
		t.Error("MCP config not under CLAUDE_CONFIG_DIR")
	}
	cfg, _ := os.ReadFile(filepath.Join(uh, ".anamnesis", "config.json"))
	if !strings.Contains(string(cfg), hub) {
		t.Errorf("remote not recorded: %s", cfg)
	}
	// The first sync ran against the hub (the empty store pushes nothing, but origin is set).
	if out, _ := exec.Command("git", "-C", filepath.Join(uh, ".anamnesis", "memory"), "remote", "get-url", "origin").Output(); strings.TrimSpace(string(out)) != hub {
		t.Errorf("origin %q", out)
	}
}

// anmUserIn is anmUser with text on standard input.
func anmUserIn(t *testing.T, userHome, stdin string, args ...string) result {
	t.Helper()
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "CLAUDE_CONFIG_DIR=") && !strings.HasPrefix(e, "ANAMNESIS_") && !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	env = append(env, "HOME="+userHome, "PATH=/usr/bin:/bin", "ANAMNESIS_MACHINE_ID=box")
	return runCmd(t, env, stdin, args...)
}

// TestInitReadsEndOfInputAsNo: without --yes, init asks; standard input
// at its end (closed, /dev/null, no terminal) is "no" and nothing is
// written; Enter alone is "yes". What it then prints is true of what it
// did.
func TestInitReadsEndOfInputAsNo(t *testing.T) {
	uh := t.TempDir()
	for _, stdin := range []string{"", "n\n", "no"} {
		r := anmUserIn(t, uh, stdin, "init", "--local-only")
		if r.code != 1 || !strings.Contains(r.stdout, "Proceed? [Y/n]") || !strings.Contains(r.stderr, "nothing done") {
			t.Errorf("stdin %q: exit %d\nstdout: %s\nstderr: %s", stdin, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(uh); len(entries) != 0 {
			t.Fatalf("stdin %q: init wrote %d entries into the user's home", stdin, len(entries))
		}
	}
	if r := anmUserIn(t, uh, "", "init", "--local-only"); !strings.Contains(r.stderr, "--yes") {
		t.Errorf("end of input does not say how to proceed without asking: %q", r.stderr)
	}
	// settings.json does not exist yet: the plan says it will be created,
	// not that a backup of it is kept.
	r := mustOK(t, anmUserIn(t, uh, "\n", "init", "--local-only", "--no-mcp"))
	for _, want := range []string{"will be created", "claude: hooks installed in", "sync: no remote", "Start a new Claude Code session for the hooks to take effect."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("init output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "backup") || strings.Contains(r.stdout, "MCP server") || strings.Contains(r.stdout, "from the remote") {
		t.Errorf("init claims what it did not do:\n%s", r.stdout)
	}
	// Again, with everything in place: nothing is said to change.
	r = mustOK(t, anmUserIn(t, uh, "y", "init", "--local-only", "--no-mcp", "--no-sync"))
	if !strings.Contains(r.stdout, "already up to date") || !strings.Contains(r.stdout, "claude: hooks already installed") || !strings.HasSuffix(r.stdout, "init: done.\n") {
		t.Errorf("second init:\n%s", r.stdout)
	}
	mustOK(t, anmUserIn(t, uh, "", "uninstall"))
	r = mustOK(t, anmUserIn(t, uh, "", "uninstall"))
	if !strings.Contains(r.stdout, "claude: no anamnesis hooks in") || !strings.Contains(r.stdout, "mcp: anamnesis was not registered") {
		t.Errorf("uninstall with nothing installed claims a removal:\n%s", r.stdout)
	}
}

// init --embedder records the embedder in config.json (defaults filled
// in, whether it answers said), embeds the store in the background, keeps
// it when init runs again without the flag, and removes it with off; a
// bad value changes nothing.
func TestInitEmbedder(t *testing.T) {
	srv := fakeembed.Start(t, fakeembed.Options{Model: "nomic-embed-text"})
	uh := t.TempDir()
	home := filepath.Join(uh, ".anamnesis")
	cfgPath := filepath.Join(home, "config.json")
	base := []string{"init", "--yes", "--local-only", "--no-claude", "--no-mcp", "--no-git-hooks"}
	mustOK(t, anmUser(t, uh, base...))
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Sluggish datastore", "--body", "The db gets laggy under load."))
	defer awaitDetached(t, home)

	r := mustOK(t, anmUser(t, uh, append(base, "--embedder", "ollama,"+srv.URL)...))
	if !strings.Contains(r.stdout, "ollama model nomic-embed-text at "+srv.URL+" (answers") {
		t.Errorf("plan line: %s", r.stdout)
	}
	data, _ := os.ReadFile(cfgPath)
	if !strings.Contains(string(data), `"url": "`+srv.URL+`"`) || !strings.Contains(string(data), `"model": "nomic-embed-text"`) {
		t.Fatalf("config.json: %s", data)
	}
	if !detachedDone(home, 30*time.Second) { // the background embed
		t.Fatal("the background embed did not end")
	}
	if st := mustOK(t, anm(t, home, "", "status", "--json")).stdout; !strings.Contains(st, `"without_vector": 0`) || !strings.Contains(st, `"with_vector": 1`) {
		t.Errorf("status after init --embedder: %s", st)
	}
	mustOK(t, anmUser(t, uh, base...))
	if data, _ := os.ReadFile(cfgPath); !strings.Contains(string(data), `"embedder"`) {
		t.Errorf("init without --embedder dropped it: %s", data)
	}
	for _, bad := range []string{"pigeon", "openai", "ollama,ftp://x", "a,b,c,d,e"} {
		before, _ := os.ReadFile(cfgPath)
		if r := anmUser(t, uh, append(base, "--embedder", bad)...); r.code != 2 || !strings.Contains(r.stderr, "--embedder") {
			t.Errorf("--embedder %s: code %d stderr %q", bad, r.code, r.stderr)
		}
		if after, _ := os.ReadFile(cfgPath); string(after) != string(before) {
			t.Errorf("--embedder %s changed config.json", bad)
		}
	}
	mustOK(t, anmUser(t, uh, append(base, "--embedder", "off")...))
	if data, _ := os.ReadFile(cfgPath); strings.Contains(string(data), `"embedder"`) {
		t.Errorf("--embedder off kept it: %s", data)
	}
}
