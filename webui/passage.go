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
	text := []rune(strings.Join(strings.Fields(markdown.Text(clipBody(body))), " "))
	stems := queryStems(query)
	hit := func(w span) bool { return stems.match(text[w.start:w.end]) }
	words := wordSpans(text)
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
	var out segments
	if start > 0 {
		out.add("…", false)
	}
	pos := start
	for _, w := range words {
		if w.start < pos || w.end > end {
			continue // outside the passage
		}
		if hit(w) {
			out.add(string(text[pos:w.start]), false)
			out.add(string(text[w.start:w.end]), true)
			pos = w.end
		}
	}
	out.add(string(text[pos:end]), false)
	if end < len(text) {
		out.add("…", false)
	}
	return out
}

// clipBody is enough of a body for a passage, cut on a rune.
func clipBody(body string) string {
	if len(body) <= 20000 {
		return body
	}
	cut := 20000
	for cut > 0 && !utf8.RuneStart(body[cut]) {
		cut--
	}
	return body[:cut]
}

// stems are the query's words as prefixes, lower case: words of one
// rune are dropped, and words longer than four runes lose their last
// two, keeping at least four (a crude stemmer: "caching" becomes
// "cachi", "cache" "cach").
type stems [][]rune

func queryStems(query string) stems {
	var out stems
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !isWordRune(r) }) {
		r := []rune(lowerRunes(w))
		if len(r) < 2 {
			continue
		}
		if len(r) > 4 {
			r = r[:max(4, len(r)-2)]
		}
		out = append(out, r)
	}
	return out
}

// match says whether word starts with one of the stems.
func (ss stems) match(word []rune) bool {
	lw := []rune(lowerRunes(string(word)))
	for _, s := range ss {
		if len(lw) >= len(s) && string(lw[:len(s)]) == string(s) {
			return true
		}
	}
	return false
}

// span is a word's runes in the passage's text, [start, end).
type span struct{ start, end int }

// wordSpans are the runs of letters and digits in text.
func wordSpans(text []rune) []span {
	var out []span
	for i := 0; i < len(text); {
		if !isWordRune(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isWordRune(text[j]) {
			j++
		}
		out = append(out, span{i, j})
		i = j
	}
	return out
}

// segments is a passage being built: text joins the segment before it
// when both are marked alike.
type segments []segment

func (out *segments) add(s string, hit bool) {
	if s == "" {
		return
	}
	if n := len(*out); n > 0 && (*out)[n-1].Hit == hit {
		(*out)[n-1].Text += s
		return
	}
	*out = append(*out, segment{s, hit})
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// lowerRunes lowers each rune alone, so the result has as many runes as
// s and positions carry over.
func lowerRunes(s string) string {
	return strings.Map(unicode.ToLower, s)
}
