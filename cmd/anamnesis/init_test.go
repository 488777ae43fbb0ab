package main

import (
	"encoding/json"
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
	for _, want := range []string{"echo check", "echo mine", "echo <status>", `"model": "opus"`, `"session-start"`, `"prompt"`, `"session-end"`, `"pre-compact"`} {
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
	if strings.Count(string(second), `"session-start"`) != 1 {
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
	os.WriteFile(settings, []byte(strings.Replace(string(second), `"session-start"`, `"session-start", "--old"`, 1)), 0o600)
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
	if data, err := os.ReadFile(filepath.Join(cdir, "settings.json")); err != nil || !strings.Contains(string(data), `"session-start"`) {
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

// TestInitHookFormFollowsClaudeVersion: with a Claude Code older than
// 2.1.139 on PATH init writes shell-form hooks (an older version ignores
// "args"); after an upgrade of Claude Code, init rewrites them in exec
// form in place, once each.
func TestInitHookFormFollowsClaudeVersion(t *testing.T) {
	uh := t.TempDir()
	bin := t.TempDir()
	fake := "#!/bin/sh\ncase \"$1\" in --version) echo \"$FAKE_CLAUDE_VERSION (Claude Code)\";; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(version string) (plan, settings string) {
		t.Helper()
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "CLAUDE_CONFIG_DIR=") && !strings.HasPrefix(e, "ANAMNESIS_") && !strings.HasPrefix(e, "PATH=") {
				env = append(env, e)
			}
		}
		env = append(env, "HOME="+uh, "PATH="+bin+":/usr/bin:/bin", "ANAMNESIS_MACHINE_ID=box", "FAKE_CLAUDE_VERSION="+version)
		r := mustOK(t, runCmd(t, env, "", "init", "--yes", "--local-only", "--no-sync"))
		data, err := os.ReadFile(filepath.Join(uh, ".claude", "settings.json"))
		if err != nil {
			t.Fatal(err)
		}
		return r.stdout, string(data)
	}
	out, old := run("2.1.100")
	if !strings.Contains(out, "shell form: Claude Code 2.1.100 (Claude Code) is older than 2.1.139") {
		t.Errorf("the plan does not say why it writes shell form:\n%s", out)
	}
	if !strings.Contains(old, `--home '`+filepath.Join(uh, ".anamnesis")+`' hook session-start --unless-plugin"`) || strings.Contains(old, `"args"`) {
		t.Errorf("not shell form for Claude Code 2.1.100:\n%s", old)
	}
	// doctor counts shell-form hooks as installed (init chose them).
	doc := anmUser(t, uh, "doctor")
	if !strings.Contains(doc.stdout, "ok:     claude code hooks: installed") || !strings.Contains(doc.stdout, "shell form") {
		t.Errorf("doctor after a shell-form init:\n%s", doc.stdout)
	}
	_, upgraded := run("2.1.330")
	if strings.Contains(upgraded, "hook session-start") || strings.Count(upgraded, `"session-start"`) != 1 || !strings.Contains(upgraded, `"args"`) {
		t.Errorf("init after upgrading Claude Code did not rewrite the hooks once in exec form:\n%s", upgraded)
	}
}

// enablePlugin records the anamnesis plugin as installed and enabled for
// the user, as `claude plugin install anamnesis@anamnesis` does.
func enablePlugin(t *testing.T, claudeDir string) {
	t.Helper()
	p := filepath.Join(claudeDir, "settings.json")
	settings := map[string]any{}
	if data, err := os.ReadFile(p); err == nil {
		if err := json.Unmarshal(data, &settings); err != nil {
			t.Fatal(err)
		}
	}
	settings["enabledPlugins"] = map[string]bool{"anamnesis@anamnesis": true}
	data, _ := json.Marshal(settings)
	os.MkdirAll(filepath.Join(claudeDir, "plugins"), 0o755)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	installed := `{"version": 2, "plugins": {"anamnesis@anamnesis": [{"scope": "user", "installPath": "/x", "version": "1"}]}}`
	if err := os.WriteFile(filepath.Join(claudeDir, "plugins", "installed_plugins.json"), []byte(installed), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInitLeavesHooksToThePlugin: with the plugin installed and enabled,
// init takes out the hooks, permission rules and MCP server it added
// before (the plugin's would run beside them) and adds none; doctor says
// the plugin runs the hooks; uninstall says how to remove the plugin, or
// removes it with claude when claude is on PATH.
func TestInitLeavesHooksToThePlugin(t *testing.T) {
	uh := t.TempDir()
	claudeDir := filepath.Join(uh, ".claude")
	mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only", "--no-sync"))
	enablePlugin(t, claudeDir)

	r := mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only", "--no-sync"))
	if !strings.Contains(r.stdout, "the Claude Code plugin anamnesis@anamnesis runs the hooks and the MCP server") {
		t.Errorf("the plan does not name the plugin:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "warning    : the plugin runs `anamnesis` from PATH, and PATH has none") {
		t.Errorf("no warning that the plugin cannot find the binary:\n%s", r.stdout)
	}
	settings, _ := os.ReadFile(filepath.Join(claudeDir, "settings.json"))
	if strings.Contains(string(settings), "session-start") || strings.Contains(string(settings), "mcp__anamnesis__") {
		t.Errorf("init's hooks or rules stayed beside the plugin's:\n%s", settings)
	}
	if !strings.Contains(string(settings), `"anamnesis@anamnesis": true`) {
		t.Errorf("init changed the plugin's enabling:\n%s", settings)
	}
	if mcp, _ := os.ReadFile(filepath.Join(uh, ".claude.json")); strings.Contains(string(mcp), `"anamnesis"`) {
		t.Errorf("the user-scope MCP server stayed beside the plugin's:\n%s", mcp)
	}
	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "ok:     claude code hooks: run by the Claude Code plugin anamnesis@anamnesis") {
		t.Errorf("doctor:\n%s", d.stdout)
	}
	again := mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only", "--no-sync"))
	if after, _ := os.ReadFile(filepath.Join(claudeDir, "settings.json")); string(after) != string(settings) || strings.Contains(again.stdout, "Start a new Claude Code session") {
		t.Errorf("a second init with the plugin changed something:\n%s", again.stdout)
	}

	// Without claude on PATH, uninstall says how to remove the plugin.
	r = mustOK(t, anmUser(t, uh, "uninstall"))
	if !strings.Contains(r.stdout, "remove it with `claude plugin uninstall --scope user anamnesis@anamnesis`") {
		t.Errorf("uninstall does not say how to remove the plugin:\n%s", r.stdout)
	}
	// With claude on PATH, it runs Claude Code's own uninstall.
	bin := t.TempDir()
	log := filepath.Join(bin, "args")
	fake := "#!/bin/sh\necho \"$@\" >> '" + log + "'\nexit 0\n"
	os.WriteFile(filepath.Join(bin, "claude"), []byte(fake), 0o755)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "CLAUDE_CONFIG_DIR=") && !strings.HasPrefix(e, "ANAMNESIS_") && !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	r = mustOK(t, runCmd(t, append(env, "HOME="+uh, "PATH="+bin+":/usr/bin:/bin", "ANAMNESIS_MACHINE_ID=box"), "", "uninstall"))
	if calls, _ := os.ReadFile(log); !strings.Contains(string(calls), "plugin uninstall --scope user anamnesis@anamnesis") || !strings.Contains(r.stdout, "plugin: uninstalled anamnesis@anamnesis") {
		t.Errorf("uninstall did not remove the plugin with claude: calls %q\n%s", calls, r.stdout)
	}
}

// TestDoctorChecksMCPRegistrations (issue 25): init's registration is
// checked, and the plugin installed after init, which leaves two MCP
// servers, is named with the exact command that removes init's.
func TestDoctorChecksMCPRegistrations(t *testing.T) {
	uh := t.TempDir()
	claudeDir := filepath.Join(uh, ".claude")
	mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only", "--no-sync"))
	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "ok:     mcp server: registered in "+filepath.Join(uh, ".claude.json")) {
		t.Errorf("doctor after init:\n%s", d.stdout)
	}
	enablePlugin(t, claudeDir) // the README's plugin steps, after init
	d := anmUser(t, uh, "doctor")
	if !strings.Contains(d.stdout, "warn:   mcp server: registered twice: by init in ") || !strings.Contains(d.stdout, "fix: run `claude mcp remove --scope user anamnesis`") {
		t.Errorf("doctor with both:\n%s", d.stdout)
	}
	mustOK(t, anmUser(t, uh, "init", "--yes", "--local-only", "--no-sync"))
	if d := anmUser(t, uh, "doctor"); !strings.Contains(d.stdout, "ok:     mcp server: served by the Claude Code plugin anamnesis@anamnesis") {
		t.Errorf("doctor after init with the plugin:\n%s", d.stdout)
	}
}

// init --json prints the plan (with --print) or the plan and each step
// done (with --yes) as one JSON object, and refuses to ask for
// confirmation on standard output it promised to JSON.
func TestInitJSON(t *testing.T) {
	uh := t.TempDir()
	var out struct {
		Plan struct {
			SettingsChange string `json:"settings_change"`
			MCP            string `json:"mcp"`
			Sync           bool   `json:"sync"`
		} `json:"plan"`
		Steps []struct {
			Step, Text string
			Changed    bool
		} `json:"steps"`
		Activate []string `json:"activate"`
	}
	r := mustOK(t, anmUser(t, uh, "init", "--print", "--json", "--local-only", "--no-sync"))
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if out.Plan.SettingsChange != "will be created" || !strings.Contains(out.Plan.MCP, filepath.Join(uh, ".claude.json")) || out.Plan.Sync || len(out.Steps) != 0 {
		t.Errorf("--print --json: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(uh, ".anamnesis")); err == nil {
		t.Fatal("--print --json created the store")
	}
	if r := anmUser(t, uh, "init", "--json", "--local-only"); r.code != 2 || !strings.Contains(r.stderr, "--json needs --print or --yes") {
		t.Errorf("--json without --yes: exit %d stderr %q", r.code, r.stderr)
	}
	r = mustOK(t, anmUser(t, uh, "init", "--yes", "--json", "--local-only", "--no-sync"))
	out.Steps = nil
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	var steps []string
	for _, s := range out.Steps {
		steps = append(steps, s.Step)
	}
	if strings.Join(steps, ",") != "config,git hooks,claude,mcp" || strings.Join(out.Activate, ",") != "the hooks,the MCP server" {
		t.Errorf("--yes --json: %s", r.stdout)
	}
}
