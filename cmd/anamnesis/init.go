package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/anamnesis-memory/anamnesis/tailnet"
	"github.com/urfave/cli/v2"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "set up memory on this machine: store, remote, git hooks, Claude Code hooks, MCP server, first sync",
		Description: "Creates the store (--home, default ~/.anamnesis), records this machine's id and the\n" +
			"remote in config.json, installs the git hooks, adds the anamnesis hooks to Claude Code's\n" +
			"settings.json ($CLAUDE_CONFIG_DIR or ~/.claude; a backup is kept as settings.json.bak;\n" +
			"unrelated hooks are kept, earlier anamnesis entries replaced), registers the MCP server at\n" +
			"user scope (with `claude mcp add`, or in ~/.claude.json when claude is not on PATH) and\n" +
			"runs a first sync. When Claude Code has the anamnesis plugin installed and enabled, the\n" +
			"plugin runs the hooks and the MCP server: init then adds neither, and removes what it\n" +
			"added before. Hooks are written in exec form (no shell) unless `claude --version` is\n" +
			"older than 2.1.139. Running it again changes nothing. --print shows the plan and writes\n" +
			"nothing. `anamnesis uninstall` removes exactly what init added (notes are kept), and the\n" +
			"plugin with `claude plugin uninstall`.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "remote", Usage: "sync remote: a bare repo path, file://, ssh://, user@host:path or http(s)://"},
			&cli.BoolFlag{Name: "local-only", Usage: "no remote (and forget one configured before)"},
			&cli.BoolFlag{Name: "print", Usage: "show what would be done and write nothing"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"},
			&cli.BoolFlag{Name: "no-claude", Usage: "leave Claude Code's settings.json alone"},
			&cli.BoolFlag{Name: "no-mcp", Usage: "do not register the MCP server"},
			&cli.BoolFlag{Name: "no-git-hooks", Usage: "do not install git hooks in memory/"},
			&cli.BoolFlag{Name: "no-sync", Usage: "do not run a first sync"},
			&cli.StringFlag{Name: "embedder", Usage: "semantic search with a local embedding server: `KIND[,URL[,MODEL[,API_KEY_ENV]]]`, e.g. ollama (" + anamnesis.DefaultOllamaURL + ", " + anamnesis.DefaultOllamaModel + ") or openai,http://127.0.0.1:8080,MODEL; off removes it"},
			&cli.BoolFlag{Name: "uninstall", Usage: "remove what init added (same as `anamnesis uninstall`)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("uninstall") {
				return runUninstall(c)
			}
			return runInit(c)
		},
	}
}

func uninstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "uninstall",
		Usage: "remove the Claude Code hooks, MCP registration and git hooks init added, and the plugin (notes are kept)",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "print", Usage: "show what would be removed"}},
		Action: func(c *cli.Context) error {
			return runUninstall(c)
		},
	}
}

type setup struct {
	home, machine, remote, binary, userHome, claudeDir string
	tsSocket                                           string // tailscaled's socket ("": the system's)
}

// resolveSetup reads what init and uninstall act on: the store options
// (storeOptions), config.json, --remote/--local-only, this binary and
// Claude Code's directory.
func resolveSetup(c *cli.Context) (setup, error) {
	var s setup
	home, o, err := storeOptions(c, forCommand)
	if err != nil {
		return s, err
	}
	s.home = home
	cfg, err := anamnesis.LoadConfig(s.home)
	if err != nil {
		return s, err
	}
	if s.machine, err = anamnesis.ResolveMachineID(o.MachineID, cfg); err != nil {
		return s, err
	}
	s.remote, s.tsSocket = cfg.Remote, cfg.TailscaleSocket
	if o.TailscaleSocket != "" {
		s.tsSocket = o.TailscaleSocket
	}
	if o.Remote != "" {
		s.remote = o.Remote
	}
	if c.IsSet("remote") {
		s.remote = c.String("remote")
	}
	if c.Bool("local-only") {
		s.remote = ""
	}
	inst, err := installFor(envOf(c))
	if err != nil {
		return s, err
	}
	s.binary, s.claudeDir = inst.Binary, inst.ClaudeDir
	s.userHome, err = os.UserHomeDir() // installFor found it
	return s, err
}

// installFor is where this binary's hooks belong: its own resolved path
// and Claude Code's directory ($CLAUDE_CONFIG_DIR, else ~/.claude).
func installFor(env procEnv) (anamnesis.Install, error) {
	var inst anamnesis.Install
	bin, err := env.executable()
	if err != nil {
		return inst, fmt.Errorf("find the anamnesis binary: %w", err)
	}
	if p, err := filepath.EvalSymlinks(bin); err == nil {
		bin = p
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return inst, fmt.Errorf("find your home directory: %w", err)
	}
	return anamnesis.Install{Binary: bin, ClaudeDir: claudecode.ClaudeDir(userHome), ClaudeJSON: claudecode.ClaudeJSON(userHome)}, nil
}

func runInit(c *cli.Context) error {
	if c.IsSet("remote") && c.Bool("local-only") {
		return usagef("--remote and --local-only exclude each other")
	}
	st, err := resolveSetup(c)
	if err != nil {
		return err
	}
	var embedder *anamnesis.EmbedderConfig
	if c.IsSet("embedder") {
		if embedder, err = anamnesis.ParseEmbedderSpec(c.String("embedder")); err != nil {
			return usagef("--embedder: %v", err)
		}
	}
	w := c.App.Writer
	claudeBin, _ := exec.LookPath("claude")
	// Pre-flight: a settings.json we cannot parse stops init before any change.
	var plan claudecode.SettingsPlan
	var form hookForm
	var plugin string // the anamnesis plugin, when Claude Code has it installed and enabled
	if !c.Bool("no-claude") || !c.Bool("no-mcp") {
		if plugin, err = claudecode.FindPlugin(st.claudeDir); err != nil {
			return fmt.Errorf("refusing to run: %w", err)
		}
	}
	if !c.Bool("no-claude") {
		form = claudeHookForm(c.Context, claudeBin)
		// With the plugin, init's own hooks would run beside the plugin's:
		// every note injected twice, every session captured twice.
		if plan, err = claudecode.PlanSettings(st.claudeDir, claudecode.Setup{Binary: st.binary, Home: st.home, Form: form.form}, plugin == ""); err != nil {
			return fmt.Errorf("refusing to run: %w", err)
		}
	}
	remote := gitsync.Redact(st.remote)
	if remote == "" {
		remote = "(none: local only)"
	}
	fmt.Fprintln(w, "anamnesis init plan:")
	fmt.Fprintf(w, "  store home : %s\n", st.home)
	fmt.Fprintf(w, "  machine id : %s\n", st.machine)
	fmt.Fprintf(w, "  remote     : %s\n", remote)
	if st.tsSocket != "" {
		fmt.Fprintf(w, "  tailscaled : socket %s (recorded as tailscale_socket)\n", st.tsSocket)
	}
	if st.remote == "" {
		if tn := tailnet.Summarize(c.Context, st.tsSocket); tn.Running {
			fmt.Fprintf(w, "  tailnet    : %s; `--remote tailnet` syncs with your other machines that run `anamnesis serve`, no hub needed\n", tn)
		}
	}
	fmt.Fprintf(w, "  binary     : %s\n", st.binary)
	fmt.Fprintf(w, "  config     : %s\n", filepath.Join(st.home, anamnesis.ConfigFile))
	if !c.Bool("no-git-hooks") {
		fmt.Fprintf(w, "  git hooks  : %s in %s\n", strings.Join(githooks.Names(), ", "), filepath.Join(st.home, note.PortableDir))
	}
	switch {
	case plugin != "" && (!c.Bool("no-claude") || !c.Bool("no-mcp")):
		what := "its earlier entries are already gone"
		if plan.Changed {
			what = "its earlier hooks and permission rules come out of " + plan.Path
		}
		fmt.Fprintf(w, "  claude     : the Claude Code plugin %s runs the hooks and the MCP server, so init adds neither; %s\n", plugin, what)
		for _, warn := range pluginWarnings(envOf(c), st) {
			fmt.Fprintf(w, "  warning    : %s\n", warn)
		}
	case !c.Bool("no-claude"):
		state := "already up to date"
		switch {
		case plan.Changed && plan.Old == nil:
			state = "will be created"
		case plan.Changed:
			state = "will be updated (backup: settings.json.bak)"
		}
		fmt.Fprintf(w, "  claude     : SessionStart, UserPromptSubmit, PreCompact, SessionEnd hooks (%s) in %s, %s\n", form.why, plan.Path, state)
	}
	if !c.Bool("no-mcp") && plugin == "" {
		if claudeBin != "" {
			fmt.Fprintf(w, "  mcp        : claude %s\n", strings.Join(claudecode.MCPAddArgs(st.binary, st.home), " "))
		} else {
			fmt.Fprintf(w, "  mcp        : server \"anamnesis\" in %s (claude is not on PATH)\n", claudecode.ClaudeJSON(st.userHome))
		}
	}
	if c.IsSet("embedder") {
		fmt.Fprintf(w, "  embedder   : %s\n", describeEmbedder(c.Context, embedder))
	}
	if !c.Bool("no-sync") {
		fmt.Fprintln(w, "  sync       : a first sync")
	}
	if c.Bool("print") {
		fmt.Fprintln(w, "(--print: nothing was written)")
		return nil
	}
	if !c.Bool("yes") {
		// Enter alone means yes; end of input (stdin closed, /dev/null,
		// a script that gave no answer) means no: init changes files
		// outside the store, which nobody agreed to.
		fmt.Fprint(w, "Proceed? [Y/n] ")
		ans, err := bufio.NewReader(c.App.Reader).ReadString('\n')
		if err != nil && ans == "" {
			fmt.Fprintln(w)
			return cli.Exit("init: nothing done: no answer on standard input (pass --yes to set up without asking)", 1)
		}
		if a := strings.ToLower(strings.TrimSpace(ans)); a != "" && a != "y" && a != "yes" {
			return cli.Exit("init: nothing done", 1)
		}
	}

	cfg, err := anamnesis.LoadConfig(st.home)
	if err != nil {
		return err
	}
	cfg.MachineID, cfg.Remote, cfg.TailscaleSocket = st.machine, st.remote, st.tsSocket
	if c.IsSet("embedder") {
		cfg.Embedder = embedder
	}
	if err := anamnesis.SaveConfig(st.home, cfg); err != nil {
		return err
	}
	fmt.Fprintf(w, "config: wrote %s\n", filepath.Join(st.home, anamnesis.ConfigFile))
	progress := newProgressLine(c.App.ErrWriter) // the first sync can take a while
	s, err := anamnesis.Open(c.Context, st.home, anamnesis.Options{Tailnet: tailscaled{}, MachineID: st.machine, Remote: st.remote, Create: true,
		NewEmbedder: newEmbedder,
		Progress:    progress.update,
		Notice: func(m string) {
			progress.clear()
			fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", m)
		}})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.EnsureRepo(c.Context); err != nil {
		return err
	}
	var activate []string // what a new Claude Code session picks up
	if !c.Bool("no-git-hooks") {
		if _, err := githooks.Install(filepath.Join(st.home, note.PortableDir), st.binary, st.home); err != nil {
			return fmt.Errorf("git hooks: %w", err)
		}
		fmt.Fprintln(w, "git hooks: installed")
	}
	if !c.Bool("no-claude") {
		if err := plan.Apply(); err != nil {
			return err
		}
		switch {
		case plugin != "" && plan.Changed:
			fmt.Fprintf(w, "claude: removed init's hooks from %s (the plugin %s runs them)\n", plan.Path, plugin)
		case plugin != "":
		case plan.Changed:
			fmt.Fprintf(w, "claude: hooks installed in %s\n", plan.Path)
			activate = append(activate, "the hooks")
		default:
			fmt.Fprintf(w, "claude: hooks already installed in %s\n", plan.Path)
		}
	}
	if !c.Bool("no-mcp") {
		// The plugin registers the server itself; a user-scope one beside
		// it would give Claude every memory tool twice.
		if changed, err := registerMCP(c.Context, w, st, claudeBin, plugin == ""); err != nil {
			fmt.Fprintf(w, "mcp: not registered: %v (not fatal; run `anamnesis init` again later)\n", err)
		} else if changed && plugin == "" {
			activate = append(activate, "the MCP server")
		}
	}
	if !c.Bool("no-sync") {
		rep, err := s.Sync(c.Context, anamnesis.SyncOptions{Timeout: 30 * time.Second})
		switch {
		case err != nil:
			fmt.Fprintf(w, "sync: failed: %v; run `anamnesis sync` once that is fixed\n", err)
		case rep.Remote == "":
			fmt.Fprintf(w, "sync: no remote; committed local notes: %v\n", rep.Committed)
		default:
			fmt.Fprintf(w, "sync: committed=%v fetched=%v pushed=%v; %d notes added to the index\n", rep.Committed, rep.Fetched, rep.Pushed, rep.Reindexed.Added)
		}
	}
	spawnEmbed(c, s) // with an embedder: vectors for what the store holds, in the background
	if len(activate) > 0 {
		fmt.Fprintf(w, "init: done. Start a new Claude Code session for %s to take effect.\n", strings.Join(activate, " and "))
	} else {
		fmt.Fprintln(w, "init: done.")
	}
	return nil
}

// pluginWarnings says what would keep the plugin's hooks and server
// from reaching this binary and home: they run `anamnesis` from PATH,
// with no --home.
func pluginWarnings(env procEnv, st setup) []string {
	var out []string
	onPath, err := exec.LookPath("anamnesis")
	if p, e := filepath.EvalSymlinks(onPath); e == nil {
		onPath = p
	}
	switch {
	case err != nil:
		out = append(out, "the plugin runs `anamnesis` from PATH, and PATH has none: put "+st.binary+" on PATH (`make install` puts it in $(go env GOPATH)/bin)")
	case onPath != st.binary:
		out = append(out, fmt.Sprintf("the plugin runs `anamnesis` from PATH, which is %s, not %s", onPath, st.binary))
	}
	if h, err := anamnesis.ResolveHome(env.getenv("ANAMNESIS_HOME")); err == nil && h != st.home {
		out = append(out, fmt.Sprintf("the plugin's hooks use %s ($ANAMNESIS_HOME, else ~/.anamnesis), not %s: set ANAMNESIS_HOME=%s in the \"env\" of Claude Code's settings.json", h, st.home, st.home))
	}
	return out
}

func pluginUninstallArgs(plugin string) []string {
	return []string{"plugin", "uninstall", "--scope", "user", plugin}
}

// uninstallPlugin removes the plugin with Claude Code's own command (it
// owns the plugin's files and records); without claude on PATH it says
// how. The marketplace stays: the user added it, and may keep others'
// plugins from it.
func uninstallPlugin(ctx context.Context, w io.Writer, claudeBin, plugin string) {
	args := pluginUninstallArgs(plugin)
	if claudeBin == "" {
		fmt.Fprintf(w, "plugin: %s is still installed; remove it with `claude %s` (or /plugin in Claude Code)\n", plugin, strings.Join(args, " "))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, claudeBin, args...).CombinedOutput(); err != nil {
		fmt.Fprintf(w, "plugin: `claude %s` failed: %v: %s\n", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		return
	}
	_, market, _ := strings.Cut(plugin, "@")
	fmt.Fprintf(w, "plugin: uninstalled %s (the marketplace stays: `claude plugin marketplace remove %s` removes it)\n", plugin, market)
}

// hookForm is the form init writes hooks in, and why.
type hookForm struct {
	form claudecode.HookForm
	why  string
}

// claudeHookForm asks the installed Claude Code for its version: exec form
// (no shell between Claude Code and a path with spaces or quotes) unless
// it is older than the first version that reads "args".
func claudeHookForm(ctx context.Context, claudeBin string) hookForm {
	execForm := hookForm{claudecode.ExecForm, "exec form: binary and arguments, no shell"}
	if claudeBin == "" {
		return execForm
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, claudeBin, "--version").Output()
	if err != nil {
		return execForm
	}
	v := strings.TrimSpace(string(out))
	if claudecode.HookFormFor(v) == claudecode.ShellForm {
		s := claudecode.ExecFormSince()
		return hookForm{claudecode.ShellForm, fmt.Sprintf("shell form: Claude Code %s is older than %d.%d.%d, which runs hooks without a shell; run init again after upgrading it", v, s[0], s[1], s[2])}
	}
	return execForm
}

// registerMCP adds (install) or removes the MCP server; changed reports
// whether anything was changed.
func registerMCP(ctx context.Context, w io.Writer, st setup, claudeBin string, install bool) (changed bool, err error) {
	if claudeBin != "" {
		rm := exec.CommandContext(ctx, claudeBin, "mcp", "remove", "--scope", "user", "anamnesis")
		rmErr := rm.Run() // absent is fine
		if !install {
			if rmErr != nil {
				fmt.Fprintln(w, "mcp: nothing removed (`claude mcp remove --scope user anamnesis` found no anamnesis server)")
			} else {
				fmt.Fprintln(w, "mcp: removed (claude mcp remove --scope user anamnesis)")
			}
			return rmErr == nil, nil
		}
		out, err := exec.CommandContext(ctx, claudeBin, claudecode.MCPAddArgs(st.binary, st.home)...).CombinedOutput()
		if err != nil {
			return true, fmt.Errorf("claude mcp add failed: %v: %s", err, strings.TrimSpace(string(out)))
		}
		fmt.Fprintln(w, "mcp: registered anamnesis (user scope)")
		return true, nil
	}
	plan, err := claudecode.PlanMCPConfig(claudecode.ClaudeJSON(st.userHome), st.binary, st.home, install)
	if err != nil {
		return false, err
	}
	if err := plan.Apply(); err != nil {
		return false, err
	}
	switch {
	case install && plan.Changed:
		fmt.Fprintf(w, "mcp: registered anamnesis in %s\n", plan.Path)
	case install:
		fmt.Fprintf(w, "mcp: anamnesis already registered in %s\n", plan.Path)
	case plan.Changed:
		fmt.Fprintf(w, "mcp: removed anamnesis from %s\n", plan.Path)
	default:
		fmt.Fprintf(w, "mcp: anamnesis was not registered in %s\n", plan.Path)
	}
	return plan.Changed, nil
}

func runUninstall(c *cli.Context) error {
	st, err := resolveSetup(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	plan, err := claudecode.PlanSettings(st.claudeDir, claudecode.Setup{Binary: st.binary, Home: st.home}, false)
	if err != nil {
		return fmt.Errorf("refusing to run: %w", err)
	}
	plugin, err := claudecode.FindPlugin(st.claudeDir)
	if err != nil {
		return fmt.Errorf("refusing to run: %w", err)
	}
	claudeBin, _ := exec.LookPath("claude")
	if c.Bool("print") {
		fmt.Fprintf(w, "would remove anamnesis hooks from %s (changes: %v), the MCP registration, and the git hooks in %s; notes stay in %s\n",
			plan.Path, plan.Changed, filepath.Join(st.home, note.PortableDir), st.home)
		if plugin != "" {
			fmt.Fprintf(w, "would uninstall the Claude Code plugin %s (claude %s)\n", plugin, strings.Join(pluginUninstallArgs(plugin), " "))
		}
		return nil
	}
	if err := plan.Apply(); err != nil {
		return err
	}
	if plan.Changed {
		fmt.Fprintf(w, "claude: anamnesis hooks removed from %s\n", plan.Path)
	} else {
		fmt.Fprintf(w, "claude: no anamnesis hooks in %s\n", plan.Path)
	}
	if _, err := registerMCP(c.Context, w, st, claudeBin, false); err != nil {
		fmt.Fprintf(w, "mcp: %v\n", err)
	}
	if plugin != "" {
		uninstallPlugin(c.Context, w, claudeBin, plugin)
	}
	repo := filepath.Join(st.home, note.PortableDir)
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		if _, err := githooks.Uninstall(repo); err != nil {
			return fmt.Errorf("git hooks: %w", err)
		}
		fmt.Fprintln(w, "git hooks: removed")
	}
	fmt.Fprintf(w, "uninstall: done. Your notes are still in %s.\n", st.home)
	return nil
}
