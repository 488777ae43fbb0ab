package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's flags that follow its arguments in front of
// them. urfave/cli v2 stops parsing flags at the first argument, so
// `anamnesis search sqlite locks -k 3 --json` would otherwise search for
// "-k 3 --json" and print text. Only tokens naming one of the command's
// own flags move (with their value when the flag takes one); anything
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
	var flags, rest []string
	for j := i; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			rest = append(rest, args[j:]...)
			break
		}
		name, hasValue := flagName(a)
		f := findFlag(cmd.Flags, name)
		if !strings.HasPrefix(a, "-") || f == nil {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		if !hasValue && takesValue(f) && j+1 < len(args) {
			j++
			flags = append(flags, args[j])
		}
	}
	out := append([]string{}, args[:i]...)
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
