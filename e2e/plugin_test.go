//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pluginTool is what Claude Code calls a tool of the plugin's MCP server:
// mcp__plugin_<plugin>_<server>__<tool>.
func pluginTool(name string) string { return "mcp__plugin_anamnesis_anamnesis__" + name }

// pluginUser is a user with anamnesis and the real Claude Code CLI on
// PATH, as the plugin's hooks and MCP server find anamnesis.
func pluginUser(t *testing.T) (*user, string) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	path := filepath.Join(u.home, "bin")
	os.MkdirAll(path, 0o755)
	for name, target := range map[string]string{"anamnesis": u.bin, "claude": claude} {
		if err := os.Symlink(target, filepath.Join(path, name)); err != nil {
			t.Fatal(err)
		}
	}
	for i, e := range u.env {
		if strings.HasPrefix(e, "PATH=") {
			u.env[i] = "PATH=" + path + ":" + strings.TrimPrefix(e, "PATH=")
		}
	}
	return u, claude
}

// TestClaudeCodePlugin installs the repository's plugin with the real
// Claude Code CLI from the local checkout (`plugin marketplace add`,
// `plugin install`), with anamnesis and claude on PATH. init then leaves
// the hooks and the MCP server to the plugin. A session against the fake
// API gets the project's note once and the prompt's note, calls the
// plugin's memory_search without any permission rule or --allowedTools
// (the plugin's PreToolUse hook allows it), and is captured. uninstall
// removes the plugin through claude.
func TestClaudeCodePlugin(t *testing.T) {
	u, claude := pluginUser(t)
	run := func(args ...string) string {
		t.Helper()
		out, errs, err := u.run(u.home, "", claude, args...)
		if err != nil {
			t.Fatalf("claude %v: %v\n%s%s", args, err, out, errs)
		}
		return out
	}
	run("plugin", "marketplace", "add", repoRoot())
	run("plugin", "install", "anamnesis@anamnesis")
	var plugins []struct {
		ID      string `json:"id"`
		Enabled bool   `json:"enabled"`
	}
	// Claude Code 2.1.332 lists its own built-in plugins (…@builtin)
	// beside the ones installed: ours must be there once, enabled.
	err := json.Unmarshal([]byte(run("plugin", "list", "--json")), &plugins)
	ours := 0
	for _, p := range plugins {
		switch {
		case p.ID == "anamnesis@anamnesis" && p.Enabled:
			ours++
		case !strings.HasSuffix(p.ID, "@builtin"):
			ours = -100 // a plugin nobody installed
		}
	}
	if err != nil || ours != 1 {
		t.Fatalf("plugin list: %+v %v", plugins, err)
	}

	out := u.anamnesis("init", "--yes", "--local-only")
	if !strings.Contains(out, "the Claude Code plugin anamnesis@anamnesis runs the hooks and the MCP server") || strings.Contains(out, "warning") {
		t.Errorf("init did not leave the hooks to the plugin, or warned:\n%s", out)
	}
	settings, _ := os.ReadFile(filepath.Join(u.home, ".claude", "settings.json"))
	if strings.Contains(string(settings), "session-start") {
		t.Errorf("init wrote hooks beside the plugin's:\n%s", settings)
	}
	if mcp := run("mcp", "list"); strings.Contains(mcp, "anamnesis: ") && !strings.Contains(mcp, "plugin:anamnesis:anamnesis") {
		t.Errorf("a user-scope server beside the plugin's:\n%s", mcp)
	}

	u.anamnesis("write", "--type", "procedural", "--project", "demo", "--title", "Deploys go through the blue-green switch",
		"--body", "The zanzibar flag flips traffic between blue and green.")
	u.anamnesis("write", "--type", "semantic", "--project", "other", "--title", "Narwhal queue limits",
		"--body", "The narwhal queue drops messages above 64 KiB.")
	dir := u.project("demo")
	api := startFakeAPI(t,
		Reply{Tool: pluginTool("memory_search"), ToolArg: map[string]any{"query": "zanzibar flag"}},
		Reply{Text: "Use the zanzibar flag. Going forward we will keep narwhal messages under 64 KiB."},
	)
	prompt := "what limits does the narwhal queue have?"
	cout, errs, err := u.claude(claude, dir, api.URL, prompt)
	if err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, cout, errs)
	}
	first := firstRequestWith(t, api, prompt)
	if n := strings.Count(first, "zanzibar flag flips traffic"); n != 1 {
		t.Errorf("the SessionStart note reached the model %d times, want once\nstderr: %s", n, errs)
	}
	if !strings.Contains(first, "narwhal queue drops messages above 64 KiB") {
		t.Errorf("the prompt-relevant note did not reach the model\nstderr: %s", errs)
	}
	if !strings.Contains(first, `"name":"`+pluginTool("memory_search")+`"`) {
		t.Error("the plugin's memory_search is not among the request's tools (alwaysLoad)")
	}
	if strings.Contains(first, `"name":"mcp__anamnesis__memory_search"`) {
		t.Error("a second, user-scope memory_search is offered beside the plugin's")
	}
	var result string
	for _, r := range api.Requests() {
		if i := strings.Index(r, `"tool_result"`); i >= 0 {
			result = r[i:min(len(r), i+600)]
			break
		}
	}
	if !strings.Contains(result, "Deploys go through the blue-green switch") || strings.Contains(result, "permission") {
		t.Errorf("memory_search through the plugin did not run without asking: %s", result)
	}
	// SessionEnd captures the session once (twice would mean two hooks).
	var list string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if list = u.anamnesis("list", "--type", "episodic", "--json"); strings.Contains(list, prompt) {
			break
		}
	}
	if !strings.Contains(list, prompt) || strings.Count(list, `"id": `) != 1 {
		t.Errorf("the session was not captured once:\n%s", list)
	}

	out = u.anamnesis("uninstall")
	if !strings.Contains(out, "plugin: uninstalled anamnesis@anamnesis") {
		t.Errorf("uninstall did not remove the plugin:\n%s", out)
	}
	if l := run("plugin", "list", "--json"); strings.Contains(l, "anamnesis@anamnesis") {
		t.Errorf("the plugin is still installed: %s", l)
	}
}

// TestPluginInOneProjectBesideInitHooks: init's hooks are in the user's
// settings (every project), and one project enables the plugin in its own
// .claude/settings.json (`claude plugin install --scope project`, as a
// team would commit). In that project the plugin's hooks do the work and
// init's step aside (--unless-plugin): the note reaches the model once
// and the session is captured once; in another project init's hooks run.
func TestPluginInOneProjectBesideInitHooks(t *testing.T) {
	u, claude := pluginUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	u.anamnesis("write", "--type", "procedural", "--project", "demo", "--title", "Deploys go through the blue-green switch",
		"--body", "The zanzibar flag flips traffic between blue and green.")
	u.anamnesis("write", "--type", "procedural", "--project", "other", "--title", "Releases are tagged on Fridays",
		"--body", "The okapi tag marks each Friday release.")
	demo, other := u.project("demo"), u.project("other")
	claudeIn := func(dir string, args ...string) string {
		t.Helper()
		out, errs, err := u.run(dir, "", claude, args...)
		if err != nil {
			t.Fatalf("claude %v in %s: %v\n%s%s", args, dir, err, out, errs)
		}
		return out
	}
	claudeIn(u.home, "plugin", "marketplace", "add", repoRoot())
	claudeIn(demo, "plugin", "install", "anamnesis@anamnesis", "--scope", "project")
	if b, _ := os.ReadFile(filepath.Join(demo, ".claude", "settings.json")); !strings.Contains(string(b), `"anamnesis@anamnesis": true`) {
		t.Fatalf("the plugin is not enabled in the project's settings:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(u.home, ".claude", "settings.json")); !strings.Contains(string(b), "--unless-plugin") {
		t.Fatalf("init's hooks are not in the user's settings:\n%s", b)
	}

	for _, c := range []struct{ dir, note, prompt string }{
		{demo, "zanzibar flag flips traffic", "how do deploys switch traffic here?"},
		{other, "okapi tag marks each Friday release", "when do releases happen here?"},
	} {
		api := startFakeAPI(t, Reply{Text: "Going forward we will keep using this: we decided to tag releases on Fridays and to flip traffic with the zanzibar flag."})
		out, errs, err := u.claude(claude, c.dir, api.URL, c.prompt)
		if err != nil {
			t.Fatalf("claude -p in %s: %v\n%s\n%s", c.dir, err, out, errs)
		}
		if n := strings.Count(firstRequestWith(t, api, c.prompt), c.note); n != 1 {
			t.Errorf("%s: the project's note reached the model %d times, want once\nstderr: %s", filepath.Base(c.dir), n, errs)
		}
		var list string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if list = u.anamnesis("list", "--type", "episodic", "--json"); strings.Contains(list, c.prompt) {
				break
			}
		}
		var notes struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal([]byte(list), &notes); err != nil {
			t.Fatalf("list --json: %v\n%s", err, list)
		}
		n := 0
		for _, nt := range notes.Results {
			if b, _ := json.Marshal(nt); strings.Contains(string(b), c.prompt) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: the session was captured %d times, want once:\n%s", filepath.Base(c.dir), n, list)
		}
	}
}
