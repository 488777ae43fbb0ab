package textfmt

import (
	"testing"
	"unicode/utf8"
)

// TestClip: a clipped text ends at the last word boundary that leaves
// room for the one-character ellipsis, never inside a word, a number or
// a multibyte character, and never exceeds n runes, even for n smaller
// than the ellipsis.
func TestClip(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short enough", 20, "short enough"},
		{"  exactly ten  ", 11, "exactly ten"},
		{"   ", 5, ""},
		{"", 0, ""},
		{"roll out the canary 30 min", 22, "roll out the canary…"},
		{"roll out the canary 30 min", 23, "roll out the canary 30…"},
		{"roll out the canary 30 min", 24, "roll out the canary 30…"},
		{"wait, then deploy", 10, "wait…"},
		{"one\ntwo three", 10, "one\ntwo…"},
		{"supercalifragilistic word", 10, "supercali…"},
		{"éééé ééé", 6, "éééé…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"a  b", 3, "a…"},
		{"tab\tseparated words", 14, "tab\tseparated…"},
		{"tab\tseparated words", 13, "tab…"},
		{"ab", 1, "…"},
		{"ab", 0, ""},
		{"ab", -3, ""},
		{"a", 1, "a"},
	}
	for _, c := range cases {
		got := Clip(c.in, c.n)
		if got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if n := utf8.RuneCountInString(got); n > max(c.n, 0) {
			t.Errorf("Clip(%q, %d) has %d runes", c.in, c.n, n)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q is not valid UTF-8", c.in, c.n, got)
		}
	}
}

func TestPluralAndCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 copies", 1: "1 copy", 2: "2 copies", -1: "-1 copies"} {
		if got := Count(n, "copy", "copies"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if Plural(1, "note", "notes") != "note" || Plural(2, "note", "notes") != "notes" {
		t.Error("Plural")
	}
}

func TestDate(t *testing.T) {
	for in, want := range map[string]string{"2024-05-01T10:00:00Z": "2024-05-01", "2024-05-01": "2024-05-01", "": "", "2024": "2024"} {
		if got := Date(in); got != want {
			t.Errorf("Date(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFirstLine: blank lines before the first text are skipped, the line
// is trimmed (CRLF too), and nothing is clipped.
func TestFirstLine(t *testing.T) {
	long := string(make([]rune, 300))
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  \n\t\n", ""},
		{"subject", "subject"},
		{"subject \r\nbody", "subject"},
		{"\n\n  indented title  \nsecond", "indented title"},
		{"a\n\nb", "a"},
		{long + "\nnext", long},
	} {
		if got := FirstLine(c.in); got != c.want {
			t.Errorf("FirstLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
