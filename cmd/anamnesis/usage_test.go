package main

import (
	"strings"
	"testing"
)

// Every usage mistake, at any depth of subcommand, is one line on stderr,
// nothing on stdout and exit 2, as at the top level.
func TestUsageErrorsAreOneLineAndExit2Everywhere(t *testing.T) {
	parallel(t)
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
	parallel(t)
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

// Numbers that mean nothing (NaN, zero or less where a count or a time
// is asked for, a port outside 1..65535) are usage errors that name the
// flag, before anything runs.
func TestMeaninglessNumbersAreRefused(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "osprey", "--body", "a note about ospreys and their nests"))
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"search", "--decay-days", "NaN", "osprey"}, "--decay-days"},
		{[]string{"search", "--decay-days", "-1", "osprey"}, "--decay-days"},
		{[]string{"search", "--decay-days", "+Inf", "osprey"}, "--decay-days"},
		{[]string{"eval", "--self", "--decay-days", "nan"}, "--decay-days"},
		{[]string{"search", "-k", "0", "osprey"}, "-k"},
		{[]string{"search", "-k", "-3", "osprey"}, "-k"},
		{[]string{"list", "--limit", "0"}, "--limit"},
		{[]string{"list", "--limit", "-1"}, "--limit"},
		{[]string{"eval", "--self", "-n", "0"}, "-n"},
		{[]string{"eval", "--self", "-n", "-5"}, "-n"},
		{[]string{"eval", "--self", "-k", "0"}, "-k"},
		{[]string{"sync", "--timeout", "0s"}, "--timeout"},
		{[]string{"sync", "--timeout", "-1m"}, "--timeout"},
		{[]string{"sync", "--wait", "0s"}, "--wait"},
		{[]string{"serve", "--port", "0"}, "--port"},
		{[]string{"peers", "--port", "70000"}, "--port"},
	} {
		r := anm(t, home, "", c.args...)
		if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.flag+" ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", c.args, r.code, r.stdout, r.stderr, c.flag)
		}
	}
	// The values that do mean something still work.
	mustOK(t, anm(t, home, "", "search", "--decay-days", "0", "osprey"))
	mustOK(t, anm(t, home, "", "list", "--limit", "1"))
}
