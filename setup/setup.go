package setup

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Machine is what init and uninstall act on, as cmd resolved it from
// flags, config.json and the environment. Nothing in this package reads
// the environment: cmd does, so that its tests can run it in-process.
type Machine struct {
	Home            string // the store's home
	MachineID       string // this machine's id, recorded in config.json
	Remote          string // the sync remote, "" for local only
	TailscaleSocket string // tailscaled's socket, "" for the system's
	Binary          string // this binary, symlinks resolved: what hooks run
	ClaudeDir       string // Claude Code's directory ($CLAUDE_CONFIG_DIR, else ~/.claude)
	ClaudeJSON      string // where MCP servers are registered when claude is not on PATH
	Claude          string // the claude CLI on PATH, "" when there is none
	OnPath          string // `anamnesis` on PATH (symlinks resolved), "" when there is none
	PluginHome      string // the home the plugin's hooks use ($ANAMNESIS_HOME, else ~/.anamnesis), "" when unknown
}

// portable is the store's git repository, where the git hooks go.
func (m Machine) portable() string { return filepath.Join(m.Home, note.PortableDir) }

// claude is the claude CLI on PATH (its zero value when there is none).
func (m Machine) claude() claudeCLI { return claudeCLI{path: m.Claude} }

// Step is one thing Apply did: init and uninstall print it as one line,
// "Name: Text".
type Step struct {
	Name    string `json:"step"`
	Text    string `json:"text"`
	Changed bool   `json:"changed"`
	// Failed marks a step that did not succeed without stopping the
	// rest (the MCP registration, the first sync): Text says how to
	// finish it later.
	Failed bool `json:"failed,omitempty"`
}

func (s Step) String() string { return s.Name + ": " + s.Text }

// registerMCP adds (install) or removes the MCP server at user scope:
// with `claude mcp` when claude is on PATH (Claude Code owns its
// ~/.claude.json then), else in ClaudeJSON directly.
func (m Machine) registerMCP(ctx context.Context, install bool) (Step, error) {
	if m.Claude == "" {
		return m.registerMCPFile(install)
	}
	rmErr := m.claude().mcpRemove(ctx) // absent is fine
	switch {
	case install:
		if err := m.claude().mcpAdd(ctx, m.Binary, m.Home); err != nil {
			return Step{Name: "mcp", Changed: true}, err
		}
		return Step{"mcp", "registered anamnesis (user scope)", true, false}, nil
	case rmErr != nil:
		return Step{"mcp", "nothing removed (`claude mcp remove --scope user anamnesis` found no anamnesis server)", false, false}, nil
	default:
		return Step{"mcp", "removed (claude mcp remove --scope user anamnesis)", true, false}, nil
	}
}

// registerMCPFile is registerMCP without claude: the server's entry in
// ClaudeJSON, planned and applied as settings.json is.
func (m Machine) registerMCPFile(install bool) (Step, error) {
	plan, err := claudecode.PlanMCPConfig(m.ClaudeJSON, m.Binary, m.Home, install)
	if err != nil {
		return Step{Name: "mcp"}, err
	}
	if err := plan.Apply(); err != nil {
		return Step{Name: "mcp"}, err
	}
	step := Step{Name: "mcp", Changed: plan.Changed}
	switch {
	case install && plan.Changed:
		step.Text = "registered anamnesis in " + plan.Path
	case install:
		step.Text = "anamnesis already registered in " + plan.Path
	case plan.Changed:
		step.Text = "removed anamnesis from " + plan.Path
	default:
		step.Text = "anamnesis was not registered in " + plan.Path
	}
	return step, nil
}

// refusing is the error of a plan that cannot be made: nothing was
// changed.
func refusing(err error) error { return fmt.Errorf("refusing to run: %w", err) }
