package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:  "sync",
		Usage: "commit local notes, exchange them with the remote, merge, reindex what changed",
		Description: "The remote comes from ANAMNESIS_GIT_REMOTE or config.json \"remote\": a path to a bare\n" +
			"repository, file://, ssh:// or user@host:path (~/.ssh/config applied, agent keys and key files\n" +
			"offered, known_hosts checked, never a prompt), or http(s)://. Without a remote, notes are\n" +
			"committed locally. The hub's main is synced; a hub without main (created with master) is synced\n" +
			"on its default branch.\n" +
			"Edits of the same note on two machines are merged; when both changed the same lines the\n" +
			"newer version stays and the other is kept as <note>.conflict-<hash>.md (see `anamnesis status`).",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up on a fetch or push when no data moved for this long (a long transfer that keeps moving is fine)"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "wait this long for another sync to finish"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			for _, f := range []string{"timeout", "wait"} {
				if err := positiveDuration(c, f); err != nil {
					return err
				}
			}
			// A first sync into an empty directory sets up the store, like
			// a first write: that is how a second machine starts.
			return withStoreFor(c, true, func(ctx context.Context, s *anamnesis.Store) error {
				rep, err := s.Sync(ctx, anamnesis.SyncOptions{Timeout: c.Duration("timeout"), LockWait: c.Duration("wait")})
				for _, warning := range rep.Warnings {
					fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", warning)
				}
				if c.Bool("json") && err == nil {
					return printJSON(c.App.Writer, rep)
				}
				if err != nil {
					return err
				}
				w := c.App.Writer
				remote := rep.Remote
				if remote == "" {
					remote = "none (committed locally; set ANAMNESIS_GIT_REMOTE or config.json remote)"
				}
				head := rep.Head
				if len(head) > 12 {
					head = head[:12]
				}
				fmt.Fprintf(w, "sync: remote %s\n", remote)
				if rep.BranchNote != "" {
					fmt.Fprintf(w, "sync: %s (this machine's branch stays main)\n", rep.BranchNote)
				}
				fmt.Fprintf(w, "sync: committed=%v fetched=%v merged=%v pushed=%v head=%s\n", rep.Committed, rep.Fetched, rep.Merged, rep.Pushed, head)
				fmt.Fprintf(w, "sync: reindexed %d added, %d updated, %d deleted\n", rep.Reindexed.Added, rep.Reindexed.Updated, rep.Reindexed.Deleted)
				for _, p := range rep.Peers {
					if p.Error != "" {
						fmt.Fprintf(w, "sync: peer %s: %s\n", p.URL, p.Error)
					} else {
						fmt.Fprintf(w, "sync: peer %s: fetched=%v merged=%v\n", p.URL, p.Fetched, p.Merged)
					}
				}
				for _, u := range rep.Unreachable {
					fmt.Fprintf(w, "sync: peer not reachable: %s\n", u)
				}
				for _, cp := range rep.ConflictCopies {
					fmt.Fprintf(w, "sync: conflict copy %s (both versions kept; merge them and delete the copy)\n", cp)
				}
				return nil
			})
		},
	}
}

func hooksCommand() *cli.Command {
	run := func(name string, fn func(repo, bin, home string) ([]githooks.State, error)) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: name + " the git hooks in memory/",
			Flags: []cli.Flag{jsonFlag},
			Action: func(c *cli.Context) error {
				home, err := anamnesis.ResolveHome(c.String("home"))
				if err != nil {
					return err
				}
				repo := filepath.Join(home, note.PortableDir)
				if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
					// Create the store and its repository first.
					s, err := openStore(c)
					if err != nil {
						return err
					}
					err = s.EnsureRepo()
					s.Close()
					if err != nil {
						return err
					}
				}
				bin, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find the anamnesis binary: %w", err)
				}
				if p, err := filepath.EvalSymlinks(bin); err == nil {
					bin = p
				}
				states, err := fn(repo, bin, home)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, map[string]any{"hooks": states})
				}
				for _, st := range states {
					line := fmt.Sprintf("%-14s %-10s %s", st.Hook, st.Status, st.Path)
					if st.Chained != "" {
						line += " (then runs " + st.Chained + ")"
					}
					fmt.Fprintln(c.App.Writer, line)
				}
				return nil
			},
		}
	}
	return &cli.Command{
		Name:  "hooks",
		Usage: "install, remove or inspect the git hooks that keep the index current when you use git by hand",
		Description: "post-merge, post-checkout, post-rewrite and post-commit call `anamnesis hook NAME`, which\n" +
			"reconciles the index. A hook already there is kept as <hook>.anamnesis-prev and still runs;\n" +
			"core.hooksPath is honoured. Installing twice changes nothing.",
		Subcommands: []*cli.Command{
			run("install", func(repo, bin, home string) ([]githooks.State, error) { return githooks.Install(repo, bin, home) }),
			run("uninstall", func(repo, _, _ string) ([]githooks.State, error) { return githooks.Uninstall(repo) }),
			run("status", func(repo, _, _ string) ([]githooks.State, error) { return githooks.Status(repo) }),
		},
	}
}

func hookCommand() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "entry point for Claude Code hooks and git hooks",
		ArgsUsage: "NAME [ARGS...]",
		Description: "Claude Code (JSON on stdin): session-start injects notes of this project,\n" +
			"prompt adds notes matching the prompt, session-end and pre-compact capture the session\n" +
			"as an episodic note. git: post-merge, post-checkout, post-rewrite, post-commit reconcile\n" +
			"the index. A hook never breaks the session or the git command: problems are one line on\n" +
			"stderr, nothing on stdout, exit 0.",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			name := c.Args().First()
			switch {
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
	s, err := openHookStore(c)
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

// openHookStore opens the store with a short lock wait: a hook must not
// outlive Claude Code's budget because another process holds the index,
// nor because the index needs a rebuild (that is started in the
// background).
func openHookStore(c *cli.Context) (*anamnesis.Store, error) {
	home, err := anamnesis.ResolveHome(c.String("home"))
	if err != nil {
		return nil, err
	}
	machineID, err := machineIDOption(c)
	if err != nil {
		return nil, err
	}
	s, err := anamnesis.Open(c.Context, home, anamnesis.Options{
		Tailnet:         tailscaled{},
		MachineID:       machineID,
		Remote:          os.Getenv("ANAMNESIS_GIT_REMOTE"),
		TailscaleSocket: tailscaleSocketOption(c),
		BusyTimeout:     time.Second,
		Notice:          func(s string) { fmt.Fprintf(c.App.ErrWriter, "anamnesis: %s\n", s) },
		DeferRebuild:    true,
	})
	if errors.Is(err, anamnesis.ErrNeedsRebuild) {
		// A rebuild takes seconds on a large store: it runs on its own and
		// this hook goes without memory once.
		return nil, startBackgroundReindex(home, err)
	}
	return s, err
}

func runClaudeHook(c *cli.Context, name string) {
	defer failOpen(c, name)
	fail := func(err error) { fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err) }
	in, err := claudecode.ReadInput(c.App.Reader)
	if err != nil {
		fail(err)
		return
	}
	s, err := openHookStore(c)
	if err != nil {
		fail(err)
		return
	}
	defer s.Close()
	userHome, _ := os.UserHomeDir()
	env := claudecode.Env{Memory: s, StateDir: filepath.Join(s.Home(), "state"), UserHome: userHome}
	res, err := claudecode.Handle(c.Context, name, env, in)
	if errors.Is(err, anamnesis.ErrNeedsRebuild) {
		// Damage met by a hook: the Store marked the index for a rebuild,
		// which takes too long for the hook's budget, so it runs in the
		// background (`reindex` rebuilds when it opens the store).
		err = startBackgroundReindex(s.Home(), err)
	}
	if err != nil {
		fail(err)
		return
	}
	if res.Report != "" {
		fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %s\n", name, res.Report)
	}
	if res.WantsSync && s.Remote() != "" {
		spawnSync(c, s)
	}
	if res.Output != "" {
		fmt.Fprintln(c.App.Writer, res.Output)
	}
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
