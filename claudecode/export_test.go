package claudecode

import (
	"context"
	"strings"
)

// Helpers only tests use, kept out of the package's API.

// ParseTranscript is ReadTranscript with no deadline, for callers with
// no context to give (the tests, the fuzz target).
func ParseTranscript(path string) (Session, error) {
	return ReadTranscript(context.Background(), path)
}

// PluginHooks are the hooks of the plugin's hooks/hooks.json: init's
// hooks, and a PreToolUse hook allowing the plugin's read-only tools
// (PreToolUse says why), matched by exact name so no other tool call
// starts a process.
func PluginHooks() []HookSpec {
	var names []string
	for _, t := range ReadOnlyTools() {
		names = append(names, PluginToolPrefix+t)
	}
	return append(Hooks(), HookSpec{"PreToolUse", strings.Join(names, "|"), "pre-tool-use", 10})
}
