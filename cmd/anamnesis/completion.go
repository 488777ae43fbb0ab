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
	var cmd *cli.Command
	cmds := app.Commands
	flags := app.Flags
	var args []string
	for i := 0; i < len(done); i++ {
		w := done[i]
		if strings.HasPrefix(w, "-") {
			name, hasValue := flagName(w)
			if f := findFlag(flags, name); f != nil && !hasValue && takesValue(f) {
				i++ // its value
			}
			continue
		}
		if c := findCommand(cmds, w); c != nil && len(args) == 0 {
			cmd, cmds, flags = c, c.Subcommands, c.Flags
			continue
		}
		args = append(args, w)
	}
	if len(done) > 0 {
		if prev := done[len(done)-1]; strings.HasPrefix(prev, "-") {
			if name, hasValue := flagName(prev); !hasValue {
				if f := findFlag(flags, name); f != nil && takesValue(f) {
					return nil // a flag's value: nothing to offer
				}
			}
		}
	}
	var out []string
	add := func(s string) {
		if strings.HasPrefix(s, cur) {
			out = append(out, s)
		}
	}
	switch {
	case strings.HasPrefix(cur, "-"):
		for _, f := range flags {
			for _, n := range f.Names() {
				if len(n) == 1 {
					add("-" + n)
				} else {
					add("--" + n)
				}
			}
		}
		add("--help") // urfave/cli adds it to every command when the app runs
	case len(args) > 0:
		// past the command's first argument: nothing more to offer
	case cmd != nil && cmd.Name == "hook":
		for _, h := range append(claudecode.Events(), githooks.Names()...) {
			add(h)
		}
	case cmd != nil && cmd.Name == "help":
		for _, c := range app.Commands {
			if !c.Hidden {
				add(c.Name)
			}
		}
	case cmd != nil && cmd.Name == "completion":
		for sh := range completionScripts {
			add(sh)
		}
	default:
		for _, c := range cmds {
			if !c.Hidden {
				add(c.Name)
			}
		}
	}
	sort.Strings(out)
	return dedupe(out)
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
