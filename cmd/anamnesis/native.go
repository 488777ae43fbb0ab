package main

import (
	"context"
	"fmt"
	"io"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/urfave/cli/v2"
)

func nativeCommand() *cli.Command {
	return &cli.Command{
		Name:  "native",
		Usage: "Claude Code's own auto memory (~/.claude/projects/*/memory)",
		Subcommands: []*cli.Command{{
			Name:  "import",
			Usage: "import this machine's Claude Code auto memory into memory/ now (sync does it before each sync)",
			Description: "Each memory file under $CLAUDE_CONFIG_DIR (else ~/.claude)/projects/*/memory, and in the\n" +
				"directory settings.json's autoMemoryDirectory names, becomes a note of its project (keyed like\n" +
				"the hooks key it, from the transcripts' working directory), tagged native and native:<type>.\n" +
				"Only files whose size or mtime changed are read; an edited file updates its note and a deleted\n" +
				"one removes it. \"native_import\": false in config.json turns it off.",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usagef("native import takes no arguments")
				}
				return withStore(c, forFirstWrite, func(ctx context.Context, s *anamnesis.Store) error {
					rep, err := s.ImportNative(ctx, anamnesis.NativeOptions{})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c.App.Writer, rep)
					}
					printNative(c.App.Writer, "native", rep, true)
					return nil
				})
			},
		}, {
			Name:  "export",
			Usage: "write the memories your other machines' Claude recorded for a project into this machine's Claude Code memory",
			Description: "For a user who wants them as Claude Code's own files (by default they reach Claude through the\n" +
				"SessionStart hook, and nothing is written into ~/.claude). --project DIR names the project (a\n" +
				"directory of it); its Claude Code memory directory gets one topic file per memory and a line for\n" +
				"each in a marked section of MEMORY.md, within Claude Code's limits (200 lines, 25 KB). A file\n" +
				"Claude wrote is never overwritten; exports whose note is gone are removed. The import never\n" +
				"takes an exported file for this machine's own memory.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "project", Usage: "a directory of the project (default: the current directory)"},
				&cli.BoolFlag{Name: "print", Usage: "show what would be written, write nothing"},
				jsonFlag(),
			},
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usagef("native export takes no arguments; name the project with --project DIR")
				}
				dir := c.String("project")
				if dir == "" {
					dir = "."
				}
				return withStore(c, forCommand, func(ctx context.Context, s *anamnesis.Store) error {
					rep, err := s.ExportNative(ctx, anamnesis.ExportOptions{Dir: dir, DryRun: c.Bool("print")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c.App.Writer, rep)
					}
					w := c.App.Writer
					verb := "wrote"
					if rep.DryRun {
						verb = "would write"
					}
					fmt.Fprintf(w, "native export: project %s, %s from other machines; %s %s in %s\n", rep.Project,
						textfmt.Count(rep.Available, "memory", "memories"), verb, textfmt.Count(len(rep.Written), "file", "files"), rep.MemoryDir)
					for _, p := range rep.Kept {
						fmt.Fprintf(w, "native export: left %s alone (Claude Code wrote it)\n", p)
					}
					for _, p := range rep.Removed {
						fmt.Fprintf(w, "native export: removed %s (its note is gone)\n", p)
					}
					if n := len(rep.LeftOut); n > 0 {
						fmt.Fprintf(w, "native export: %s left out: MEMORY.md is at Claude Code's limit (200 lines, 25 KB)\n", textfmt.Count(n, "memory", "memories"))
					}
					return nil
				})
			},
		}},
	}
}

// printNative prints what an import did; quiet-when-idle (sync) prints
// nothing for an import that changed and skipped nothing.
func printNative(w io.Writer, prefix string, rep anamnesis.NativeReport, always bool) {
	if rep.Off {
		if always {
			fmt.Fprintf(w, "%s: off (\"native_import\": false in config.json)\n", prefix)
		}
		return
	}
	if always || rep.Changed() || len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "%s: %s in %s (%d read): %d imported, %d updated, %d removed\n", prefix,
			textfmt.Count(rep.Files, "memory file", "memory files"), textfmt.Count(rep.Dirs, "directory", "directories"), rep.Read,
			len(rep.Imported), len(rep.Updated), len(rep.Removed))
	}
	for _, f := range rep.Skipped {
		fmt.Fprintf(w, "%s: skipped %s: %s\n", prefix, f.Path, f.Error)
	}
}
