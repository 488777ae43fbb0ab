package textfmt

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends a clipped text: one character, so a clipped text still
// fits its limit.
const Ellipsis = "…"

// Clip shortens s, trimmed of white space, to at most n runes, the
// ellipsis included; a text that fits is returned trimmed and without
// one. It cuts at the last word boundary (white space) that leaves room
// for the ellipsis, so no word or number is cut ("canary 3" of "canary 30
// min"), and drops the spaces and a trailing ",", ";" or ":" before the
// ellipsis. Only a first word longer than the limit is cut inside, on a
// rune. With n < 1 there is no room even for the ellipsis: "".
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	r := []rune(s)
	room := n - 1 // runes before the ellipsis; r[room] exists as len(r) > n
	cut := room
	for cut > 0 && !unicode.IsSpace(r[cut]) {
		cut--
	}
	kept := strings.TrimRightFunc(string(r[:cut]), func(c rune) bool { return unicode.IsSpace(c) || strings.ContainsRune(",;:", c) })
	if kept == "" {
		kept = string(r[:room]) // one word longer than the limit
	}
	return kept + Ellipsis
}

// FirstLine is s's first line that is not blank, trimmed of white space
// (a "\r" of a CRLF line end included): a commit's subject, a note's
// gist, the message of an error. It does not clip; callers that show it
// in a bounded place Clip it.
func FirstLine(s string) string {
	for s != "" {
		var line string
		line, s, _ = strings.Cut(s, "\n")
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// Plural is one if n is 1, else many: Plural(n, "copy", "copies").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and its noun: "1 note", "3 notes".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Plural(n, one, many)
}

// Date is the date of an RFC 3339 timestamp ("2024-05-01" of
// "2024-05-01T10:00:00Z"); anything shorter is returned as it is.
func Date(ts string) string {
	if len(ts) >= 10 {
		return ts[:10]
	}
	return ts
}
