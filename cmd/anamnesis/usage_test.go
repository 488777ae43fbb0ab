package main

import (
	"strings"
	"testing"
)

// Every usage mistake, at any depth of subcommand, is one line on stderr,
// nothing on stdout and exit 2, as at the top level.
func TestUsageErrorsAreOneLineAndExit2Everywhere(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"frobnicate"}, {"--bogus"}, {"search", "--bogus", "x"},
		{"hooks", "bogus"}, {"hooks", "install", "--bogus"}, {"hooks", "status", "--bogus"},
		{"help", "nope"}, {"help", "hooks", "nope"}, {"sync", "--timeout", "soon"},
	} {
		r := anm(t, home, "", args...)
		if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "anamnesis: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", args, r.code, r.stdout, r.stderr)
		}
	}
}

// `anamnesis help [COMMAND [SUBCOMMAND]]` prints what --help prints.
func TestHelpCommand(t *testing.T) {
	home := t.TempDir()
	for _, topic := range [][]string{{}, {"sync"}, {"hooks"}, {"hooks", "install"}} {
		r := mustOK(t, anm(t, home, "", append([]string{"help"}, topic...)...))
		want := mustOK(t, anm(t, home, "", append(topic, "--help")...))
		if r.stdout != want.stdout || !strings.Contains(r.stdout, "USAGE") {
			t.Errorf("help %v:\n%s\nwant:\n%s", topic, r.stdout, want.stdout)
		}
	}
	if r := mustOK(t, anm(t, home, "", "--help")); !strings.Contains(r.stdout, "help ") || !strings.Contains(r.stdout, "--help") {
		t.Errorf("--help does not list the help command and flag:\n%s", r.stdout)
	}
}
