package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	old, settings, hooksObj, err := readObjFile(p, "hooks")
	if err != nil {
		return plan, err
	}
	plan.Old = old
	var groups []kv
	if install {
		groups = ourGroups(s.Form, s.Binary, s.Home)
	}
	if err := planPermissions(&settings, install); err != nil {
		return plan, fmt.Errorf("%s: %w", p, err)
	}
	if err := settings.setOrDel("hooks", replaceOurs(hooksObj, groups)); err != nil {
		return plan, err
	}
	if plan.New, err = settings.marshal(); err != nil {
		return plan, err
	}
	plan.Changed = !equalJSON(plan.Old, plan.New)
	return plan, nil
}

// replaceOurs is the hooks object with our groups taken out of each
// event's list and groups (one per event, none to uninstall) put where
// ours stood, else at the end of the list; an event the object lacks
// gets its group last. An event left with no groups is dropped.
func replaceOurs(hooks obj, groups []kv) obj {
	ours := map[string]json.RawMessage{}
	for _, g := range groups {
		ours[g.Key] = g.Val
	}
	var kept obj
	for _, e := range hooks {
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
	for _, g := range groups {
		if _, left := ours[g.Key]; left {
			kept = append(kept, g)
		}
	}
	return kept
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
