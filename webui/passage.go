package webui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/anamnesis-memory/anamnesis/internal/markdown"
)

// segment is a piece of a search result's passage; Hit marks a query
// word, which the page highlights. The text is escaped by the template
// like any other.
type segment struct {
	Text string
	Hit  bool
}

// passageLen is how many characters of a note a search result shows.
const passageLen = 240

// passage is the part of body around the first query word it holds, as
// plain text, with the query words marked; the start of the note when
// none is found (a semantic match). Words match by prefix so "caching"
// finds "cache" roughly as the index's stemmer does.
func passage(body, query string) []segment {
	if len(body) > 20000 { // enough for a passage; cut on a rune
		cut := 20000
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut]
	}
	text := []rune(strings.Join(strings.Fields(markdown.Text(body)), " "))
	var stems [][]rune
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(lowerRunes(w))
		if len(r) < 2 {
			continue
		}
		if len(r) > 4 {
			r = r[:max(4, len(r)-2)]
		}
		stems = append(stems, r)
	}
	type word struct{ start, end int }
	var words []word
	for i := 0; i < len(text); {
		if !isWordRune(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isWordRune(text[j]) {
			j++
		}
		words = append(words, word{i, j})
		i = j
	}
	hit := func(w word) bool {
		lw := []rune(lowerRunes(string(text[w.start:w.end])))
		for _, s := range stems {
			if len(lw) >= len(s) && string(lw[:len(s)]) == string(s) {
				return true
			}
		}
		return false
	}
	start := 0
	for _, w := range words {
		if hit(w) {
			start = max(0, w.start-60)
			for start > 0 && text[start-1] != ' ' { // a whole word first
				start++
			}
			break
		}
	}
	end := min(len(text), start+passageLen)
	var out []segment
	add := func(s string, h bool) {
		if s == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Hit == h {
			out[n-1].Text += s
			return
		}
		out = append(out, segment{s, h})
	}
	if start > 0 {
		add("…", false)
	}
	pos := start
	for _, w := range words {
		if w.end <= start || w.start >= end {
			continue
		}
		if w.start < pos || w.end > end {
			continue
		}
		if hit(w) {
			add(string(text[pos:w.start]), false)
			add(string(text[w.start:w.end]), true)
			pos = w.end
		}
	}
	add(string(text[pos:end]), false)
	if end < len(text) {
		add("…", false)
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// lowerRunes lowers each rune alone, so the result has as many runes as
// s and positions carry over.
func lowerRunes(s string) string {
	return strings.Map(unicode.ToLower, s)
}
