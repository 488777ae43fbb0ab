package main

import (
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's flags that follow its arguments in front of
// them. urfave/cli v2 stops parsing flags at the first argument, so
// `anamnesis search sqlite locks -k 3 --json` would otherwise search for
// "-k 3 --json" and print text. Only tokens naming one of the command's
// own flags move (with their value when the flag takes one), and global
// flags such as --home given after the command move before it; anything
// after "--" stays an argument, so a query can still begin with a dash.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmdAt := pastFlags(app.Flags, args, 1) // past the program and the global flags
	cmd, i := leafCommand(app.Commands, args, cmdAt)
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	global, flags, rest, help := splitFlags(app, cmd, args[i:])
	if help {
		// urfave adds --help to every command, and with arguments after
		// it looks for a help topic: help wins, alone.
		return append(append([]string{}, args[:i]...), "--help")
	}
	out := append([]string{}, args[:cmdAt]...)
	out = append(out, global...)
	out = append(out, args[cmdAt:i]...)
	out = append(out, flags...)
	return append(out, rest...)
}

// pastFlags is the index of the first of args from i on that is not one
// of flags (or a flag's value), nor "--".
func pastFlags(flags []cli.Flag, args []string, i int) int {
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		name, hasValue := flagName(args[i])
		if f := findFlag(flags, name); f != nil && !hasValue && takesValue(f) {
			i++
		}
		i++
	}
	return i
}

// leafCommand follows the command names in args from i on through cmds:
// the last command named (nil for none) and the index past its name.
func leafCommand(cmds []*cli.Command, args []string, i int) (cmd *cli.Command, end int) {
	for ; i < len(args); i++ {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		cmd, cmds = c, c.Subcommands
	}
	return cmd, i
}

// splitFlags sorts the words after cmd's name: its own flags (with their
// values), global flags given after it, and the rest (arguments, unknown
// flags, and everything from "--" on). help reports a --help or -h cmd
// does not define.
func splitFlags(app *cli.App, cmd *cli.Command, words []string) (global, flags, rest []string, help bool) {
	for j := 0; j < len(words); j++ {
		a := words[j]
		if a == "--" {
			return global, flags, append(rest, words[j:]...), false
		}
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		name, hasValue := flagName(a)
		dst, f := &flags, findFlag(cmd.Flags, name)
		if f == nil {
			if name == "help" || name == "h" {
				return nil, nil, nil, true
			}
			if f = findFlag(app.Flags, name); f == nil {
				rest = append(rest, a)
				continue
			}
			dst = &global // --home after the command name
		}
		*dst = append(*dst, a)
		if !hasValue && takesValue(f) && j+1 < len(words) {
			j++
			*dst = append(*dst, words[j])
		}
	}
	return global, flags, rest, false
}

// flagName returns the name in -n, --name or --name=value.
func flagName(a string) (string, bool) {
	a = strings.TrimLeft(a, "-")
	if k, _, ok := strings.Cut(a, "="); ok {
		return k, true
	}
	return a, false
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	if name == "" {
		return nil
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return true
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func filterFlags(withK bool) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "project", Usage: "only notes of this project"},
		&cli.StringFlag{Name: "type", Usage: "only notes of this type (procedural, semantic, episodic)"},
		&cli.StringFlag{Name: "scope", Usage: "only portable or machine-local notes (default: both)"},
		jsonFlag(),
	}
	if withK {
		fs = append(fs, &cli.IntFlag{Name: "k", Aliases: []string{"n"}, Value: anamnesis.DefaultK, Usage: "how many notes to return"})
	} else {
		fs = append(fs, &cli.IntFlag{Name: "limit", Usage: "at most this many notes (default: all)"})
	}
	return fs
}

func filterFrom(c *cli.Context, limit int) anamnesis.Filter {
	return anamnesis.Filter{Project: c.String("project"), Type: c.String("type"), Scope: c.String("scope"), Limit: limit}
}

// jsonFlag, decayFlag and socketFlag return a new flag each time:
// urfave/cli writes to a flag when it parses with it, so a flag shared by
// apps running at once (in-process tests) would be a data race.
func jsonFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON"}
}

const (
	tailscaleSocketFlag = "tailscale-socket"
	tailscaleSocketEnv  = "ANAMNESIS_TAILSCALE_SOCKET"
)

// atLeastOne refuses an integer flag that means nothing below 1 (a count
// of notes or queries) when it is given at all.
func atLeastOne(c *cli.Context, name, what string) error {
	if c.IsSet(name) && c.Int(name) < 1 {
		return usagef("-%s%s must be at least 1, got %d%s", dashes(name), name, c.Int(name), what)
	}
	return nil
}

// positiveDuration refuses a duration flag of zero or less (the sync
// layer would quietly read it as its default).
func positiveDuration(c *cli.Context, name string) error {
	if d := c.Duration(name); d <= 0 {
		return usagef("--%s must be more than 0, got %s", name, d)
	}
	return nil
}

// portFlag refuses a port no TCP address can have.
func portFlag(c *cli.Context) error {
	if p := c.Int("port"); p < 1 || p > 65535 {
		return usagef("--port must be between 1 and 65535, got %d", p)
	}
	return nil
}

func dashes(name string) string {
	if len(name) == 1 {
		return ""
	}
	return "-"
}

// decayFlagName is decayFlag's name, for reading it (decayOption).
const decayFlagName = "decay-days"

// decayFlag() sets recency decay for one run of search or eval.
func decayFlag() *cli.Float64Flag {
	return &cli.Float64Flag{Name: decayFlagName, Usage: "re-rank the best matches by score x exp(-age/`DAYS`); 0 turns decay off (default: recall_decay_days in config.json, else off)"}
}
