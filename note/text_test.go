package note

import (
	"strings"
	"testing"
	"time"
)

// TestValidateRefusesControlCharacters: a title or project with a control
// character or a bidirectional override is refused, and the error names
// the field and the character; ordinary text in any script is not.
func TestValidateRefusesControlCharacters(t *testing.T) {
	for _, bad := range []string{"\x1b[2J", "a\nb", "tab\there", "cr\r", "del\x7f", "csi\u009b31m", "nel\u0085", "rlo\u202egnp.exe", "iso\u2066x", "ls\u2028x", "nul\x00"} {
		for _, field := range []string{"title", "project"} {
			n := New(TypeSemantic, "fine", "body", time.Now())
			if field == "title" {
				n.Title = bad
			} else {
				n.Project = bad
			}
			err := n.Validate()
			if err == nil {
				t.Errorf("%s %q accepted", field, bad)
				continue
			}
			r, _ := ControlIn(bad)
			if msg := err.Error(); !strings.HasPrefix(msg, field+" ") || !strings.Contains(msg, Escape(string(r))) {
				t.Errorf("%s %q: error %q does not name the field and the character", field, bad, msg)
			}
		}
	}
	for _, good := range []string{"Use WAL mode", "café ☕", "שלום עולם", "日本語のメモ", "emoji 🚀", `C:\path\to`} {
		n := New(TypeSemantic, good, "body", time.Now())
		n.Project = good
		if err := n.Validate(); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

func TestEscapeShowsControlsVisibly(t *testing.T) {
	cases := map[string]string{
		"plain":        "plain",
		"\x1b[31mred":  `\u001b[31mred`,
		"a\tb\nc\rd":   `a\tb\nc\rd`,
		"del\x7f":      `del\u007f`,
		"csi\u009b":    `csi\u009b`,
		"rlo\u202eabc": `rlo\u202eabc`,
		"café 🚀 שלום":  "café 🚀 שלום",
		"bad\xffbyte":  `bad\xffbyte`,
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeText("line\n\tindented\x1b"); got != "line\n\tindented\\u001b" {
		t.Errorf("EscapeText keeps newlines and tabs: %q", got)
	}
	if got := StripControls(" fix\tthe\x1b[0m build\n"); got != "fix the [0m build" {
		t.Errorf("StripControls = %q", got)
	}
}
