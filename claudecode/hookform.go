package claudecode

import (
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/shellquote"
)

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
