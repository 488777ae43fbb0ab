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
	i := 1 // past the global flags and the command names
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		name, hasValue := flagName(args[i])
		if f := findFlag(app.Flags, name); f != nil && !hasValue && takesValue(f) {
			i++
		}
		i++
	}
	cmdAt := i
	cmds := app.Commands
	var cmd *cli.Command
	for i < len(args) {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		cmd, cmds = c, c.Subcommands
		i++
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	var global, flags, rest []string
	for j := i; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			rest = append(rest, args[j:]...)
			break
		}
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		name, hasValue := flagName(a)
		dst := &flags
		f := findFlag(cmd.Flags, name)
		switch {
		case f == nil && (name == "help" || name == "h"):
			// urfave adds --help to every command, and with arguments
			// after it looks for a help topic: help wins, alone.
			return append(append([]string{}, args[:i]...), "--help")
		case f == nil:
			if f = findFlag(app.Flags, name); f == nil {
				rest = append(rest, a)
				continue
			}
			dst = &global // --home after the command name
		}
		*dst = append(*dst, a)
		if !hasValue && takesValue(f) && j+1 < len(args) {
			j++
			*dst = append(*dst, args[j])
		}
	}
	out := append([]string{}, args[:cmdAt]...)
	out = append(out, global...)
	out = append(out, args[cmdAt:i]...)
	out = append(out, flags...)
	return append(out, rest...)
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
