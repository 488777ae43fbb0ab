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
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/shellquote"
	"github.com/anamnesis-memory/anamnesis/note"
)

// ClaudeDir is Claude Code's configuration directory: $CLAUDE_CONFIG_DIR,
// else ~/.claude.
func ClaudeDir(userHome string) string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(userHome, ".claude")
}

// ClaudeJSON is where Claude Code keeps user-scope MCP servers.
func ClaudeJSON(userHome string) string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(userHome, ".claude.json")
}

// obj is a JSON object that keeps its key order, so rewriting a user's
// settings.json changes only what we mean to change.
type obj []kv

type kv struct {
	Key string
	Val json.RawMessage
}

func parseObj(data []byte) (obj, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return obj{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var o obj
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, kv{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return o, nil
}

func (o obj) get(key string) (json.RawMessage, bool) {
	for _, e := range o {
		if e.Key == key {
			return e.Val, true
		}
	}
	return nil, false
}

func (o *obj) set(key string, v json.RawMessage) {
	for i, e := range *o {
		if e.Key == key {
			(*o)[i].Val = v
			return
		}
	}
	*o = append(*o, kv{key, v})
}

func (o *obj) del(key string) {
	for i, e := range *o {
		if e.Key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

func (o obj) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(e.Val)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func rawJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return json.RawMessage(bytes.TrimSpace(b.Bytes()))
}

// hookCommand is the shell command Claude Code runs: the absolute binary,
// quoted, and the store home.
func hookCommand(binary, storeHome, name string) string {
	return shellquote.Quote(binary) + " --home " + shellquote.Quote(storeHome) + " hook " + name
}

type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

type group struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []handler `json:"hooks"`
}

// ourGroups are the hook groups init installs, by event.
func ourGroups(binary, storeHome string) []kv {
	g := func(matcher, name string, timeout int) json.RawMessage {
		return rawJSON([]group{{Matcher: matcher, Hooks: []handler{{Type: "command", Command: hookCommand(binary, storeHome, name), Timeout: timeout}}}})
	}
	return []kv{
		{"SessionStart", g("startup|resume|clear|compact", "session-start", 10)},
		{"UserPromptSubmit", g("", "prompt", 10)},
		{"PreCompact", g("", "pre-compact", 30)},
		// 5 s raises Claude Code's shared SessionEnd budget from 1.5 s; the
		// hook itself returns in well under that (sync runs detached).
		{"SessionEnd", g("", "session-end", 5)},
	}
}

// isOurCommand recognises a hook command written by anamnesis, this version or
// the Python tool ("anamnesis inject|sync|capture").
func isOurCommand(command string) bool {
	if !strings.Contains(command, "anamnesis") {
		return false
	}
	for _, m := range []string{"anamnesis inject", "anamnesis sync", "anamnesis capture", "anamnesis' inject", "anamnesis' sync", "anamnesis' capture"} {
		if strings.Contains(command, m) {
			return true
		}
	}
	for _, h := range []string{" hook session-start", " hook prompt", " hook session-end", " hook pre-compact"} {
		if strings.Contains(command, h) {
			return true
		}
	}
	return false
}

// stripOurs removes every group holding one of our commands from one
// event's list; other groups are kept byte for byte.
func stripOurs(list json.RawMessage) (json.RawMessage, int, error) {
	var groups []json.RawMessage
	if err := json.Unmarshal(list, &groups); err != nil {
		return list, 0, nil // not a list: not ours to touch
	}
	var keep []json.RawMessage
	removed := 0
	for _, gr := range groups {
		var g struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		}
		json.Unmarshal(gr, &g)
		ours := false
		for _, h := range g.Hooks {
			if isOurCommand(h.Command) {
				ours = true
			}
		}
		if ours {
			removed++
			continue
		}
		keep = append(keep, gr)
	}
	if len(keep) == 0 {
		return nil, removed, nil
	}
	return rawJSON(keep), removed, nil
}

// SettingsPlan is a computed change to settings.json.
type SettingsPlan struct {
	Path    string
	Old     []byte
	New     []byte
	Changed bool
}

// PlanSettings computes settings.json with our hooks installed (install)
// or removed (!install): earlier anamnesis groups, including the Python
// tool's, are replaced; everything else is kept in order. An unparsable
// file is an error: init refuses before touching anything.
func PlanSettings(claudeDir, binary, storeHome string, install bool) (SettingsPlan, error) {
	p := filepath.Join(claudeDir, "settings.json")
	plan := SettingsPlan{Path: p}
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return plan, fmt.Errorf("read %s: %w", p, err)
	}
	plan.Old = data
	settings, err := parseObj(data)
	if err != nil {
		return plan, fmt.Errorf("%s is not valid JSON (%v); fix it and run again", p, err)
	}
	var hooksObj obj
	if raw, ok := settings.get("hooks"); ok {
		if hooksObj, err = parseObj(raw); err != nil {
			return plan, fmt.Errorf("%s: \"hooks\" is not a JSON object (%v); fix it and run again", p, err)
		}
	}
	var kept obj
	for _, e := range hooksObj {
		list, _, err := stripOurs(e.Val)
		if err != nil {
			return plan, err
		}
		if list != nil {
			kept = append(kept, kv{e.Key, list})
		}
	}
	if install {
		for _, ours := range ourGroups(binary, storeHome) {
			if cur, ok := kept.get(ours.Key); ok {
				var a, b []json.RawMessage
				json.Unmarshal(cur, &a)
				json.Unmarshal(ours.Val, &b)
				kept.set(ours.Key, rawJSON(append(a, b...)))
			} else {
				kept = append(kept, ours)
			}
		}
	}
	if err := planPermissions(&settings, install); err != nil {
		return plan, fmt.Errorf("%s: %w", p, err)
	}
	if len(kept) == 0 {
		settings.del("hooks")
	} else {
		hb, err := kept.marshal()
		if err != nil {
			return plan, err
		}
		settings.set("hooks", json.RawMessage(bytes.TrimSpace(hb)))
	}
	if plan.New, err = settings.marshal(); err != nil {
		return plan, err
	}
	plan.Changed = !equalJSON(plan.Old, plan.New)
	return plan, nil
}

// ReadOnlyTools are the MCP tools that only read memory. Claude Code asks
// before running any MCP tool (a readOnlyHint does not change that: it
// denies them in `claude -p`), unless a permission rule allows it, so init
// allows these in settings.json.
func ReadOnlyTools() []string {
	return []string{"memory_search", "memory_list", "memory_get", "memory_status"}
}

// MCPServerName is the name the MCP server is registered under; Claude
// Code names its tools mcp__<server>__<tool>.
const MCPServerName = "anamnesis"

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
	switch {
	case len(perms) > 0:
		pb, err := perms.marshal()
		if err != nil {
			return err
		}
		settings.set("permissions", json.RawMessage(bytes.TrimSpace(pb)))
	default:
		settings.del("permissions")
	}
	return nil
}

func equalJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// Apply writes the planned file: a backup of the old one first
// (<file>.bak), then the new content atomically. Nothing happens when the
// plan changes nothing (a second init run is a no-op).
func (p SettingsPlan) Apply() error {
	if !p.Changed {
		return nil
	}
	if p.Old != nil {
		if err := os.WriteFile(p.Path+".bak", p.Old, 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", p.Path, err)
		}
	}
	if err := note.WriteFileAtomic(p.Path, p.New); err != nil {
		return err
	}
	return os.Chmod(p.Path, 0o600)
}

// PlanMCPConfig computes ~/.claude.json with the anamnesis MCP server at
// user scope (what `claude mcp add --scope user` writes), or without it.
func PlanMCPConfig(path, binary, storeHome string, install bool) (SettingsPlan, error) {
	plan := SettingsPlan{Path: path}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return plan, fmt.Errorf("read %s: %w", path, err)
	}
	plan.Old = data
	doc, err := parseObj(data)
	if err != nil {
		return plan, fmt.Errorf("%s is not valid JSON (%v); fix it and run again", path, err)
	}
	var servers obj
	if raw, ok := doc.get("mcpServers"); ok {
		if servers, err = parseObj(raw); err != nil {
			return plan, fmt.Errorf("%s: \"mcpServers\" is not a JSON object (%v)", path, err)
		}
	}
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
