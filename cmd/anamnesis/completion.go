package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/githooks"
	"github.com/urfave/cli/v2"
)

// completeCmd is the hidden entry point the shell scripts call:
// `anamnesis __complete WORD... CURRENT` prints one candidate a line for
// CURRENT (which may be empty). run() answers it before the app parses
// anything, so the words are never taken for this program's own flags.
const completeCmd = "__complete"

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "Load it in your shell's start-up file:\n" +
			"  bash: source <(anamnesis completion bash)        (~/.bashrc)\n" +
			"  zsh:  source <(anamnesis completion zsh)         (~/.zshrc, after compinit)\n" +
			"  fish: anamnesis completion fish | source         (~/.config/fish/config.fish)\n" +
			"It completes commands, subcommands, flags and hook names by asking anamnesis itself,\n" +
			"so it stays right after an upgrade.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell: bash, zsh or fish")
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usagef("no completion for shell %q (bash, zsh or fish)", c.Args().First())
			}
			_, err := io.WriteString(c.App.Writer, script)
			return err
		},
	}
}

// The scripts pass the words up to the cursor to `anamnesis __complete`
// and offer what it prints; the binary that is completed answers.
var completionScripts = map[string]string{
	"bash": `# anamnesis completion for bash: source <(anamnesis completion bash)
_anamnesis_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _anamnesis_complete anamnesis
`,
	"zsh": `#compdef anamnesis
# anamnesis completion for zsh: source <(anamnesis completion zsh), after compinit
_anamnesis() {
    local -a candidates
    candidates=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    candidates=(${candidates:#})
    compadd -- "${candidates[@]}"
}
if [[ "${funcstack[1]}" == _anamnesis ]]; then
    _anamnesis "$@"
else
    compdef _anamnesis anamnesis
fi
`,
	"fish": `# anamnesis completion for fish: anamnesis completion fish | source
function __anamnesis_complete
    set -l words (commandline -opc)
    $words[1] __complete $words[2..-1] (commandline -ct) 2>/dev/null
end
complete -c anamnesis -f -a '(__anamnesis_complete)'
`,
}

// complete returns the candidates for the last of words (the word being
// typed; the words before it are complete): subcommands, then the
// command's flags when the word starts with '-', hook names after `hook`,
// command names after `help`.
func complete(app *cli.App, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, done := words[len(words)-1], words[:len(words)-1]
	at := walkWords(app, done)
	if awaitsValue(at.flags, done) {
		return nil // a flag's value: nothing to offer
	}
	var out []string
	for _, s := range candidates(app, at, strings.HasPrefix(cur, "-")) {
		if strings.HasPrefix(s, cur) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return dedupe(out)
}

// wordsAt is where the complete words of a command line lead: the
// (sub)command they name, its subcommands and flags, and the arguments
// given to it so far.
type wordsAt struct {
	cmd   *cli.Command // nil: the app itself
	cmds  []*cli.Command
	flags []cli.Flag
	args  []string
}

// walkWords follows done through the app's commands, skipping flags and
// the values of flags that take one.
func walkWords(app *cli.App, done []string) wordsAt {
	at := wordsAt{cmds: app.Commands, flags: app.Flags}
	for i := 0; i < len(done); i++ {
		w := done[i]
		if strings.HasPrefix(w, "-") {
			name, hasValue := flagName(w)
			if f := findFlag(at.flags, name); f != nil && !hasValue && takesValue(f) {
				i++ // its value
			}
			continue
		}
		if c := findCommand(at.cmds, w); c != nil && len(at.args) == 0 {
			at.cmd, at.cmds, at.flags = c, c.Subcommands, c.Flags
			continue
		}
		at.args = append(at.args, w)
	}
	return at
}

// awaitsValue reports whether the last complete word is a flag whose
// value comes next.
func awaitsValue(flags []cli.Flag, done []string) bool {
	if len(done) == 0 || !strings.HasPrefix(done[len(done)-1], "-") {
		return false
	}
	name, hasValue := flagName(done[len(done)-1])
	f := findFlag(flags, name)
	return !hasValue && f != nil && takesValue(f)
}

// candidates is everything that may come next at at: the flags when the
// word being typed is one, else the command's subcommands or its first
// argument's values.
func candidates(app *cli.App, at wordsAt, flag bool) []string {
	var out []string
	switch {
	case flag:
		out = flagNames(at.flags)
	case len(at.args) > 0:
		// past the command's first argument: nothing more to offer
	case at.cmd != nil && at.cmd.Name == "hook":
		out = append(claudecode.Events(), githooks.Names()...)
	case at.cmd != nil && at.cmd.Name == "help":
		out = commandNames(app.Commands)
	case at.cmd != nil && at.cmd.Name == "completion":
		for sh := range completionScripts {
			out = append(out, sh)
		}
	default:
		out = commandNames(at.cmds)
	}
	return out
}

// flagNames are flags' names as typed: -x, --name, and --help, which
// urfave/cli adds to every command when the app runs.
func flagNames(flags []cli.Flag) []string {
	out := []string{"--help"}
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// commandNames are the names of the commands that are not hidden.
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// printCompletions answers `anamnesis __complete WORDS...`.
func printCompletions(app *cli.App, words []string, w io.Writer) {
	for _, c := range complete(app, words) {
		fmt.Fprintln(w, c)
	}
}
