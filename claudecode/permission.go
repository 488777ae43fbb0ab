package claudecode

import (
	"encoding/json"
	"slices"
	"strings"
)

// PluginName is the plugin's name in .claude-plugin/plugin.json; Claude
// Code names the tools of a plugin's MCP server
// mcp__plugin_<plugin>_<server>__<tool>.
const PluginName = "anamnesis"

// PluginMarketplace is the name of the repository's marketplace
// (.claude-plugin/marketplace.json): the plugin installs as
// anamnesis@anamnesis.
const PluginMarketplace = "anamnesis"

// PluginToolPrefix starts the names of the plugin's MCP tools.
const PluginToolPrefix = "mcp__plugin_" + PluginName + "_" + MCPServerName + "__"

// InitToolPrefix starts the names of the MCP tools init registers.
const InitToolPrefix = "mcp__" + MCPServerName + "__"

// OurTool returns the anamnesis tool a Claude Code tool name calls
// ("memory_write"), whichever route registered the server (init's
// mcp__anamnesis__…, the plugin's mcp__plugin_anamnesis_anamnesis__…),
// and false for any other tool: both routes must behave alike.
func OurTool(name string) (string, bool) {
	for _, prefix := range []string{InitToolPrefix, PluginToolPrefix} {
		if t, ok := strings.CutPrefix(name, prefix); ok && t != "" {
			return t, true
		}
	}
	return "", false
}

// IsReadOnlyTool says whether a Claude Code tool name is one of our
// read-only memory tools, registered by init or by the plugin.
func IsReadOnlyTool(name string) bool {
	t, ok := OurTool(name)
	return ok && slices.Contains(ReadOnlyTools(), t)
}

// PreToolUse is the plugin's PreToolUse hook: it allows a read-only
// memory tool and says nothing about any other. A plugin cannot add
// permission rules (its settings.json takes only agent settings), and
// without a rule Claude Code asks before every MCP tool and denies it in
// `claude -p`, read-only hint or not. init's registration gets rules in
// settings.json instead.
func PreToolUse(in Input) string {
	if !IsReadOnlyTool(in.ToolName) {
		return ""
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "allow",
		"permissionDecisionReason": "anamnesis: a read-only memory tool",
	}})
	return string(out)
}
