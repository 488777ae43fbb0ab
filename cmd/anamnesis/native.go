package main

import (
	"context"
	"fmt"
	"io"

	"github.com/anamnesis-memory/anamnesis"
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
			Flags: []cli.Flag{jsonFlag},
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
			plural(rep.Files, "memory file", "memory files"), plural(rep.Dirs, "directory", "directories"), rep.Read,
			len(rep.Imported), len(rep.Updated), len(rep.Removed))
	}
	for _, f := range rep.Skipped {
		fmt.Fprintf(w, "%s: skipped %s: %s\n", prefix, f.Path, f.Error)
	}
}
