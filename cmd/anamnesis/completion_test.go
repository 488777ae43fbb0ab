package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// shellCompletes loads `anamnesis completion SHELL` into the real shell and
// returns its candidates for the command line words (the last one is
// being typed). Each shell gets the line the way it sees it.
func shellCompletes(t *testing.T, shell string, words ...string) []string {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("%s is not installed; its completion script is not tested here", shell)
	}
	var script string
	switch shell {
	case "bash":
		// The function named in the completion spec, called as bash
		// calls it on TAB.
		script = `source <(anamnesis completion bash) || exit 1
spec=$(complete -p anamnesis) || exit 1
fn=${spec#*-F }; fn=${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" anamnesis "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"`
	case "zsh":
		// compadd only works inside the completion system; a stand-in
		// prints what the registered function would offer.
		script = `autoload -Uz compinit && compinit -u -d "$TMPDIR/zcompdump" || exit 1
source <(anamnesis completion zsh) || exit 1
[[ $_comps[anamnesis] == _anamnesis ]] || { print "not registered with compdef"; exit 1 }
compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
words=("$@"); CURRENT=$#
_anamnesis`
	case "fish":
		script = `anamnesis completion fish | source; or exit 1
complete -C (string join ' ' -- $argv)`
	}
	args := []string{"-c", script}
	switch shell {
	case "bash":
		args = append(args, "anamnesis-completion-test")
	case "zsh":
		args = append([]string{"-f"}, args...)
		args = append(args, "anamnesis-completion-test")
	}
	cmd := exec.Command(path, append(args, words...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"), "TMPDIR="+t.TempDir(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			got = append(got, strings.SplitN(l, "\t", 2)[0]) // fish adds a description after a tab
		}
	}
	return got
}

func TestShellCompletion(t *testing.T) {
	parallel(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			for _, c := range []struct {
				words []string
				want  []string
			}{
				{[]string{"anamnesis", "sea"}, []string{"search"}},
				{[]string{"anamnesis", "--home", "/tmp/x", "st"}, []string{"status"}},
				{[]string{"anamnesis", "hooks", "in"}, []string{"install"}},
				{[]string{"anamnesis", "hooks", ""}, []string{"install", "status", "uninstall"}},
				{[]string{"anamnesis", "search", "--j"}, []string{"--json"}},
				{[]string{"anamnesis", "hook", "session-"}, []string{"session-end", "session-start"}},
				{[]string{"anamnesis", "completion", "z"}, []string{"zsh"}},
			} {
				if got := shellCompletes(t, shell, c.words...); !reflect.DeepEqual(got, c.want) {
					t.Errorf("%s completes %q to %q, want %q", shell, strings.Join(c.words, " "), got, c.want)
				}
			}
		})
	}
}

func TestCompletionUsage(t *testing.T) {
	parallel(t)
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		if r := anm(t, t.TempDir(), "", args...); r.code != 2 || r.stdout != "" {
			t.Errorf("%v: exit %d stdout %q", args, r.code, r.stdout)
		}
	}
}
