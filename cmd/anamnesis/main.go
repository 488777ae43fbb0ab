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
	"strings"
	"syscall"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

// version, commit and built may be set at build time with -ldflags
// "-X main.version=... -X main.commit=... -X main.built=..." (make
// release does); otherwise --version reports what the go command recorded
// (buildVersion).
var version, commit, built = "dev", "", ""

// usageError marks a mistake in how the command was called (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	// SIGINT or SIGTERM (Claude Code stopping a hook past its timeout)
	// cancels ctx: commands stop at their next check, release their locks
	// and exit through their defers. A second signal then ends the process
	// at once, as the default handler would have.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	stopProfile := startProfile(os.Getenv(profileEnv), os.Getenv(memProfileEnv))
	// The profiles are this process's: a sync it starts in the background must not write over them.
	os.Unsetenv(profileEnv)
	os.Unsetenv(memProfileEnv)
	var code int
	if logPath := os.Getenv(logEnv); logPath != "" {
		code = runLogged(ctx, logPath)
	} else {
		code = run(ctx, os.Args, osEnv(), os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	stopProfile()
	os.Exit(code)
}

// run executes the CLI with env as its environment and returns the
// process exit code: 0 success, 1 failure, 2 bad usage (including values
// no note can have). Nothing in it reads the process's environment, so
// tests run it in-process, several at once.
func run(ctx context.Context, args []string, env procEnv, stdin io.Reader, stdout, stderr io.Writer) int {
	stdout, stderr = &visibleWriter{w: stdout}, &visibleWriter{w: stderr, keepCR: true}
	app := newApp(env, stdin, stdout, stderr)
	if len(args) > 1 && args[1] == completeCmd {
		printCompletions(app, args[2:], stdout)
		return 0
	}
	args, err := helpArgs(app, args)
	if err == nil {
		err = app.RunContext(ctx, flagsFirst(app, args))
	}
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
		if code := ec.ExitCode(); code == 1 || code == 2 {
			return code
		}
		// urfave/cli's own exits (3 for an unknown help topic) are
		// usage mistakes; the documented codes are 0, 1 and 2 only.
		return 2
	default:
		fmt.Fprintf(stderr, "anamnesis: %v\n", err)
		return 1
	}
}

func newApp(env procEnv, stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "anamnesis",
		Usage:   "cross-machine memory for Claude Code",
		Version: buildVersion(),
		Description: "Notes are markdown files under the store home (memory/ is synced between your machines,\n" +
			"local/ stays on this one); a local SQLite FTS5 index answers searches in milliseconds.",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Metadata:  map[string]any{envKey: env},
		// The environment variables of these flags are read from env
		// (flagsFromEnv), not by urfave/cli's EnvVars, which read the
		// process's; the usage names them as EnvVars would.
		Before: flagsFromEnv,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "home", Usage: "store directory (default ~/.anamnesis) [$ANAMNESIS_HOME]"},
			&cli.StringFlag{Name: "machine-id", Usage: "name of this machine on notes it writes (default: config.json machine_id, else hostname) [$ANAMNESIS_MACHINE_ID]"},
			&cli.StringFlag{Name: tailscaleSocketFlag, Usage: "tailscaled's socket, for status, doctor, init, sync, serve and peers (default: config.json tailscale_socket, else the system's) [$" + tailscaleSocketEnv + "]"},
			// urfave/cli adds --help itself only when no command is
			// named help, and ours is.
			cli.HelpFlag,
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
			nativeCommand(),
			resolveCommand(),
			consolidateCommand(),
			embedCommand(),
			hooksCommand(),
			hookCommand(),
			mcpCommand(),
			evalCommand(),
			serveCommand(),
			peersCommand(),
			uiCommand(),
			completionCommand(),
			helpCommand(),
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
		HideHelpCommand: true,                         // ours is helpCommand (urfave's exits 3 on a bad topic)
	}
	setUsage(app.Commands, app.OnUsageError)
	return app
}

// setUsage gives every command and subcommand the app's usage-error
// handler (urfave/cli otherwise prints the help to stdout and exits 1 for
// a bad flag of a subcommand), and a command that only groups subcommands
// an action that refuses an unknown one (urfave/cli's default takes it
// for a help topic and exits 3).
func setUsage(cmds []*cli.Command, onUsage cli.OnUsageErrorFunc) {
	for _, c := range cmds {
		c.OnUsageError = onUsage
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = func(ctx *cli.Context) error {
				if ctx.Args().Present() {
					var names []string
					for _, sc := range ctx.Command.Subcommands {
						if sc.Name != "help" { // urfave/cli's own
							names = append(names, sc.Name)
						}
					}
					return usagef("unknown command %q for %s (one of: %s)", ctx.Args().First(), ctx.Command.Name, strings.Join(names, ", "))
				}
				return cli.ShowSubcommandHelp(ctx)
			}
		}
		setUsage(c.Subcommands, onUsage)
	}
}

// helpArgs turns `anamnesis [global flags] help [COMMAND [SUBCOMMAND]]`
// into the same line with --help, so both give the same text; a topic
// that names no command is a usage error.
func helpArgs(app *cli.App, args []string) ([]string, error) {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		name, hasValue := flagName(args[i])
		if f := findFlag(app.Flags, name); f != nil && !hasValue && takesValue(f) {
			i++
		}
		i++
	}
	if i >= len(args) || args[i] != "help" {
		return args, nil
	}
	topic := args[i+1:]
	cmds := app.Commands
	for j, name := range topic {
		c := findCommand(cmds, name)
		if c == nil || name == "help" {
			return nil, usagef("no help for %q: not a command (see anamnesis help)", strings.Join(topic[:j+1], " "))
		}
		cmds = c.Subcommands
	}
	out := append([]string{}, args[:i]...)
	out = append(out, topic...)
	return append(out, "--help"), nil
}

// helpCommand lists `help` among the commands; run() rewrites
// `help TOPIC` into `TOPIC --help` before the app sees it (helpArgs), so
// this action is only reached without a topic.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show help for anamnesis or for one command (same as COMMAND --help)",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action:    func(c *cli.Context) error { return cli.ShowAppHelp(c) },
	}
}
