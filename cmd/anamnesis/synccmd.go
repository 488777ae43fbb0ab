package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/hooks"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:  "sync",
		Usage: "commit local notes, exchange them with the remote, merge, reindex what changed",
		Description: "The remote comes from ANAMNESIS_GIT_REMOTE or config.json \"remote\": a path to a bare\n" +
			"repository, file://, ssh:// or user@host:path (ssh agent or ~/.ssh keys, known_hosts checked,\n" +
			"never a prompt), or http(s)://. Without a remote, notes are committed locally.\n" +
			"Edits of the same note on two machines are merged; when both changed the same lines the\n" +
			"newer version stays and the other is kept as <note>.conflict-<hash>.md (see `anamnesis status`).",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "give up on a fetch or push after this long"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "wait this long for another sync to finish"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, s *anamnesis.Store) error {
				rep, err := s.Sync(ctx, anamnesis.SyncOptions{Timeout: c.Duration("timeout"), LockWait: c.Duration("wait")})
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
				fmt.Fprintf(w, "sync: committed=%v fetched=%v merged=%v pushed=%v head=%s\n", rep.Committed, rep.Fetched, rep.Merged, rep.Pushed, head)
				fmt.Fprintf(w, "sync: reindexed %d added, %d updated, %d deleted\n", rep.Reindexed.Added, rep.Reindexed.Updated, rep.Reindexed.Deleted)
				for _, cp := range rep.ConflictCopies {
					fmt.Fprintf(w, "sync: conflict copy %s (both versions kept; merge them and delete the copy)\n", cp)
				}
				return nil
			})
		},
	}
}

func hooksCommand() *cli.Command {
	run := func(name string, fn func(repo, bin, home string) ([]hooks.State, error)) *cli.Command {
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
			run("install", func(repo, bin, home string) ([]hooks.State, error) { return hooks.Install(repo, bin, home) }),
			run("uninstall", func(repo, _, _ string) ([]hooks.State, error) { return hooks.Uninstall(repo) }),
			run("status", func(repo, _, _ string) ([]hooks.State, error) { return hooks.Status(repo) }),
		},
	}
}

func hookCommand() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "entry point for git hooks (post-merge, post-checkout, post-rewrite, post-commit)",
		ArgsUsage: "NAME [ARGS...]",
		Description: "Reconciles the index with memory/ after git changed it. Arguments git passes are only\n" +
			"hints; the reconcile is idempotent. Never fails: problems are one line on stderr, exit 0.",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			name := c.Args().First()
			if !isGitHook(name) {
				return usagef("unknown hook %q (git hooks: %s)", name, strings.Join(hooks.GitHooks, ", "))
			}
			// post-rewrite gets old/new pairs on stdin; drain it so git never blocks.
			if name == "post-rewrite" {
				readAllLimited(c.App.Reader, "standard input")
			}
			s, err := openStore(c)
			if err != nil {
				fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err)
				return nil
			}
			defer s.Close()
			if _, err := s.Reconcile(c.Context); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "anamnesis hook %s: %v\n", name, err)
			}
			return nil
		},
	}
}

func isGitHook(name string) bool {
	for _, h := range hooks.GitHooks {
		if h == name {
			return true
		}
	}
	return false
}
