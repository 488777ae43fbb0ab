package main

import (
	"context"
	"fmt"
	"io"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the store and explain anything that needs attention",
		Description: "Checks the note trees, the index (SQLite integrity check included), note files that cannot be indexed, conflict copies,\n" +
			"the sync lock, git lock files left by a killed git, the remote, the git and Claude Code hooks\n" +
			"and the tailnet. Each finding says how to fix it. Exit code 1 when something is broken.\n" +
			"--fix repairs what is safe to repair without asking: it removes links inside the store (never what they\n" +
			"point to) and recreates the directories, removes stale git lock files and rebuilds the index from the\n" +
			"note files when it is damaged or its search postings disagree with FTS5.",
		Flags: []cli.Flag{jsonFlag(), &cli.BoolFlag{Name: "fix", Usage: "remove links inside the store and git lock files left by a killed git process, rebuild a damaged index or one whose postings disagree with FTS5, then check"}},
		Action: func(c *cli.Context) error {
			// Links go first, before the store is opened: a linked
			// index.db makes opening refuse.
			links, err := fixLinksFirst(c)
			if err != nil {
				return err
			}
			return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
				var fix anamnesis.FixReport
				if c.Bool("fix") {
					if fix, err = runFix(ctx, c, s, links); err != nil {
						return err
					}
				}
				inst, err := installFor(envOf(c))
				if err != nil {
					inst.Problem = err.Error()
				}
				checks := s.Doctor(ctx, inst)
				if c.Bool("json") {
					if err := printDoctorJSON(c, checks, fix); err != nil {
						return err
					}
				} else {
					printChecks(c.App.Writer, checks)
				}
				for _, ch := range checks {
					if ch.State == anamnesis.CheckProblem {
						return cli.Exit("", 1)
					}
				}
				return nil
			})
		},
	}
}

// fixLinksFirst is doctor --fix's first step: the links inside the store
// removed before it is opened.
func fixLinksFirst(c *cli.Context) (anamnesis.LinkFixReport, error) {
	if !c.Bool("fix") {
		return anamnesis.LinkFixReport{}, nil
	}
	home, err := anamnesis.ResolveHome(c.String("home"))
	if err != nil || !anamnesis.IsStore(home) {
		return anamnesis.LinkFixReport{}, err
	}
	return anamnesis.FixLinks(c.Context, home)
}

// runFix is the rest of doctor --fix, on the open store: links found
// since, stale git locks, a damaged index; said as it is done, unless
// the output is JSON.
func runFix(ctx context.Context, c *cli.Context, s *anamnesis.Store, links anamnesis.LinkFixReport) (anamnesis.FixReport, error) {
	fix, err := s.Fix(ctx)
	if err != nil {
		return fix, err
	}
	fix.Links = mergeLinkFixes(links, fix.Links)
	if c.Bool("json") {
		return fix, nil
	}
	printLinkFixes(c, fix.Links)
	for _, p := range fix.Removed {
		fmt.Fprintf(c.App.Writer, "removed stale git lock %s\n", p)
	}
	if fix.RebuiltIndex {
		fmt.Fprintf(c.App.Writer, "rebuilt the index from the note files (%s)\n", fix.Reason)
	}
	return fix, nil
}

// printDoctorJSON is doctor --json: the checks, and with --fix what was
// repaired.
func printDoctorJSON(c *cli.Context, checks []anamnesis.Check, fix anamnesis.FixReport) error {
	report := struct {
		Checks []anamnesis.Check `json:"checks"`
		*anamnesis.FixReport
	}{Checks: checks}
	if c.Bool("fix") {
		report.FixReport = &fix
	}
	return printJSON(c.App.Writer, report)
}

// printChecks prints each check: its state, name and detail, then its
// items and the fix, indented.
func printChecks(w io.Writer, checks []anamnesis.Check) {
	for _, ch := range checks {
		fmt.Fprintf(w, "%-7s %s: %s\n", ch.State+":", ch.Name, ch.Detail)
		for _, l := range ch.Items {
			fmt.Fprintf(w, "          %s\n", l)
		}
		if ch.Fix != "" {
			fmt.Fprintf(w, "          fix: %s\n", ch.Fix)
		}
	}
}

// mergeLinkFixes joins what FixLinks did before the store was opened and
// what Fix found after.
func mergeLinkFixes(a, b anamnesis.LinkFixReport) anamnesis.LinkFixReport {
	return anamnesis.LinkFixReport{
		Removed:      append(append([]string{}, a.Removed...), b.Removed...),
		Recreated:    append(append([]string{}, a.Recreated...), b.Recreated...),
		Stranded:     append(append([]string{}, a.Stranded...), b.Stranded...),
		CopiedConfig: a.CopiedConfig || b.CopiedConfig,
	}
}

func printLinkFixes(c *cli.Context, r anamnesis.LinkFixReport) {
	w := c.App.Writer
	for _, l := range r.Removed {
		fmt.Fprintf(w, "removed link %s (what it points to is untouched)\n", l)
	}
	for _, d := range r.Recreated {
		fmt.Fprintf(w, "recreated directory %s\n", d)
	}
	if r.CopiedConfig {
		fmt.Fprintf(w, "config.json is now a regular file with the content its link pointed to\n")
	}
	for _, p := range r.Stranded {
		fmt.Fprintf(w, "note left where a removed link pointed: %s (if it is yours, move it into memory/<type>/ and run `anamnesis reindex`)\n", p)
	}
}
