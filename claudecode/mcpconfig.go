package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// MCPServerName is the name the MCP server is registered under; Claude
// Code names its tools mcp__<server>__<tool>.
const MCPServerName = "anamnesis"

// ClaudeJSON is where Claude Code keeps user-scope MCP servers.
func ClaudeJSON(userHome string) string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(userHome, ".claude.json")
}

// PlanMCPConfig computes ~/.claude.json with the anamnesis MCP server at
// user scope (what `claude mcp add --scope user` writes), or without it.
func PlanMCPConfig(path, binary, storeHome string, install bool) (SettingsPlan, error) {
	plan := SettingsPlan{Path: path}
	old, doc, servers, err := readObjFile(path, "mcpServers")
	if err != nil {
		return plan, err
	}
	plan.Old = old
	servers.del(MCPServerName)
	if install {
		servers = append(servers, kv{MCPServerName, MCPServerJSON(binary, storeHome)})
	}
	sb, err := servers.marshal()
	if err != nil {
		return plan, err
	}
	doc.set("mcpServers", json.RawMessage(bytes.TrimSpace(sb)))
	if plan.New, err = doc.marshal(); err != nil {
		return plan, err
	}
	plan.Changed = !equalJSON(plan.Old, plan.New)
	return plan, nil
}

// MCPServerJSON is the server's entry in Claude Code's mcpServers. With
// alwaysLoad its tools are in every request instead of deferred behind a
// tool search (Claude Code defers MCP tools by default since 2.1.121), so
// the model sees memory_search without having to look for it.
func MCPServerJSON(binary, storeHome string) json.RawMessage {
	return rawJSON(map[string]any{
		"type": "stdio", "command": binary, "args": []string{"--home", storeHome, "mcp"}, "env": map[string]string{},
		"alwaysLoad": true,
	})
}

// MCPAddArgs is the `claude mcp add-json` command line registering the
// server at user scope (add-json, not add: add has no flag for
// alwaysLoad).
func MCPAddArgs(binary, storeHome string) []string {
	return []string{"mcp", "add-json", "--scope", "user", MCPServerName, string(MCPServerJSON(binary, storeHome))}
}

// MCPRegistration is the anamnesis MCP server's entry in ~/.claude.json:
// at user scope (what init registers) and in any project's local scope
// (`claude mcp add --scope local`), by project directory.
type MCPRegistration struct {
	User     json.RawMessage // nil: none at user scope
	Projects []string        // projects with a local-scope anamnesis server
}

// ReadMCPRegistration reads path (ClaudeJSON) for anamnesis servers; a
// missing file has none.
func ReadMCPRegistration(path string) (MCPRegistration, error) {
	var reg MCPRegistration
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return reg, nil
	}
	if err != nil {
		return reg, fmt.Errorf("read %s: %w", path, err)
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return reg, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	reg.User = doc.MCPServers[MCPServerName]
	for dir, p := range doc.Projects {
		if _, ok := p.MCPServers[MCPServerName]; ok {
			reg.Projects = append(reg.Projects, dir)
		}
	}
	slices.Sort(reg.Projects)
	return reg, nil
}

// SameMCPServer reports whether a registered entry runs binary for
// storeHome as init registers it (MCPServerJSON).
func SameMCPServer(entry json.RawMessage, binary, storeHome string) bool {
	return equalJSON(entry, MCPServerJSON(binary, storeHome))
}
