package webui

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anamnesis-memory/anamnesis/internal/markdown"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
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
	return template.HTML(taskLabels.Replace(markdown.HTML(body)))
}

// taskLabels names task-list checkboxes for screen readers (axe-core:
// a form control needs a name). The renderer escapes every "<" of note
// text, so these strings only ever match its own markup.
var taskLabels = strings.NewReplacer(
	`<input type="checkbox" checked disabled>`, `<input type="checkbox" checked disabled aria-label="done">`,
	`<input type="checkbox" disabled>`, `<input type="checkbox" disabled aria-label="not done">`,
)

// DiffLine is one line of a unified diff: Op is ' ', '+', '-' or '~'
// (a run of unchanged lines left out, Text says how many).
type DiffLine struct {
	Op   byte
	Text string
	// Segs, on a changed line paired with its counterpart (a line
	// rewritten rather than added or removed), is the line in pieces with
	// the changed words marked (Hit); nil shows Text whole.
	Segs []segment
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
			all = append(all, DiffLine{Op: op, Text: l})
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
			out = append(out, DiffLine{Op: '~', Text: fmt.Sprintf("%d unchanged lines", j-i-keepHead-keepTail)})
			out = append(out, all[j-keepTail:j]...)
		}
		i = j
	}
	return out
}

// changeRun finds the change starting at lines[i]: its removed lines
// are lines[i:del], the added lines right after them lines[del:add]
// (diffLines lists a run's removals before its additions).
func changeRun(lines []DiffLine, i int) (del, add int) {
	del = i
	for del < len(lines) && lines[del].Op == '-' {
		del++
	}
	add = del
	for add < len(lines) && lines[add].Op == '+' {
		add++
	}
	return del, add
}

// markWords pairs each run of removed lines with the run of added lines
// right after it, line by line, and marks the words that differ within
// each pair, so a one-word edit in a long line shows as that word.
// Lines that have little in common stay whole: marking most of a line
// says less than showing it removed and added.
func markWords(lines []DiffLine) []DiffLine {
	dmp := diffmatchpatch.New()
	for i := 0; i < len(lines); {
		if lines[i].Op != '-' {
			i++
			continue
		}
		d, a := changeRun(lines, i)
		for k := 0; k < d-i && d+k < a; k++ {
			del, add := &lines[i+k], &lines[d+k]
			diffs := dmp.DiffCleanupSemantic(dmp.DiffMain(del.Text, add.Text, false))
			same := 0
			for _, x := range diffs {
				if x.Type == diffmatchpatch.DiffEqual {
					same += len(x.Text)
				}
			}
			if same*10 < max(len(del.Text), len(add.Text))*4 {
				continue
			}
			for _, x := range diffs {
				switch x.Type {
				case diffmatchpatch.DiffEqual:
					del.Segs = append(del.Segs, segment{Text: x.Text})
					add.Segs = append(add.Segs, segment{Text: x.Text})
				case diffmatchpatch.DiffDelete:
					del.Segs = append(del.Segs, segment{Text: x.Text, Hit: true})
				case diffmatchpatch.DiffInsert:
					add.Segs = append(add.Segs, segment{Text: x.Text, Hit: true})
				}
			}
		}
		i = max(a, d)
	}
	return lines
}

// frontSummary says in one line which frontmatter keys changed between
// two versions ("" when none did): the body diff shows the text, and a
// timestamp rewritten at every save need not take ten lines of it.
func frontSummary(prev, cur string) string {
	a, b := frontKeys(prev), frontKeys(cur)
	var changed, added, removed []string
	for _, k := range b.order {
		switch old, ok := a.vals[k]; {
		case !ok:
			added = append(added, k)
		case old != b.vals[k]:
			changed = append(changed, k)
		}
	}
	for _, k := range a.order {
		if _, ok := b.vals[k]; !ok {
			removed = append(removed, k)
		}
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, strings.Join(changed, ", ")+" changed")
	}
	if len(added) > 0 {
		parts = append(parts, strings.Join(added, ", ")+" added")
	}
	if len(removed) > 0 {
		parts = append(parts, strings.Join(removed, ", ")+" removed")
	}
	return strings.Join(parts, "; ")
}

type frontMap struct {
	order []string
	vals  map[string]string
}

// frontKeys splits a frontmatter block into its top-level keys, each
// with its lines (a list or a folded value continues on indented lines).
func frontKeys(front string) frontMap {
	m := frontMap{vals: map[string]string{}}
	key := ""
	for _, l := range strings.Split(front, "\n") {
		if l == "" {
			continue
		}
		if l[0] != ' ' && l[0] != '-' && l[0] != '#' {
			if k, _, ok := strings.Cut(l, ":"); ok {
				key = k
				if _, seen := m.vals[key]; !seen {
					m.order = append(m.order, key)
				}
				m.vals[key] = l
				continue
			}
		}
		if key != "" {
			m.vals[key] += "\n" + l
		}
	}
	return m
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
	"since": func(now, t time.Time) string {
		return ago(now, t.UTC().Format(time.RFC3339))
	},
	"snippet": snippet,
	"short":   shortHash,
	"join":    strings.Join,
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
	"sorted": sortedCounts,
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
	"add":  func(a, b, c int) int { return a + b + c },
	"itoa": strconv.Itoa,
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

// sortedCounts is m's entries, most first, then by name.
func sortedCounts(m map[string]int) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N > out[j].N || out[i].N == out[j].N && out[i].K < out[j].K })
	return out
}

// shortHash abbreviates a commit hash as git log --abbrev=12 would; a
// hash is ASCII hex, so this is a prefix, not a clipped text (no
// ellipsis).
func shortHash(h string) string { return h[:min(len(h), 12)] }

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
	return textfmt.Clip(s, 200)
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

var pageNames = []string{"notes", "note", "edit", "conflicts", "review", "fleet", "error", "version"}

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
	// Conflicts counts unresolved conflicts, for the navigation.
	Conflicts int
	// Pending counts consolidation proposals waiting for review.
	Pending int
	// Sync is the last sync as far as this server knows; Remote says
	// one is configured; Back is this page's path, where "Sync now"
	// returns to.
	Sync   syncState
	Remote bool
	Back   string
}

// render writes a page; a template error (a bug, not the user's) becomes
// a 500 with the error, never a half page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any, flash string) {
	var b bytes.Buffer
	p := page{Title: title, Nav: nav, CSRF: s.opts.CSRF, Machine: s.st.MachineID(), Now: s.opts.Now(), Flash: flash, Data: data,
		Sync: s.syncStateFor(r.Context()), Remote: s.st.Remote() != "", Back: r.URL.RequestURI()}
	// A count that cannot be read leaves the navigation without it; the
	// conflicts page itself reports the error.
	if cs, err := s.st.Conflicts(r.Context()); err == nil {
		p.Conflicts = len(cs)
	}
	// Likewise for the review count: the review page reports the error.
	if ps, err := s.st.PendingProposals(); err == nil {
		p.Pending = len(ps)
	}
	if err := s.pages[name].Execute(&b, p); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail shows an error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.render(w, r, status, "error", "Error", "", errorPage{Status: status, Text: http.StatusText(status), Detail: err.Error()}, "")
}

// errorPage is what the error page shows: the status, in words, and the
// error itself.
type errorPage struct {
	Status       int
	Text, Detail string
}
