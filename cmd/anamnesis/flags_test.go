package main

import (
	"io"
	"strings"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp(osEnv(), strings.NewReader(""), io.Discard, io.Discard)
	cases := []struct{ in, want string }{
		{"anamnesis search sqlite locks -k 3 --json", "anamnesis search -k 3 --json sqlite locks"},
		{"anamnesis --home /h search sqlite --json", "anamnesis --home /h search --json sqlite"},
		{"anamnesis search --json sqlite", "anamnesis search --json sqlite"},
		{"anamnesis search -- sqlite -k 3", "anamnesis search -- sqlite -k 3"},
		{"anamnesis search state-of-the-art -x", "anamnesis search state-of-the-art -x"}, // not a flag of search
		{"anamnesis search a --decay-days -1", "anamnesis search --decay-days -1 a"},
		{"anamnesis search a -k=2", "anamnesis search -k=2 a"},
		{"anamnesis show 01ABC --json", "anamnesis show --json 01ABC"},
		{"anamnesis hooks status --json", "anamnesis hooks status --json"},
		{"anamnesis hooks", "anamnesis hooks"},
		{"anamnesis nosuch a --json", "anamnesis nosuch a --json"},
		{"anamnesis", "anamnesis"},
		{"anamnesis search --home /h sqlite", "anamnesis --home /h search sqlite"},
		{"anamnesis hooks install --home=/h", "anamnesis --home=/h hooks install"},
		{"anamnesis search sqlite --help", "anamnesis search --help"},
		{"anamnesis search -k 3 sqlite -h", "anamnesis search --help"},
	}
	for _, c := range cases {
		got := strings.Join(flagsFirst(app, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}
