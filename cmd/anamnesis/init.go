package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/setup"
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
			"nothing; --json prints the plan (and with --yes, each step done) as one JSON object.\n" +
			"`anamnesis uninstall` removes exactly what init added (notes are kept), and the\n" +
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
			jsonFlag(),
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

// resolveMachine reads what init and uninstall act on: the store options
// (storeOptions), config.json, --remote/--local-only, this binary,
// Claude Code's directory and what PATH and the environment hold.
func resolveMachine(c *cli.Context) (setup.Machine, error) {
	var m setup.Machine
	home, o, err := storeOptions(c, forCommand)
	if err != nil {
		return m, err
	}
	m.Home = home
	cfg, err := anamnesis.LoadConfig(home)
	if err != nil {
		return m, err
	}
	if m.MachineID, err = anamnesis.ResolveMachineID(o.MachineID, cfg); err != nil {
		return m, err
	}
	m.Remote = firstSet(o.Remote, cfg.Remote)
	if c.IsSet("remote") {
		m.Remote = c.String("remote")
	}
	if c.Bool("local-only") {
		m.Remote = ""
	}
	m.TailscaleSocket = firstSet(o.TailscaleSocket, cfg.TailscaleSocket)
	inst, err := installFor(envOf(c))
	if err != nil {
		return m, err
	}
	m.Binary, m.ClaudeDir, m.ClaudeJSON = inst.Binary, inst.ClaudeDir, inst.ClaudeJSON
	m.Claude, _ = exec.LookPath("claude")
	if onPath, err := exec.LookPath("anamnesis"); err == nil {
		m.OnPath = resolvedPath(onPath)
	}
	if h, err := anamnesis.ResolveHome(envOf(c).getenv("ANAMNESIS_HOME")); err == nil {
		m.PluginHome = h
	}
	return m, nil
}

// firstSet is the first of vs that is not "".
func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// resolvedPath is p with symlinks resolved, or p when that fails.
func resolvedPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// installFor is where this binary's hooks belong: its own resolved path
// and Claude Code's directory ($CLAUDE_CONFIG_DIR, else ~/.claude).
func installFor(env procEnv) (anamnesis.Install, error) {
	var inst anamnesis.Install
	bin, err := env.executable()
	if err != nil {
		return inst, fmt.Errorf("find the anamnesis binary: %w", err)
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return inst, fmt.Errorf("find your home directory: %w", err)
	}
	return anamnesis.Install{Binary: resolvedPath(bin), ClaudeDir: claudecode.ClaudeDir(userHome), ClaudeJSON: claudecode.ClaudeJSON(userHome)}, nil
}

// initChoices turns init's flags into what it sets up.
func initChoices(c *cli.Context) (setup.Choices, error) {
	ch := setup.Choices{Hooks: !c.Bool("no-claude"), MCP: !c.Bool("no-mcp"), GitHooks: !c.Bool("no-git-hooks"), Sync: !c.Bool("no-sync")}
	if c.IsSet("remote") && c.Bool("local-only") {
		return ch, usagef("--remote and --local-only exclude each other")
	}
	if c.Bool("json") && !c.Bool("print") && !c.Bool("yes") {
		return ch, usagef("--json needs --print or --yes: init asks before it changes anything")
	}
	if c.IsSet("embedder") {
		ch.SetEmbedder = true
		var err error
		if ch.Embedder, err = anamnesis.ParseEmbedderSpec(c.String("embedder")); err != nil {
			return ch, usagef("--embedder: %v", err)
		}
	}
	return ch, nil
}

// initStoreOptions is how init opens the store it creates: the first
// sync can take a while, so it shows progress.
func initStoreOptions(c *cli.Context) anamnesis.Options {
	progress := newProgressLine(c.App.ErrWriter)
	return anamnesis.Options{Tailnet: tailscaled{}, NewEmbedder: newEmbedder, Progress: progress.update,
		Notice: func(m string) {
			progress.clear()
			fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", m)
		}}
}

func runInit(c *cli.Context) error {
	ch, err := initChoices(c)
	if err != nil {
		return err
	}
	m, err := resolveMachine(c)
	if err != nil {
		return err
	}
	plan, err := setup.PlanInit(c.Context, m, ch, initStoreOptions(c))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return initJSON(c, plan)
	}
	w := c.App.Writer
	fmt.Fprint(w, plan)
	if c.Bool("print") {
		fmt.Fprintln(w, "(--print: nothing was written)")
		return nil
	}
	if !c.Bool("yes") {
		if err := confirmInit(c); err != nil {
			return err
		}
	}
	res, err := plan.Apply(c.Context, func(s setup.Step) { fmt.Fprintln(w, s) })
	if err != nil {
		return err
	}
	if res.Embed { // vectors for what the store holds, in the background
		spawnEmbedIn(c, m.Home)
	}
	fmt.Fprintln(w, res)
	return nil
}

// confirmInit asks before init changes anything. Enter alone means yes;
// end of input (stdin closed, /dev/null, a script that gave no answer)
// means no: init changes files outside the store, which nobody agreed
// to.
func confirmInit(c *cli.Context) error {
	w := c.App.Writer
	fmt.Fprint(w, "Proceed? [Y/n] ")
	ans, err := bufio.NewReader(c.App.Reader).ReadString('\n')
	if err != nil && ans == "" {
		fmt.Fprintln(w)
		return cli.Exit("init: nothing done: no answer on standard input (pass --yes to set up without asking)", 1)
	}
	if a := strings.ToLower(strings.TrimSpace(ans)); a != "" && a != "y" && a != "yes" {
		return cli.Exit("init: nothing done", 1)
	}
	return nil
}

// initJSON is init --json: the plan, and with --yes the steps done, as
// one object (printed even when a step fails, so a script sees how far
// init got).
func initJSON(c *cli.Context, plan *setup.InitPlan) error {
	out := struct {
		Plan     *setup.InitPlan `json:"plan"`
		Steps    []setup.Step    `json:"steps,omitempty"`
		Activate []string        `json:"activate,omitempty"`
	}{Plan: plan}
	var err error
	if !c.Bool("print") {
		var res setup.Result
		res, err = plan.Apply(c.Context, func(s setup.Step) { out.Steps = append(out.Steps, s) })
		if err == nil && res.Embed {
			spawnEmbedIn(c, plan.Home)
		}
		out.Activate = res.Activate
	}
	if perr := printJSON(c.App.Writer, out); err == nil {
		err = perr
	}
	return err
}

func runUninstall(c *cli.Context) error {
	m, err := resolveMachine(c)
	if err != nil {
		return err
	}
	plan, err := setup.PlanUninstall(m)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if c.Bool("print") {
		fmt.Fprint(w, plan)
		return nil
	}
	if err := plan.Apply(c.Context, func(s setup.Step) { fmt.Fprintln(w, s) }); err != nil {
		return err
	}
	fmt.Fprintln(w, plan.Done())
	return nil
}
