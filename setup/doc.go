// Package setup sets memory up on this machine and takes it down again:
// `anamnesis init` and `anamnesis uninstall` as plans. [PlanInit] reads
// what is there (config.json, Claude Code's settings.json, the plugin,
// the claude CLI's version, a running tailnet) and changes nothing; the
// plan's String is what init shows before asking, and [InitPlan.Apply]
// carries it out step by step: config.json, the store and its
// repository, git hooks, Claude Code's hooks, the MCP server, a first
// sync. [PlanUninstall] and [UninstallPlan.Apply] undo what init added
// and keep the notes.
//
// It is the one place that runs the claude CLI for setting up (`claude
// --version`, `claude mcp add` and `remove`, `claude plugin uninstall`),
// so that cmd only parses flags, builds a plan, prints it and applies
// it, as it does with [claudecode.SettingsPlan].
package setup
