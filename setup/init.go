package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/tailnet"
)

// Choices are what init was asked to set up (its --no-* flags turn them
// off) and whether to change the embedder.
type Choices struct {
	Hooks    bool // Claude Code's hooks in settings.json
	MCP      bool // the MCP server, registered at user scope
	GitHooks bool // git hooks in memory/
	Sync     bool // a first sync

	// SetEmbedder records Embedder in config.json (nil removes it);
	// without it config.json's embedder is kept.
	SetEmbedder bool
	Embedder    *anamnesis.EmbedderConfig
}

// firstSyncTimeout bounds init's first sync: a hub that does not answer
// leaves init done and says to run `anamnesis sync` later.
const firstSyncTimeout = 30 * time.Second

// embedderProbeTimeout bounds the plan's question whether the embedding
// server answers.
const embedderProbeTimeout = 5 * time.Second

// InitPlan is `anamnesis init` worked out and not yet done: [PlanInit]
// makes it, String shows it, [InitPlan.Apply] carries it out.
type InitPlan struct {
	Machine
	Choices

	open     anamnesis.Options       // how Apply opens the store (MachineID, Remote and Create are set by Apply)
	plugin   string                  // the anamnesis plugin, when Claude Code has it installed and enabled
	settings claudecode.SettingsPlan // settings.json with our hooks (or, with the plugin, without them)
	formWhy  string                  // which hook form, and why
	tailnet  string                  // a running tailnet, offered when there is no remote
	warnings []string                // what would keep the plugin from reaching this binary and home
	embedder string                  // the embedder and whether it answers (with SetEmbedder)
}

// PlanInit reads what init would change and changes nothing. A
// settings.json or plugin record it cannot parse is an error: init
// stops before any change. open is how Apply will open the store
// (NewEmbedder also probes the embedder for the plan).
func PlanInit(ctx context.Context, m Machine, ch Choices, open anamnesis.Options) (*InitPlan, error) {
	p := &InitPlan{Machine: m, Choices: ch, open: open}
	var err error
	if ch.Hooks || ch.MCP {
		if p.plugin, err = claudecode.FindPlugin(m.ClaudeDir); err != nil {
			return nil, refusing(err)
		}
	}
	if ch.Hooks {
		var form claudecode.HookForm
		form, p.formWhy = m.claude().hookForm(ctx)
		// With the plugin, init's own hooks would run beside the plugin's:
		// every note injected twice, every session captured twice.
		setup := claudecode.Setup{Binary: m.Binary, Home: m.Home, Form: form}
		if p.settings, err = claudecode.PlanSettings(m.ClaudeDir, setup, p.plugin == ""); err != nil {
			return nil, refusing(err)
		}
	}
	if m.Remote == "" {
		if tn := tailnet.Summarize(ctx, m.TailscaleSocket); tn.Running {
			p.tailnet = tn.String()
		}
	}
	if p.pluginServes() {
		p.warnings = m.pluginWarnings()
	}
	if ch.SetEmbedder {
		p.embedder = describeEmbedder(ctx, ch.Embedder, open.NewEmbedder)
	}
	return p, nil
}

// pluginServes reports whether the plugin takes the place of what init
// would add (its hooks and its MCP server).
func (p *InitPlan) pluginServes() bool { return p.plugin != "" && (p.Hooks || p.MCP) }

// registersMCP reports whether Apply registers the MCP server: the
// plugin registers its own, and a user-scope one beside it would give
// Claude every memory tool twice.
func (p *InitPlan) registersMCP() bool { return p.MCP && p.plugin == "" }

// pluginWarnings says what would keep the plugin's hooks and server
// from reaching this binary and home: they run `anamnesis` from PATH,
// with no --home.
func (m Machine) pluginWarnings() []string {
	var out []string
	switch {
	case m.OnPath == "":
		out = append(out, "the plugin runs `anamnesis` from PATH, and PATH has none: put "+m.Binary+" on PATH (`make install` puts it in $(go env GOPATH)/bin)")
	case m.OnPath != m.Binary:
		out = append(out, fmt.Sprintf("the plugin runs `anamnesis` from PATH, which is %s, not %s", m.OnPath, m.Binary))
	}
	if m.PluginHome != "" && m.PluginHome != m.Home {
		out = append(out, fmt.Sprintf("the plugin's hooks use %s ($ANAMNESIS_HOME, else ~/.anamnesis), not %s: set ANAMNESIS_HOME=%s in the \"env\" of Claude Code's settings.json", m.PluginHome, m.Home, m.Home))
	}
	return out
}

// describeEmbedder is the plan's line for an embedder: which, and
// whether it answers now (it is recorded either way: a model server that
// is not running yet leaves search to BM25 until it is).
func describeEmbedder(ctx context.Context, e *anamnesis.EmbedderConfig, newEmbedder func(anamnesis.EmbedderConfig) (anamnesis.Embedder, error)) string {
	if e == nil {
		return "off (search is BM25)"
	}
	what := fmt.Sprintf("%s model %s at %s", e.Kind, e.Model, e.URL)
	err := fmt.Errorf("no client for %s embedders", e.Kind)
	if newEmbedder != nil {
		var emb anamnesis.Embedder
		if emb, err = newEmbedder(*e); err == nil {
			ctx, cancel := context.WithTimeout(ctx, embedderProbeTimeout)
			defer cancel()
			_, err = emb.Embed(ctx, []string{"anamnesis init"})
		}
	}
	if err != nil {
		return what + fmt.Sprintf(" (does not answer yet: %v; search stays BM25 until it does)", err)
	}
	return what + " (answers; notes are embedded in the background after the first sync)"
}

// String is the plan as init shows it before asking.
func (p *InitPlan) String() string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-10s : %s\n", label, fmt.Sprintf(format, args...))
	}
	b.WriteString("anamnesis init plan:\n")
	line("store home", "%s", p.Home)
	line("machine id", "%s", p.MachineID)
	line("remote", "%s", p.remoteShown())
	if p.TailscaleSocket != "" {
		line("tailscaled", "socket %s (recorded as tailscale_socket)", p.TailscaleSocket)
	}
	if p.tailnet != "" {
		line("tailnet", "%s; `--remote tailnet` syncs with your other machines that run `anamnesis serve`, no hub needed", p.tailnet)
	}
	line("binary", "%s", p.Binary)
	line("config", "%s", filepath.Join(p.Home, anamnesis.ConfigFile))
	if p.GitHooks {
		line("git hooks", "%s in %s", strings.Join(githooks.Names(), ", "), p.portable())
	}
	if c := p.claudeLine(); c != "" {
		line("claude", "%s", c)
	}
	for _, w := range p.warnings {
		line("warning", "%s", w)
	}
	if m := p.mcpLine(); m != "" {
		line("mcp", "%s", m)
	}
	if p.SetEmbedder {
		line("embedder", "%s", p.embedder)
	}
	if p.Sync {
		line("sync", "a first sync")
	}
	return b.String()
}

// remoteShown is the remote with any secret in it hidden.
func (p *InitPlan) remoteShown() string {
	if p.Remote == "" {
		return "(none: local only)"
	}
	return gitsync.Redact(p.Remote)
}

// claudeLine is what the plan does to Claude Code's hooks ("" for
// nothing).
func (p *InitPlan) claudeLine() string {
	switch {
	case p.pluginServes():
		what := "its earlier entries are already gone"
		if p.settings.Changed {
			what = "its earlier hooks and permission rules come out of " + p.settings.Path
		}
		return fmt.Sprintf("the Claude Code plugin %s runs the hooks and the MCP server, so init adds neither; %s", p.plugin, what)
	case p.Hooks:
		return fmt.Sprintf("SessionStart, UserPromptSubmit, PreCompact, SessionEnd hooks (%s) in %s, %s", p.formWhy, p.settings.Path, p.settingsState())
	}
	return ""
}

// settingsState says what happens to settings.json.
func (p *InitPlan) settingsState() string {
	switch {
	case p.settings.Changed && p.settings.Old == nil:
		return "will be created"
	case p.settings.Changed:
		return "will be updated (backup: settings.json.bak)"
	}
	return "already up to date"
}

// mcpLine is how the plan registers the MCP server ("" for not at all).
func (p *InitPlan) mcpLine() string {
	switch {
	case !p.registersMCP():
		return ""
	case p.Claude != "":
		return "claude " + strings.Join(claudecode.MCPAddArgs(p.Binary, p.Home), " ")
	}
	return fmt.Sprintf("server %q in %s (claude is not on PATH)", claudecode.MCPServerName, p.ClaudeJSON)
}

// planJSON is the plan as `init --json` prints it.
type planJSON struct {
	Home            string   `json:"home"`
	MachineID       string   `json:"machine_id"`
	Remote          string   `json:"remote"` // secrets hidden; "" for local only
	TailscaleSocket string   `json:"tailscale_socket,omitempty"`
	Tailnet         string   `json:"tailnet,omitempty"`
	Binary          string   `json:"binary"`
	Config          string   `json:"config"`
	GitHooks        []string `json:"git_hooks,omitempty"`
	Plugin          string   `json:"plugin,omitempty"`
	Settings        string   `json:"settings,omitempty"` // settings.json, when init changes or checks it
	SettingsChange  string   `json:"settings_change,omitempty"`
	HookForm        string   `json:"hook_form,omitempty"`
	MCP             string   `json:"mcp,omitempty"`
	Warnings        []string `json:"warnings,omitempty"`
	Embedder        string   `json:"embedder,omitempty"`
	Sync            bool     `json:"sync"`
}

// MarshalJSON is the plan for `init --json`: what String shows, as
// fields.
func (p *InitPlan) MarshalJSON() ([]byte, error) {
	v := planJSON{Home: p.Home, MachineID: p.MachineID, Remote: gitsync.Redact(p.Remote), TailscaleSocket: p.TailscaleSocket,
		Tailnet: p.tailnet, Binary: p.Binary, Config: filepath.Join(p.Home, anamnesis.ConfigFile), Plugin: p.plugin,
		MCP: p.mcpLine(), Warnings: p.warnings, Embedder: p.embedder, Sync: p.Sync}
	if p.GitHooks {
		v.GitHooks = githooks.Names()
	}
	if p.Hooks {
		v.Settings, v.HookForm = p.settings.Path, p.formWhy
		v.SettingsChange = p.settingsState()
	}
	return json.Marshal(v)
}

// Result is what Apply leaves for cmd to finish with.
type Result struct {
	// Activate names what a new Claude Code session picks up ("the
	// hooks", "the MCP server").
	Activate []string `json:"activate"`
	// Embed reports that the store has an embedder: its notes' vectors
	// are due, which cmd computes in the background.
	Embed bool `json:"-"`
}

// String is init's last line.
func (r Result) String() string {
	if len(r.Activate) == 0 {
		return "init: done."
	}
	return fmt.Sprintf("init: done. Start a new Claude Code session for %s to take effect.", strings.Join(r.Activate, " and "))
}

// Apply carries the plan out in order, reporting each step as it is
// done: config.json, the store and its repository, the git hooks,
// Claude Code's hooks, the MCP server, a first sync. An error stops it
// where it happened (the steps before it are done and reported); a
// failed MCP registration or first sync does not, and is reported as
// Failed.
func (p *InitPlan) Apply(ctx context.Context, report func(Step)) (Result, error) {
	var res Result
	cfgPath, err := p.writeConfig()
	if err != nil {
		return res, err
	}
	report(Step{"config", "wrote " + cfgPath, true, false})
	opts := p.open
	opts.MachineID, opts.Remote, opts.Create = p.MachineID, p.Remote, true
	s, err := anamnesis.Open(ctx, p.Home, opts)
	if err != nil {
		return res, err
	}
	defer s.Close()
	if err := s.EnsureRepo(ctx); err != nil {
		return res, err
	}
	if p.GitHooks {
		if _, err := githooks.Install(p.portable(), p.Binary, p.Home); err != nil {
			return res, fmt.Errorf("git hooks: %w", err)
		}
		report(Step{"git hooks", "installed", true, false})
	}
	if p.Hooks {
		if err := p.applyHooks(report, &res); err != nil {
			return res, err
		}
	}
	if p.MCP {
		p.applyMCP(ctx, report, &res)
	}
	if p.Sync {
		report(firstSync(ctx, s))
	}
	res.Embed = s.HasEmbedder()
	return res, nil
}

// writeConfig records the machine id, remote, tailscaled socket and
// (when asked) the embedder in config.json, keeping the rest.
func (p *InitPlan) writeConfig() (path string, err error) {
	cfg, err := anamnesis.LoadConfig(p.Home)
	if err != nil {
		return "", err
	}
	cfg.MachineID, cfg.Remote, cfg.TailscaleSocket = p.MachineID, p.Remote, p.TailscaleSocket
	if p.SetEmbedder {
		cfg.Embedder = p.Embedder
	}
	if err := anamnesis.SaveConfig(p.Home, cfg); err != nil {
		return "", err
	}
	return filepath.Join(p.Home, anamnesis.ConfigFile), nil
}

// applyHooks writes settings.json as planned: our hooks in, or with the
// plugin, out.
func (p *InitPlan) applyHooks(report func(Step), res *Result) error {
	if err := p.settings.Apply(); err != nil {
		return err
	}
	path, changed := p.settings.Path, p.settings.Changed
	switch {
	case p.plugin != "" && changed:
		report(Step{"claude", fmt.Sprintf("removed init's hooks from %s (the plugin %s runs them)", path, p.plugin), true, false})
	case p.plugin != "":
	case changed:
		report(Step{"claude", "hooks installed in " + path, true, false})
		res.Activate = append(res.Activate, "the hooks")
	default:
		report(Step{"claude", "hooks already installed in " + path, false, false})
	}
	return nil
}

// applyMCP registers the MCP server, or with the plugin removes the one
// init registered before. A failure is not fatal: init again finishes
// it.
func (p *InitPlan) applyMCP(ctx context.Context, report func(Step), res *Result) {
	step, err := p.registerMCP(ctx, p.registersMCP())
	if err != nil {
		report(Step{Name: "mcp", Text: fmt.Sprintf("not registered: %v (not fatal; run `anamnesis init` again later)", err), Failed: true})
		return
	}
	report(step)
	if step.Changed && p.registersMCP() {
		res.Activate = append(res.Activate, "the MCP server")
	}
}

// firstSync syncs once, bounded by firstSyncTimeout; a failure is
// reported, not returned: the store is set up, and `anamnesis sync`
// finishes it.
func firstSync(ctx context.Context, s *anamnesis.Store) Step {
	rep, err := s.Sync(ctx, anamnesis.SyncOptions{Timeout: firstSyncTimeout})
	switch {
	case err != nil:
		return Step{Name: "sync", Text: fmt.Sprintf("failed: %v; run `anamnesis sync` once that is fixed", err), Failed: true}
	case rep.Remote == "":
		return Step{"sync", fmt.Sprintf("no remote; committed local notes: %v", rep.Committed), rep.Committed, false}
	}
	changed := rep.Committed || rep.Fetched || rep.Pushed
	return Step{"sync", fmt.Sprintf("committed=%v fetched=%v pushed=%v; %d notes added to the index", rep.Committed, rep.Fetched, rep.Pushed, rep.Reindexed.Added), changed, false}
}
