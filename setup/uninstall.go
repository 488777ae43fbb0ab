package setup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
)

// UninstallPlan is `anamnesis uninstall` worked out and not yet done:
// what init added comes out (Claude Code's hooks and permission rules,
// the MCP server, the git hooks), and the plugin, with Claude Code's
// own command. The notes stay.
type UninstallPlan struct {
	Machine
	settings claudecode.SettingsPlan // settings.json without our hooks
	plugin   string                  // the anamnesis plugin, when installed and enabled
}

// PlanUninstall reads what uninstall would change and changes nothing;
// a settings.json it cannot parse is an error.
func PlanUninstall(m Machine) (*UninstallPlan, error) {
	p := &UninstallPlan{Machine: m}
	var err error
	if p.settings, err = claudecode.PlanSettings(m.ClaudeDir, claudecode.Setup{Binary: m.Binary, Home: m.Home}, false); err != nil {
		return nil, refusing(err)
	}
	if p.plugin, err = claudecode.FindPlugin(m.ClaudeDir); err != nil {
		return nil, refusing(err)
	}
	return p, nil
}

// String is the plan as `uninstall --print` shows it.
func (p *UninstallPlan) String() string {
	s := fmt.Sprintf("would remove anamnesis hooks from %s (changes: %v), the MCP registration, and the git hooks in %s; notes stay in %s\n",
		p.settings.Path, p.settings.Changed, p.portable(), p.Home)
	if p.plugin != "" {
		s += fmt.Sprintf("would uninstall the Claude Code plugin %s (claude %s)\n", p.plugin, strings.Join(pluginUninstallArgs(p.plugin), " "))
	}
	return s
}

// Apply carries the plan out, reporting each step: settings.json, the
// MCP server, the plugin, the git hooks. Only a failure to write
// settings.json or the git hooks stops it.
func (p *UninstallPlan) Apply(ctx context.Context, report func(Step)) error {
	if err := p.settings.Apply(); err != nil {
		return err
	}
	if p.settings.Changed {
		report(Step{"claude", "anamnesis hooks removed from " + p.settings.Path, true, false})
	} else {
		report(Step{"claude", "no anamnesis hooks in " + p.settings.Path, false, false})
	}
	if step, err := p.registerMCP(ctx, false); err != nil {
		report(Step{Name: "mcp", Text: err.Error(), Failed: true})
	} else {
		report(step)
	}
	if p.plugin != "" {
		report(p.uninstallPlugin(ctx))
	}
	return p.removeGitHooks(report)
}

// uninstallPlugin removes the plugin with Claude Code's own command;
// without claude on PATH it says how. The marketplace stays: the user
// added it, and may keep others' plugins from it.
func (p *UninstallPlan) uninstallPlugin(ctx context.Context) Step {
	if p.Claude == "" {
		return Step{"plugin", fmt.Sprintf("%s is still installed; remove it with `claude %s` (or /plugin in Claude Code)", p.plugin, strings.Join(pluginUninstallArgs(p.plugin), " ")), false, false}
	}
	if err := p.claude().pluginUninstall(ctx, p.plugin); err != nil {
		return Step{Name: "plugin", Text: err.Error(), Failed: true}
	}
	_, market, _ := strings.Cut(p.plugin, "@")
	return Step{"plugin", fmt.Sprintf("uninstalled %s (the marketplace stays: `claude plugin marketplace remove %s` removes it)", p.plugin, market), true, false}
}

// removeGitHooks takes init's git hooks out of memory/, when it is a
// repository.
func (p *UninstallPlan) removeGitHooks(report func(Step)) error {
	repo := p.portable()
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		return nil // no repository (yet): no hooks of ours
	}
	if _, err := githooks.Uninstall(repo); err != nil {
		return fmt.Errorf("git hooks: %w", err)
	}
	report(Step{"git hooks", "removed", true, false})
	return nil
}

// Done is uninstall's last line.
func (p *UninstallPlan) Done() string {
	return fmt.Sprintf("uninstall: done. Your notes are still in %s.", p.Home)
}
