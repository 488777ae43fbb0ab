package webui

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anamnesis-memory/anamnesis/internal/markdown"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// renderMarkdown renders a note body. Package markdown escapes every
// byte of text, shows raw HTML as text, keeps link targets only for http,
// https, mailto and relative URLs, and renders images as links: a note
// written on another machine can put no markup or script into the page,
// nor make it load anything, so the result goes into the page as is. (It
// replaced goldmark, whose package initialisers ran in every process of
// the binary, the hooks included.)
func renderMarkdown(body string) template.HTML {
	return template.HTML(markdown.HTML(body))
}

// DiffLine is one line of a unified diff: Op is ' ', '+', '-' or '~'
// (a run of unchanged lines left out, Text says how many).
type DiffLine struct {
	Op   byte
	Text string
}

// lineDiff is the line-by-line edit script from a to b: go-diff's Myers
// diff over lines (each line one rune), as go-git's utils/diff computes
// it, with no practical deadline (go-diff's default of one second would
// turn a diff under load into a bulk delete and insert).
func lineDiff(a, b string) []diffmatchpatch.Diff {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = time.Hour
	ra, rb, lines := dmp.DiffLinesToRunes(a, b)
	return dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), lines)
}

// diffLines is a line diff of a and b, each change with up to context
// unchanged lines around it; nil when they are equal.
func diffLines(a, b string, context int) []DiffLine {
	var all []DiffLine
	changed := false
	for _, d := range lineDiff(a, b) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op, changed = '-', true
		case diffmatchpatch.DiffInsert:
			op, changed = '+', true
		}
		for _, l := range splitLines(d.Text) {
			all = append(all, DiffLine{op, l})
		}
	}
	if !changed {
		return nil
	}
	var out []DiffLine
	for i := 0; i < len(all); {
		if all[i].Op != ' ' {
			out = append(out, all[i])
			i++
			continue
		}
		j := i
		for j < len(all) && all[j].Op == ' ' {
			j++
		}
		keepHead, keepTail := context, context // after a change, before one
		if i == 0 {
			keepHead = 0
		}
		if j == len(all) {
			keepTail = 0
		}
		if j-i <= keepHead+keepTail {
			out = append(out, all[i:j]...)
		} else {
			out = append(out, all[i:i+keepHead]...)
			out = append(out, DiffLine{'~', fmt.Sprintf("%d unchanged lines", j-i-keepHead-keepTail)})
			out = append(out, all[j-keepTail:j]...)
		}
		i = j
	}
	return out
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{""}
	}
	return strings.Split(s, "\n")
}

// splitFrontmatter returns a note file's frontmatter block (without the
// --- lines) and its body.
func splitFrontmatter(data []byte) (front, body string) {
	s := string(data)
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return "", s
	}
	i := strings.Index(rest, "\n---\n")
	if i < 0 {
		return "", s
	}
	return rest[:i+1], rest[i+5:]
}

var funcs = template.FuncMap{
	"markdown": renderMarkdown,
	"date":     shortDate,
	"ago":      ago,
	"snippet":  snippet,
	"short":    func(s string) string { return clip(s, 12) },
	"join":     strings.Join,
	"diffop": func(op byte) string {
		switch op {
		case '+':
			return "add"
		case '-':
			return "del"
		case '~':
			return "skip"
		}
		return "ctx"
	},
	"diffmark": func(op byte) string {
		if op == '~' {
			return "…"
		}
		return string(op)
	},
	"sorted": func(m map[string]int) []kv {
		out := make([]kv, 0, len(m))
		for k, v := range m {
			out = append(out, kv{k, v})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].N > out[j].N || out[i].N == out[j].N && out[i].K < out[j].K })
		return out
	},
	"query": func(pairs ...string) template.URL {
		q := url.Values{}
		for i := 0; i+1 < len(pairs); i += 2 {
			if pairs[i+1] != "" {
				q.Set(pairs[i], pairs[i+1])
			}
		}
		if len(q) == 0 {
			return "/"
		}
		return template.URL("/?" + q.Encode())
	},
	"pct": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a * 100 / b
	},
}

type kv struct {
	K string
	N int
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// snippet is the start of a body as one line of plain text: the
// markdown rendered, then its tags dropped, so a list shows "use the
// flag" where the note says "use **the** `flag`".
func snippet(body string) string {
	// The first lines are enough for 200 characters; cut on a rune.
	if len(body) > 2000 {
		cut := 2000
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut]
	}
	s := strings.Join(strings.Fields(markdown.Text(body)), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// shortDate is a timestamp as a person reads it: "2026-11-24 14:03 UTC".
func shortDate(s string) string {
	t, ok := parseTime(s)
	if !ok {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// ago is how long before now s was, roughly ("3 h ago").
func ago(now time.Time, s string) string {
	t, ok := parseTime(s)
	if !ok || s == "" {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

var pageNames = []string{"notes", "note", "edit", "conflicts", "fleet", "error"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, p := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("web UI template %s: %w", p, err)
		}
		out[p] = t
	}
	return out, nil
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string // which tab is current
	CSRF    string
	Machine string
	Now     time.Time
	Flash   string
	Data    any
}

// render writes a page; a template error (a bug, not the user's) becomes
// a 500 with the error, never a half page.
func (s *Server) render(w http.ResponseWriter, status int, name, title, nav string, data any, flash string) {
	var b bytes.Buffer
	p := page{Title: title, Nav: nav, CSRF: s.opts.CSRF, Machine: s.st.MachineID(), Now: s.opts.Now(), Flash: flash, Data: data}
	if err := s.pages[name].Execute(&b, p); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail shows an error page.
func (s *Server) fail(w http.ResponseWriter, status int, err error) {
	s.render(w, status, "error", "Error", "", err.Error(), "")
}
