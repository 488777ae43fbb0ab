package note

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// This file reproduces the part of PyYAML's emitter that the Python writer
// exercises (yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) of a
// flat mapping of strings, one float and lists of strings), so that a note
// written here is byte-identical to one written there. Without that, two
// machines running different implementations would rewrite each other's
// notes on every touch and git would see churn. The logic follows PyYAML's
// Emitter.analyze_scalar / choose_scalar_style / write_* closely; the golden
// vectors in testdata were produced by PyYAML itself.

const bestWidth = 80 // PyYAML's default line width

// YAML 1.1 implicit resolvers as PyYAML's SafeResolver has them. A string
// that any of these match would read back as another type, so it is quoted.
// Compiled on first use: every hook process links this package, few write.
var implicitResolvers = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// bool
		regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`),
		// float
		regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`),
		// int
		regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`),
		// merge
		regexp.MustCompile(`^(?:<<)$`),
		// null
		regexp.MustCompile(`^(?:~|null|Null|NULL|)$`),
		// timestamp
		regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`),
		// value
		regexp.MustCompile(`^(?:=)$`),
		// yaml
		regexp.MustCompile(`^(?:!|&|\*)$`),
	}
})

// resolvesToString reports whether a plain scalar s would read back as a
// string. Python's re.match lets '$' match before one trailing newline, so
// that case is tried too.
func resolvesToString(s string) bool {
	// Every resolver's pattern starts with one of these bytes (or matches
	// the empty string): most strings need no regexp at all.
	if s != "" && s != "\n" && !strings.ContainsRune("yYnNtTfFoO-+.0123456789<~=!&*", rune(s[0])) {
		return true
	}
	for _, re := range implicitResolvers() {
		if re.MatchString(s) || (strings.HasSuffix(s, "\n") && re.MatchString(s[:len(s)-1])) {
			return false
		}
	}
	return true
}

func isBreak(r rune) bool { return r == '\n' || r == '\x85' || r == '\u2028' || r == '\u2029' }

func isSpaceOrBreakOrNul(r rune) bool {
	return r == 0 || r == ' ' || r == '\t' || r == '\r' || isBreak(r)
}

type scalarAnalysis struct {
	empty, multiline                                                 bool
	allowBlockPlain, allowSingleQuoted, allowDoubleQuoted, allowFlow bool
}

func analyzeScalar(s []rune) scalarAnalysis {
	if len(s) == 0 {
		return scalarAnalysis{empty: true, allowBlockPlain: true, allowSingleQuoted: true, allowDoubleQuoted: true}
	}
	var blockIndicators, flowIndicators, lineBreaks, special bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	str := string(s)
	if strings.HasPrefix(str, "---") || strings.HasPrefix(str, "...") {
		blockIndicators, flowIndicators = true, true
	}
	precededByWS := true
	followedByWS := len(s) == 1 || isSpaceOrBreakOrNul(s[1])
	previousSpace, previousBreak := false, false
	for i, ch := range s {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", ch) {
				flowIndicators, blockIndicators = true, true
			}
			if ch == '?' || ch == ':' {
				flowIndicators = true
				if followedByWS {
					blockIndicators = true
				}
			}
			if ch == '-' && followedByWS {
				flowIndicators, blockIndicators = true, true
			}
		} else {
			if strings.ContainsRune(",?[]{}", ch) {
				flowIndicators = true
			}
			if ch == ':' {
				flowIndicators = true
				if followedByWS {
					blockIndicators = true
				}
			}
			if ch == '#' && precededByWS {
				flowIndicators, blockIndicators = true, true
			}
		}
		if isBreak(ch) {
			lineBreaks = true
		}
		if !(ch == '\n' || (ch >= 0x20 && ch <= 0x7E)) {
			unicodeOK := (ch == 0x85 || (ch >= 0xA0 && ch <= 0xD7FF) || (ch >= 0xE000 && ch <= 0xFFFD) ||
				(ch >= 0x10000 && ch < 0x10FFFF)) && ch != 0xFEFF
			if !unicodeOK {
				special = true
			}
		}
		switch {
		case ch == ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i == len(s)-1 {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		case isBreak(ch):
			if i == 0 {
				leadingBreak = true
			}
			if i == len(s)-1 {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWS = isSpaceOrBreakOrNul(ch)
		followedByWS = i+2 >= len(s) || isSpaceOrBreakOrNul(s[i+2])
	}
	a := scalarAnalysis{multiline: lineBreaks, allowFlow: true, allowBlockPlain: true, allowSingleQuoted: true, allowDoubleQuoted: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.allowFlow, a.allowBlockPlain = false, false
	}
	if breakSpace {
		a.allowFlow, a.allowBlockPlain, a.allowSingleQuoted = false, false, false
	}
	if spaceBreak || special {
		a.allowFlow, a.allowBlockPlain, a.allowSingleQuoted = false, false, false
	}
	if lineBreaks {
		a.allowFlow, a.allowBlockPlain = false, false
	}
	if flowIndicators {
		a.allowFlow = false
	}
	if blockIndicators {
		a.allowBlockPlain = false
	}
	return a
}

// emitter tracks the column and whitespace state PyYAML uses to decide
// where to fold long scalars.
type emitter struct {
	buf        *bytes.Buffer
	column     int
	whitespace bool
	indention  bool
	indent     int
	started    bool // a key has been written; the next one starts a line
}

func (e *emitter) write(r []rune) {
	e.buf.WriteString(string(r))
	e.column += len(r)
}

func (e *emitter) writeLineBreak(br rune) {
	e.buf.WriteRune(br)
	e.whitespace, e.indention = true, true
	e.column = 0
}

func (e *emitter) writeIndent() {
	if !e.indention || e.column > e.indent || (e.column == e.indent && !e.whitespace) {
		e.writeLineBreak('\n')
	}
	if e.column < e.indent {
		e.whitespace = true
		e.buf.WriteString(strings.Repeat(" ", e.indent-e.column))
		e.column = e.indent
	}
}

func (e *emitter) writeIndicator(ind string, needWhitespace, whitespace, indention bool) {
	if !e.whitespace && needWhitespace {
		ind = " " + ind
	}
	e.whitespace = whitespace
	e.indention = e.indention && indention
	e.buf.WriteString(ind)
	e.column += len([]rune(ind))
}

// key starts a top-level mapping entry: "key:" at column 0.
func (e *emitter) key(k string) {
	if e.started {
		e.writeLineBreak('\n')
	}
	e.started = true
	e.whitespace, e.indention = true, true
	e.write([]rune(k))
	e.writeIndicator(":", false, false, false)
	e.indent = 2
}

// sequenceItem starts "- " on a new line for an indentless block sequence.
func (e *emitter) sequenceItem() {
	e.indent = 0
	e.writeIndent()
	e.writeIndicator("-", true, false, true)
	e.indent = 2
}

// scalar writes a string value in the style PyYAML would choose for it.
func (e *emitter) scalar(s string) {
	e.scalarTagged(s, resolvesToString(s))
}

func (e *emitter) scalarTagged(s string, implicit bool) {
	r := []rune(s)
	a := analyzeScalar(r)
	switch {
	case implicit && a.allowBlockPlain:
		e.writePlain(r)
	case a.allowSingleQuoted:
		e.writeSingleQuoted(r)
	default:
		e.writeDoubleQuoted(r)
	}
}

func (e *emitter) writePlain(t []rune) {
	if len(t) == 0 {
		return
	}
	if !e.whitespace {
		e.write([]rune{' '})
	}
	e.whitespace, e.indention = false, false
	spaces := false
	start := 0
	for end := 0; end <= len(t); end++ {
		ch := rune(-1)
		if end < len(t) {
			ch = t[end]
		}
		if spaces {
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth {
					e.writeIndent()
					e.whitespace, e.indention = false, false
				} else {
					e.write(t[start:end])
				}
				start = end
			}
		} else if ch == -1 || ch == ' ' || isBreak(ch) {
			e.write(t[start:end])
			start = end
		}
		if ch != -1 {
			spaces = ch == ' '
		}
	}
}

func (e *emitter) writeBreaks(t []rune) {
	if t[0] == '\n' {
		e.writeLineBreak('\n')
	}
	for _, br := range t {
		e.writeLineBreak(br)
	}
	e.writeIndent()
}

func (e *emitter) writeSingleQuoted(t []rune) {
	e.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(t); end++ {
		ch := rune(-1)
		if end < len(t) {
			ch = t[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && start != 0 && end != len(t) {
					e.writeIndent()
				} else {
					e.write(t[start:end])
				}
				start = end
			}
		case breaks:
			if ch == -1 || !isBreak(ch) {
				e.writeBreaks(t[start:end])
				start = end
			}
		default:
			if ch == -1 || ch == ' ' || isBreak(ch) || ch == '\'' {
				if start < end {
					e.write(t[start:end])
					start = end
				}
			}
		}
		if ch == '\'' {
			e.buf.WriteString("''")
			e.column += 2
			start = end + 1
		}
		if ch != -1 {
			spaces = ch == ' '
			breaks = isBreak(ch)
		}
	}
	e.writeIndicator("'", false, false, false)
}

var escapeReplacements = map[rune]string{
	0: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r",
	0x1B: "e", '"': "\"", '\\': "\\", 0x85: "N", 0xA0: "_", 0x2028: "L", 0x2029: "P",
}

func (e *emitter) writeDoubleQuoted(t []rune) {
	e.writeIndicator("\"", true, false, false)
	start := 0
	for end := 0; end <= len(t); end++ {
		ch := rune(-1)
		if end < len(t) {
			ch = t[end]
		}
		if ch == -1 || ch == '"' || ch == '\\' || ch == 0x85 || ch == 0x2028 || ch == 0x2029 || ch == 0xFEFF ||
			!((ch >= 0x20 && ch <= 0x7E) || (ch >= 0xA0 && ch <= 0xD7FF) || (ch >= 0xE000 && ch <= 0xFFFD)) {
			if start < end {
				e.write(t[start:end])
				start = end
			}
			if ch != -1 {
				var data string
				if rep, ok := escapeReplacements[ch]; ok {
					data = "\\" + rep
				} else if ch <= 0xFF {
					data = "\\x" + strings.ToUpper(padHex(ch, 2))
				} else if ch <= 0xFFFF {
					data = "\\u" + strings.ToUpper(padHex(ch, 4))
				} else {
					data = "\\U" + strings.ToUpper(padHex(ch, 8))
				}
				e.buf.WriteString(data)
				e.column += len(data)
				start = end + 1
			}
		}
		if end > 0 && end < len(t)-1 && (ch == ' ' || start >= end) && e.column+(end-start) > bestWidth {
			var data []rune
			if start < end {
				data = append(data, t[start:end]...)
			}
			data = append(data, '\\')
			if start < end {
				start = end
			}
			e.write(data)
			e.writeIndent()
			e.whitespace, e.indention = false, false
			if t[start] == ' ' {
				e.buf.WriteByte('\\')
				e.column++
			}
		}
	}
	e.writeIndicator("\"", false, false, false)
}

func padHex(r rune, width int) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", max(0, width-len(s))) + s
}

// pyFloatRepr formats f as PyYAML's represent_float does: Python's repr
// (shortest round-trip digits, exponent outside 1e-4..1e16), lower-cased,
// with ".0" forced into a bare exponent form (1e-07 -> 1.0e-07).
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	es := strconv.Itoa(exp)
	if len(es) < 2 {
		es = "0" + es
	}
	return mant + "e" + sign + es
}
