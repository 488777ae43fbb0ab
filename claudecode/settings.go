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
	"strconv"
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

// HookForm is how a hook entry in settings.json names what Claude Code
// runs.
type HookForm int

const (
	// ExecForm gives the binary as "command" and its arguments as "args":
	// Claude Code spawns it directly, no shell, so a binary or home whose
	// path holds spaces, quotes or $ arrives intact on every platform
	// (Windows runs shell-form hooks through Git Bash or PowerShell, whose
	// quoting differs from sh). Claude Code reads "args" since 2.1.139.
	ExecForm HookForm = iota
	// ShellForm is one sh command line, each path single-quoted: what
	// Claude Code before 2.1.139 understands (it ignores "args" and would
	// run the bare binary).
	ShellForm
)

// ExecFormSince is the first Claude Code version that runs a hook's
// "args" without a shell.
func ExecFormSince() [3]int { return [3]int{2, 1, 139} }

// HookFormFor picks the hook form for the Claude Code whose `claude
// --version` printed version ("2.1.330 (Claude Code)"). Output that names
// no version (claude not installed, a wrapper) gets ExecForm: every
// Claude Code released since mid-2026 reads it.
func HookFormFor(version string) HookForm {
	f := strings.Fields(version)
	if len(f) == 0 {
		return ExecForm
	}
	parts := strings.Split(f[0], ".")
	if len(parts) < 3 {
		return ExecForm
	}
	var v [3]int
	for i := range v {
		n, err := strconv.Atoi(strings.TrimLeft(parts[i], "v"))
		if err != nil {
			return ExecForm
		}
		v[i] = n
	}
	since := ExecFormSince()
	for i := range v {
		if v[i] != since[i] {
			if v[i] < since[i] {
				return ShellForm
			}
			return ExecForm
		}
	}
	return ExecForm
}

// UnlessPlugin is the last argument of the hooks init writes: the hook
// does nothing in a project where the anamnesis plugin is active
// (PluginActive), whose own hooks (without it) run instead.
const UnlessPlugin = "--unless-plugin"

// hookArgs are the arguments of one hook's command line.
func hookArgs(storeHome, name string) []string {
	return []string{"--home", storeHome, "hook", name, UnlessPlugin}
}

type handler struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Timeout int      `json:"timeout,omitempty"`
}

// hookHandler is one hook entry in the given form: the absolute binary,
// the store home, the hook's name.
func hookHandler(form HookForm, binary, storeHome, name string, timeout int) handler {
	h := handler{Type: "command", Command: binary, Args: hookArgs(storeHome, name), Timeout: timeout}
	if form == ShellForm {
		h.Command = shellquote.Quote(binary) + " --home " + shellquote.Quote(storeHome) + " hook " + name + " " + UnlessPlugin
		h.Args = nil
	}
	return h
}

type group struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []handler `json:"hooks"`
}

// HookSpec is one Claude Code hook anamnesis installs: the event, the
// matcher, the `anamnesis hook` name and its timeout in seconds. The
// plugin's hooks/hooks.json holds the same set (a test compares them).
type HookSpec struct {
	Event, Matcher, Name string
	Timeout              int
}

// Hooks are the hooks init installs, in settings order.
func Hooks() []HookSpec {
	return []HookSpec{
		{"SessionStart", "startup|resume|clear|compact", "session-start", 10},
		{"UserPromptSubmit", "", "prompt", 10},
		{"PreCompact", "", "pre-compact", 30},
		// 5 s raises Claude Code's shared SessionEnd budget from 1.5 s; the
		// hook itself returns in well under that (sync runs detached).
		{"SessionEnd", "", "session-end", 5},
	}
}

// ourGroups are the hook groups init installs, by event.
func ourGroups(form HookForm, binary, storeHome string) []kv {
	var out []kv
	for _, h := range Hooks() {
		out = append(out, kv{h.Event, rawJSON([]group{{Matcher: h.Matcher, Hooks: []handler{hookHandler(form, binary, storeHome, h.Name, h.Timeout)}}})})
	}
	return out
}

// isOurCommand recognises a shell-form hook command written by anamnesis,
// by earlier versions or the Python tool ("anamnesis inject|sync|capture").
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

// isOurExec recognises an exec-form entry of ours: a binary named
// anamnesis (anamnesis.exe on Windows) run as `hook <event>`.
func isOurExec(command string, args []string) bool {
	// Either separator: settings.json may come from a Windows machine.
	base := strings.ToLower(command[strings.LastIndexAny(command, `/\`)+1:])
	if !strings.HasPrefix(base, "anamnesis") {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "hook" && slices.Contains(Events(), args[i+1]) {
			return true
		}
	}
	return false
}

// stripOurs removes every group holding one of our commands, in either
// form, from one event's list; other groups are kept byte for byte. at is
// the index the first removed group had among the kept ones (-1: none),
// so a rewrite can put the new group where the old one was.
func stripOurs(list json.RawMessage) (kept []json.RawMessage, at int, err error) {
	var groups []json.RawMessage
	if err := json.Unmarshal(list, &groups); err != nil {
		return nil, -1, err
	}
	at = -1
	for _, gr := range groups {
		var g struct {
			Hooks []struct {
				Command string          `json:"command"`
				Args    json.RawMessage `json:"args"`
			} `json:"hooks"`
		}
		json.Unmarshal(gr, &g)
		ours := false
		for _, h := range g.Hooks {
			var args []string
			if h.Args != nil && json.Unmarshal(h.Args, &args) == nil {
				ours = ours || isOurExec(h.Command, args)
			} else {
				ours = ours || isOurCommand(h.Command)
			}
		}
		if ours {
			if at < 0 {
				at = len(kept)
			}
			continue
		}
		kept = append(kept, gr)
	}
	return kept, at, nil
}

// SettingsPlan is a computed change to settings.json.
type SettingsPlan struct {
	Path    string
	Old     []byte
	New     []byte
	Changed bool
}

// Setup is what a hook entry runs: the absolute binary, the store home,
// and the form Claude Code is given them in.
type Setup struct {
	Binary, Home string
	Form         HookForm
}

// PlanSettings computes settings.json with our hooks installed (install)
// or removed (!install): earlier anamnesis groups, in either form and
// including the Python tool's, are replaced where they stood, so an
// upgrade keeps the user's order and never doubles a hook; everything
// else is kept in order. An unparsable file is an error: init refuses
// before touching anything.
func PlanSettings(claudeDir string, s Setup, install bool) (SettingsPlan, error) {
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
	ours := map[string]json.RawMessage{}
	if install {
		for _, g := range ourGroups(s.Form, s.Binary, s.Home) {
			ours[g.Key] = g.Val
		}
	}
	var kept obj
	for _, e := range hooksObj {
		list, at, err := stripOurs(e.Val)
		if err != nil {
			kept = append(kept, e) // not a list: not ours to touch
			continue
		}
		if g, ok := ours[e.Key]; ok {
			var add []json.RawMessage
			json.Unmarshal(g, &add)
			if at < 0 {
				at = len(list)
			}
			list = append(list[:at], append(add, list[at:]...)...)
			delete(ours, e.Key)
		}
		if len(list) > 0 {
			kept = append(kept, kv{e.Key, rawJSON(list)})
		}
	}
	if install {
		for _, g := range ourGroups(s.Form, s.Binary, s.Home) {
			if _, left := ours[g.Key]; left {
				kept = append(kept, g)
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
