package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/urfave/cli/v2"
)

func hooksCommand() *cli.Command {
	run := func(name string, fn func(repo, bin, home string) ([]githooks.State, error)) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: name + " the git hooks in memory/",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(c *cli.Context) error {
				home, err := anamnesis.ResolveHome(c.String("home"))
				if err != nil {
					return err
				}
				repo := filepath.Join(home, note.PortableDir)
				if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
					// Create the store and its repository first.
					s, err := openStore(c, forCommand)
					if err != nil {
						return err
					}
					err = s.EnsureRepo(c.Context)
					s.Close()
					if err != nil {
						return err
					}
				}
				bin, err := envOf(c).executable()
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
