package note

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Titles and projects are printed on terminals, one per line, and notes
// arrive from other machines that may not check what they write. A
// control character there can move the cursor, clear the screen, rewrite
// the terminal's title or hide text; a bidirectional override can make a
// line read differently from what it holds. So writes refuse them in
// titles and projects, and every printout shows them escaped.

// IsControl reports whether r is a character a one-line field must not
// hold: C0 controls (tab, newline and carriage return included), DEL, C1
// controls, the line and paragraph separators, and the bidirectional
// embeddings, overrides and isolates.
func IsControl(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == '\u2028', r == '\u2029', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// ControlIn returns the first control character in s (see IsControl).
func ControlIn(s string) (rune, bool) {
	for _, r := range s {
		if IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

// Escape returns s with every control character shown as an escape: \t,
// \n and \r, \u001b for the other C0 controls, DEL, C1 controls,
// separators and bidirectional controls, and \xff for a byte that is not
// UTF-8. Everything else is left alone. The escapes are JSON's, so a JSON
// document escaped this way is still JSON, with the same meaning (it
// holds no bytes that are not UTF-8).
func Escape(s string) string { return escape(s, "") }

// EscapeText is Escape for multi-line text: newlines and tabs stay.
func EscapeText(s string) string { return escape(s, "\n\t") }

func escape(s, keep string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (IsControl(r) && !strings.ContainsRune(keep, r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !IsControl(r) || strings.ContainsRune(keep, r):
			b.WriteString(s[i : i+size])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// StripControls replaces each control character in s with a space and
// trims the result: for titles made from text nobody typed as a title
// (a session's first prompt), which must not fail a write.
func StripControls(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if IsControl(r) {
			return ' '
		}
		return r
	}, s))
}
