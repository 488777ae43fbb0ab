package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/urfave/cli/v2"
)

func hookCommand() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "entry point for Claude Code hooks and git hooks",
		ArgsUsage: "NAME [--unless-plugin]",
		Description: "Claude Code (JSON on stdin): session-start injects notes of this project,\n" +
			"prompt adds notes matching the prompt, session-end and pre-compact capture the session\n" +
			"as an episodic note, pre-tool-use (the plugin's) allows the read-only memory tools.\n" +
			"The hooks init writes end with --unless-plugin: they do nothing in a project where the\n" +
			"anamnesis Claude Code plugin is active, whose own hooks run instead.\n" +
			"git: post-merge, post-checkout, post-rewrite, post-commit reconcile\n" +
			"the index. A hook never breaks the session or the git command: problems are one line on\n" +
			"stderr, nothing on stdout, exit 0.",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			name := c.Args().First()
			switch {
			case name == "-h" || name == "--help":
				// Flags are not parsed (a hook's arguments are its own), so
				// help is asked for here.
				return cli.ShowCommandHelp(c.Lineage()[1], "hook")
			case isGitHook(name):
				runGitHook(c, name)
				return nil
			case isClaudeHook(name):
				runClaudeHook(c, name)
				return nil
			}
			return usagef("unknown hook %q (Claude Code: %s; git: %s)", name, strings.Join(claudecode.Events(), ", "), strings.Join(githooks.Names(), ", "))
		},
	}
}

func runGitHook(c *cli.Context, name string) {
	defer failOpen(c, name)
	// post-rewrite gets old/new pairs on stdin; drain it so git never blocks.
	if name == "post-rewrite" {
		readAllLimited(c.App.Reader, "standard input")
	}
	s, err := openStore(c, forHook)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err)
		return
	}
	defer s.Close()
	if _, err := s.Reconcile(c.Context); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err)
	}
}

// failOpen turns a panic into the one stderr line every hook failure gets.
func failOpen(c *cli.Context, name string) {
	if r := recover(); r != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: internal error: %v\n", name, r)
	}
}

func runClaudeHook(c *cli.Context, name string) {
	defer failOpen(c, name)
	fail := func(err error) { fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err) }
	in, run, err := claudeHookInput(c)
	if err != nil {
		fail(err)
	}
	if !run {
		return
	}
	if name == "pre-tool-use" {
		// Decided from the tool's name alone: no store to open, so a tool
		// call waits only for the process start.
		if out := claudecode.PreToolUse(in); out != "" {
			fmt.Fprintln(c.App.Writer, out)
		}
		return
	}
	s, err := openStore(c, forHook)
	if err != nil {
		fail(err)
		return
	}
	defer s.Close()
	synced := keepUp(c, s, name, in)
	userHome, _ := os.UserHomeDir()
	env := claudecode.Env{Memory: s, StateDir: filepath.Join(s.Home(), "state"), UserHome: userHome}
	res, err := claudecode.Handle(c.Context, name, env, in)
	if errors.Is(err, anamnesis.ErrNeedsRebuild) {
		// Damage met by a hook: the Store marked the index for a rebuild,
		// which takes too long for the hook's budget, so it runs in the
		// background (`reindex` rebuilds when it opens the store).
		err = startBackgroundReindex(envOf(c), s.Home(), err)
	}
	if err != nil {
		fail(err)
		return
	}
	if res.Report != "" {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %s\n", name, res.Report)
	}
	if res.WantsSync {
		startAfterHook(c, s, name, in, userHome, synced)
	}
	if res.Output != "" {
		fmt.Fprintln(c.App.Writer, res.Output)
	}
}

// startAfterHook starts the background work a hook's change asks for:
// at session end with auto-consolidation on, a consolidate run (which
// syncs first, sending this note too); else a sync, unless one ran in
// this hook already.
func startAfterHook(c *cli.Context, s *anamnesis.Store, name string, in claudecode.Input, userHome string, synced bool) {
	switch {
	case name == "session-end" && autoConsolidate(envOf(c), s):
		spawnConsolidate(c, s, in, userHome)
	case s.Remote() != "" && !synced:
		spawnSync(c, s)
	}
}

// claudeHookInput reads a Claude Code hook's input; run is false when the
// hook has nothing to do: in a Claude Code run consolidate started as a
// plain model (it must neither see memory nor be captured as a session;
// stdin is drained), or when the hook is init's, marked --unless-plugin,
// and the plugin's own hook does its work.
func claudeHookInput(c *cli.Context) (in claudecode.Input, run bool, err error) {
	if envOf(c).getenv(consolidate.HooksOffEnv) == "1" {
		readAllLimited(c.App.Reader, "standard input")
		return in, false, nil
	}
	if in, err = readHookInput(c.Context, c.App.Reader); err != nil {
		return in, false, err
	}
	if slices.Contains(c.Args().Tail(), claudecode.UnlessPlugin) && pluginRunsHooks(envOf(c), in) {
		return in, false, nil
	}
	return in, true, nil
}

// keepUp brings in what the other machines wrote, when there is a
// remote: at a fresh session start, a sync before the notes are chosen,
// within a budget (synced reports it ran); at a prompt, a throttled sync
// in the background, whose arrivals the next prompt shows, never waited
// for.
func keepUp(c *cli.Context, s *anamnesis.Store, name string, in claudecode.Input) (synced bool) {
	if s.Remote() == "" {
		return false
	}
	switch name {
	case "session-start":
		if !claudecode.StartsFresh(in) {
			return false
		}
		if budget := sessionStartSync(c, s.Config()); budget > 0 {
			syncBeforeInjecting(c.Context, c, s, budget)
			markPromptSync(s.Home(), time.Now())
			return true
		}
	case "prompt":
		if every := promptSyncInterval(c, s.Config()); every > 0 && promptSyncDue(s.Home(), time.Now(), every) {
			spawnSync(c, s)
		}
	}
	return false
}

// readHookInput is claudecode.ReadInput, given up when ctx ends: it reads
// to the end of stdin, and a caller that keeps stdin open would otherwise
// hold the hook past SIGTERM. The abandoned read ends with the process.
func readHookInput(ctx context.Context, r io.Reader) (claudecode.Input, error) {
	type result struct {
		in  claudecode.Input
		err error
	}
	done := make(chan result, 1)
	go func() {
		in, err := claudecode.ReadInput(r)
		done <- result{in, err}
	}()
	select {
	case res := <-done:
		return res.in, res.err
	case <-ctx.Done():
		return claudecode.Input{}, fmt.Errorf("read hook input: %w", ctx.Err())
	}
}

// pluginRunsHooks reports whether the anamnesis plugin is active in the
// session's project (CLAUDE_PROJECT_DIR, which Claude Code sets for hooks,
// else the session's working directory), so that a hook init wrote steps
// aside for the plugin's. Unreadable settings count as no plugin: the
// hook runs, as it did before the plugin existed.
func pluginRunsHooks(env procEnv, in claudecode.Input) bool {
	project := env.getenv("CLAUDE_PROJECT_DIR")
	if project == "" {
		project = in.Cwd
	}
	userHome, _ := os.UserHomeDir()
	id, err := claudecode.PluginActive(claudecode.ClaudeDir(userHome), project)
	return err == nil && id != ""
}

func isClaudeHook(name string) bool {
	for _, h := range claudecode.Events() {
		if h == name {
			return true
		}
	}
	return false
}

func isGitHook(name string) bool {
	for _, h := range githooks.Names() {
		if h == name {
			return true
		}
	}
	return false
}

// autoConsolidate says whether automatic consolidation runs are on
// (ANAMNESIS_REFLECT_AUTO, or reflection.auto in config.json; off by
// default).
func autoConsolidate(env procEnv, s *anamnesis.Store) bool {
	return consolidate.ResolveSettings(env.getenv, s.Config().Reflection()).Auto
}

// spawnConsolidate starts `consolidate --apply` for the session's project,
// detached, never inside the hook's budget. The run skips a project under
// the threshold (5 unreflected session notes) without calling the model,
// and keeps to the daily limits.
func spawnConsolidate(c *cli.Context, s *anamnesis.Store, in claudecode.Input, userHome string) {
	project := claudecode.ProjectKey(in.Cwd, userHome)
	if err := spawnSelf(envOf(c), s.Home(), "consolidate", "--apply", "--project", project); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis: background consolidation not started: %v\n", err)
	}
}
