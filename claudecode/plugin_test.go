package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestPluginMatchesInit: the plugin in the repository installs the same
// hooks as init (run as `anamnesis` from PATH, exec form, on the default
// home), the PreToolUse hook for exactly the read-only tools, and the MCP
// server with alwaysLoad; the marketplace lists it by the name the tool
// names are derived from.
func TestPluginMatchesInit(t *testing.T) {
	var hooks struct {
		Hooks map[string][]group `json:"hooks"`
	}
	readJSON(t, "../plugin/hooks/hooks.json", &hooks)
	want := map[string][]group{}
	for _, h := range PluginHooks() {
		want[h.Event] = []group{{Matcher: h.Matcher, Hooks: []handler{{Type: "command", Command: "anamnesis", Args: []string{"hook", h.Name}, Timeout: h.Timeout}}}}
	}
	if !reflect.DeepEqual(hooks.Hooks, want) {
		got, _ := json.MarshalIndent(hooks.Hooks, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("plugin/hooks/hooks.json:\n%s\nwant:\n%s", got, exp)
	}

	var mcp struct {
		MCPServers map[string]struct {
			Type       string   `json:"type"`
			Command    string   `json:"command"`
			Args       []string `json:"args"`
			AlwaysLoad bool     `json:"alwaysLoad"`
		} `json:"mcpServers"`
	}
	readJSON(t, "../plugin/.mcp.json", &mcp)
	srv, ok := mcp.MCPServers[MCPServerName]
	if len(mcp.MCPServers) != 1 || !ok || srv.Command != "anamnesis" || !slices.Equal(srv.Args, []string{"mcp"}) || !srv.AlwaysLoad || srv.Type != "stdio" {
		t.Errorf("plugin/.mcp.json: %+v", mcp)
	}

	var manifest struct {
		Name    string            `json:"name"`
		Engines map[string]string `json:"engines"`
	}
	readJSON(t, "../plugin/.claude-plugin/plugin.json", &manifest)
	s := ExecFormSince()
	if manifest.Name != PluginName || manifest.Engines["claude-code"] != fmt.Sprintf(">=%d.%d.%d", s[0], s[1], s[2]) {
		t.Errorf("plugin.json: %+v (the hooks' exec form needs Claude Code %v or later)", manifest, s)
	}
	var market struct {
		Name    string `json:"name"`
		Plugins []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"plugins"`
	}
	readJSON(t, "../.claude-plugin/marketplace.json", &market)
	if len(market.Plugins) != 1 || market.Plugins[0].Name != PluginName || market.Plugins[0].Source != "./plugin" || market.Name != PluginMarketplace {
		t.Errorf("marketplace.json: %+v", market)
	}
}

func TestPreToolUseAllowsOnlyReadOnlyTools(t *testing.T) {
	for name, allow := range map[string]bool{
		PluginToolPrefix + "memory_search":  true,
		PluginToolPrefix + "memory_status":  true,
		"mcp__anamnesis__memory_get":        true,
		PluginToolPrefix + "memory_write":   false,
		PluginToolPrefix + "memory_sync":    false,
		PluginToolPrefix + "memory_resolve": false,
		PluginToolPrefix + "memory_review":  false,
		"mcp__other__memory_search":         false,
		"mcp__anamnesis__memory_search_x":   false,
		"Bash":                              false,
		"":                                  false,
	} {
		out := PreToolUse(Input{HookEventName: "PreToolUse", ToolName: name})
		if allow != strings.Contains(out, `"permissionDecision":"allow"`) || (!allow && out != "") {
			t.Errorf("%q: %q", name, out)
		}
		if allow && !strings.Contains(out, `"hookEventName":"PreToolUse"`) {
			t.Errorf("%q: hookEventName missing (Claude Code rejects hookSpecificOutput without it): %s", name, out)
		}
	}
}

func TestFindPlugin(t *testing.T) {
	const installed = `{"version": 2, "plugins": {"anamnesis@anamnesis": [{"scope": "user", "installPath": "/x"}], "anamnesis@team": [{"scope": "project", "projectPath": "/p"}]}}`
	for _, c := range []struct {
		name, settings, installed, want string
	}{
		{"enabled and installed", `{"enabledPlugins": {"other@x": true, "anamnesis@anamnesis": true}}`, installed, "anamnesis@anamnesis"},
		{"disabled", `{"enabledPlugins": {"anamnesis@anamnesis": false}}`, installed, ""},
		{"enabled, never installed", `{"enabledPlugins": {"anamnesis@anamnesis": true}}`, "", ""},
		{"installed for a project only", `{"enabledPlugins": {"anamnesis@team": true}}`, installed, ""},
		{"another plugin of that name's prefix", `{"enabledPlugins": {"anamnesis-extra@anamnesis": true}}`, installed, ""},
		{"no settings", "", "", ""},
	} {
		dir := t.TempDir()
		if c.settings != "" {
			writeSettings(t, dir, c.settings)
		}
		if c.installed != "" {
			os.MkdirAll(dir+"/plugins", 0o755)
			os.WriteFile(dir+"/plugins/installed_plugins.json", []byte(c.installed), 0o600)
		}
		got, err := FindPlugin(dir)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// PluginActive reads what `claude plugin install --scope project|local`
// writes (Claude Code 2.1.330): enabledPlugins in the project's
// .claude/settings.json or settings.local.json, an installed_plugins.json
// entry naming the project's path.
func TestPluginActive(t *testing.T) {
	const proj = "/work/proj"
	installed := func(entries ...string) string {
		return `{"version": 2, "plugins": {"anamnesis@anamnesis": [` + strings.Join(entries, ",") + `]}}`
	}
	userEntry := `{"scope": "user", "installPath": "/c"}`
	projEntry := `{"scope": "project", "projectPath": "/work/proj", "installPath": "/c"}`
	localEntry := `{"scope": "local", "installPath": "/c", "projectPath": "/work/proj/"}`
	otherEntry := `{"scope": "project", "projectPath": "/work/other", "installPath": "/c"}`
	on, off := `{"enabledPlugins": {"anamnesis@anamnesis": true}}`, `{"enabledPlugins": {"anamnesis@anamnesis": false}}`
	for _, c := range []struct {
		name                      string
		user, project, local, ins string
		want                      bool
	}{
		{"project scope", "", on, "", installed(projEntry), true},
		{"local scope", "", "", on, installed(localEntry), true},
		{"user scope, enabled for the user", on, "", "", installed(userEntry), true},
		{"user install, enabled by the project's committed settings", "", on, "", installed(userEntry), true},
		{"project settings enable it, installed for another project", "", on, "", installed(otherEntry), false},
		{"enabled, never installed", "", on, "", "", false},
		{"the user's plugin turned off by the project", on, off, "", installed(userEntry), false},
		{"turned off by the project, on again locally", on, off, on, installed(userEntry), true},
		{"installed for the project, not enabled", "", "", "", installed(projEntry), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			claude, root := t.TempDir(), t.TempDir()
			project := root + proj
			write := func(p, s string) {
				if s == "" {
					return
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write(claude+"/settings.json", c.user)
			write(project+"/.claude/settings.json", c.project)
			write(project+"/.claude/settings.local.json", c.local)
			write(claude+"/plugins/installed_plugins.json", strings.ReplaceAll(c.ins, `"/work/`, `"`+root+`/work/`))
			got, err := PluginActive(claude, project)
			if err != nil || (got != "") != c.want {
				t.Errorf("%q, %v; want active %v", got, err, c.want)
			}
		})
	}
	if got, err := PluginActive(t.TempDir(), ""); got != "" || err != nil {
		t.Errorf("no project: %q, %v", got, err)
	}
}

// Both routes' tool names are ours; the plugin's are named as
// plugin/.mcp.json's server and plugin.json's name make them.
func TestOurToolBothRoutes(t *testing.T) {
	for name, want := range map[string]string{
		"mcp__anamnesis__memory_write":                  "memory_write",
		"mcp__plugin_anamnesis_anamnesis__memory_write": "memory_write",
		"mcp__plugin_anamnesis_anamnesis__memory_get":   "memory_get",
		"mcp__other__memory_write":                      "",
		"mcp__anamnesis__":                              "",
		"Bash":                                          "",
	} {
		if got, ok := OurTool(name); got != want || ok != (want != "") {
			t.Errorf("OurTool(%q) = %q, %v", name, got, ok)
		}
	}
}
