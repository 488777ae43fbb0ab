package setup

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis/claudecode"
)

// claudeCLI is the claude command on PATH; its zero value is "not
// installed", and every method then says so or falls back.
type claudeCLI struct{ path string }

// versionTimeout bounds `claude --version`: a wrapper that hangs must not
// hang init.
const versionTimeout = 20 * time.Second

// pluginTimeout bounds `claude plugin uninstall`.
const pluginTimeout = time.Minute

// hookForm asks the installed Claude Code for its version: exec form
// (no shell between Claude Code and a path with spaces or quotes) unless
// it is older than the first version that reads "args". why is the
// plan's explanation.
func (c claudeCLI) hookForm(ctx context.Context) (form claudecode.HookForm, why string) {
	const execWhy = "exec form: binary and arguments, no shell"
	if c.path == "" {
		return claudecode.ExecForm, execWhy
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.path, "--version").Output()
	if err != nil {
		return claudecode.ExecForm, execWhy
	}
	v := strings.TrimSpace(string(out))
	if claudecode.HookFormFor(v) != claudecode.ShellForm {
		return claudecode.ExecForm, execWhy
	}
	s := claudecode.ExecFormSince()
	return claudecode.ShellForm, fmt.Sprintf("shell form: Claude Code %s is older than %d.%d.%d, which runs hooks without a shell; run init again after upgrading it", v, s[0], s[1], s[2])
}

// mcpRemove runs `claude mcp remove --scope user anamnesis`; an error
// means there was none to remove (or claude failed, which init cannot
// tell apart).
func (c claudeCLI) mcpRemove(ctx context.Context) error {
	return exec.CommandContext(ctx, c.path, "mcp", "remove", "--scope", "user", claudecode.MCPServerName).Run()
}

// mcpAdd registers the server at user scope.
func (c claudeCLI) mcpAdd(ctx context.Context, binary, home string) error {
	out, err := exec.CommandContext(ctx, c.path, claudecode.MCPAddArgs(binary, home)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("claude mcp add failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pluginUninstallArgs is Claude Code's command that removes plugin.
func pluginUninstallArgs(plugin string) []string {
	return []string{"plugin", "uninstall", "--scope", "user", plugin}
}

// pluginUninstall removes the plugin with Claude Code's own command (it
// owns the plugin's files and records).
func (c claudeCLI) pluginUninstall(ctx context.Context, plugin string) error {
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	args := pluginUninstallArgs(plugin)
	if out, err := exec.CommandContext(ctx, c.path, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("`claude %s` failed: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
