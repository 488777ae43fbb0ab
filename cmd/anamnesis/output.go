package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

// visibleWriter is the one place the CLI's printouts pass through: it
// shows control characters escaped (note.EscapeText), because titles,
// projects, bodies and file names come from other machines that may not
// refuse them, and a terminal obeys them (clear the screen, retitle the
// window, reverse a line). Newlines and tabs pass; carriage returns pass
// on stderr, where progress lines redraw themselves. The escapes are
// JSON's, so --json output stays JSON with the same strings.
type visibleWriter struct {
	w      io.Writer
	keepCR bool
}

func (v *visibleWriter) Write(p []byte) (int, error) {
	s := string(p)
	var out string
	if v.keepCR && strings.Contains(s, "\r") {
		parts := strings.Split(s, "\r")
		for i := range parts {
			parts[i] = note.EscapeText(parts[i])
		}
		out = strings.Join(parts, "\r")
	} else {
		out = note.EscapeText(s)
	}
	if _, err := io.WriteString(v.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawWriter is where bytes meant to be exact go (show of a note file to a
// pipe): the writer under w's escaping, unless it is a terminal.
func rawWriter(w io.Writer) io.Writer {
	if v, ok := w.(*visibleWriter); ok {
		if f, ok := v.w.(*os.File); ok && isCharDevice(f) {
			return w
		}
		return v.w
	}
	return w
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func printResults(w io.Writer, hits []anamnesis.Hit, withScore bool) error {
	res := make([]anamnesis.NoteJSON, 0, len(hits))
	for _, h := range hits {
		res = append(res, anamnesis.NoteOf(h, withScore))
	}
	return printJSON(w, map[string]any{"results": res})
}

// snippet is the first few non-empty lines of a body, for terminals.
func snippet(body string, lines, width int) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		out = append(out, textfmt.Clip(l, width))
		if len(out) == lines {
			break
		}
	}
	return out
}

// isCharDevice reports whether f is a terminal (or another character
// device, which shows bytes to a person as well).
func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
