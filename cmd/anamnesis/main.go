// Command anamnesis is the CLI for cross-machine memory for Claude Code.
// It only parses flags, calls the anamnesis packages and prints; all
// behaviour lives in the packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// usageError marks a mistake in how the command was called (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI and returns the process exit code: 0 success,
// 1 failure, 2 bad usage (including values no note can have).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdout, stderr = &visibleWriter{w: stdout}, &visibleWriter{w: stderr, keepCR: true}
	app := newApp(stdin, stdout, stderr)
	err := app.RunContext(ctx, flagsFirst(app, args))
	if err == nil {
		return 0
	}
	var ue usageError
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ue), errors.Is(err, anamnesis.ErrInvalid):
		fmt.Fprintf(stderr, "anamnesis: %v\n", err)
		return 2
	case errors.As(err, &ec):
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "anamnesis: %s\n", msg)
		}
		return ec.ExitCode()
	default:
		fmt.Fprintf(stderr, "anamnesis: %v\n", err)
		return 1
	}
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "anamnesis",
		Usage:   "cross-machine memory for Claude Code",
		Version: version,
		Description: "Notes are markdown files under the store home (memory/ is synced between your machines,\n" +
			"local/ stays on this one); a local SQLite FTS5 index answers searches in milliseconds.",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "home", Usage: "store directory (default ~/.anamnesis)", EnvVars: []string{"ANAMNESIS_HOME"}},
			&cli.StringFlag{Name: "machine-id", Usage: "name of this machine on notes it writes (default: config.json machine_id, else hostname)", EnvVars: []string{"ANAMNESIS_MACHINE_ID"}},
		},
		Commands: []*cli.Command{
			writeCommand(),
			showCommand(),
			listCommand(),
			searchCommand(),
			statusCommand(),
			doctorCommand(),
			reindexCommand(),
			initCommand(),
			uninstallCommand(),
			syncCommand(),
			hooksCommand(),
			hookCommand(),
			mcpCommand(),
			evalCommand(),
			serveCommand(),
			peersCommand(),
		},
		OnUsageError: func(c *cli.Context, err error, isSubcommand bool) error {
			return usageError{err.Error()}
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("unknown command %q (see anamnesis --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		ExitErrHandler:  func(*cli.Context, error) {}, // run() prints errors and picks the code
		HideHelpCommand: true,
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
	}
	return app
}
