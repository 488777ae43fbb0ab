package claudecode

import (
	"encoding/json"
	"fmt"
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

// ReadOnlyTools are the MCP tools that only read memory. Claude Code asks
// before running any MCP tool (a readOnlyHint does not change that: it
// denies them in `claude -p`), unless a permission rule allows it, so init
// allows these in settings.json.
func ReadOnlyTools() []string {
	return []string{"memory_search", "memory_list", "memory_get", "memory_status"}
}

// permissionRules are the rules init adds to permissions.allow.
func permissionRules() []string {
	var out []string
	for _, t := range ReadOnlyTools() {
		out = append(out, "mcp__"+MCPServerName+"__"+t)
	}
	return out
}

// planPermissions adds our rules to permissions.allow (install) or
// removes them, keeping every other rule and key in order.
func planPermissions(settings *obj, install bool) error {
	var perms obj
	if raw, ok := settings.get("permissions"); ok {
		var err error
		if perms, err = parseObj(raw); err != nil {
			return fmt.Errorf("\"permissions\" is not a JSON object (%v); fix it and run again", err)
		}
	}
	var allow []json.RawMessage
	if raw, ok := perms.get("allow"); ok {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return fmt.Errorf("\"permissions.allow\" is not a list (%v); fix it and run again", err)
		}
	}
	ours := permissionRules()
	var kept []json.RawMessage
	for _, r := range allow {
		var rule string
		if json.Unmarshal(r, &rule) == nil && slices.Contains(ours, rule) {
			continue
		}
		kept = append(kept, r)
	}
	if !install && len(kept) == len(allow) {
		return nil // none of ours: the user's permissions stay as they are
	}
	if install {
		for _, r := range ours {
			kept = append(kept, rawJSON(r))
		}
	}
	switch {
	case len(kept) > 0:
		perms.set("allow", rawJSON(kept))
	case len(allow) > 0:
		perms.del("allow")
	}
	return settings.setOrDel("permissions", perms)
}
