// Package locomo converts the LoCoMo long-term conversation benchmark into
// notes and queries exactly as the retrieval protocol in
// shared/reference/bench-protocol.md §3 describes (basic-memory's
// converter), so recall figures are comparable with published ones. It
// also implements that protocol's grep baseline (§5.2). The data set is
// CC BY-NC 4.0: it is read from a path given at run time, never shipped.
package locomo

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/eval"
)

// Session is one converted conversation session: one note.
type Session struct {
	ID    string // locomo-c00-s01
	Title string
	Body  string // heading, "## Conversation", one bullet per turn
}

// Question is one QA item with its ground truth.
type Question struct {
	ID       string // locomo-c00-q0000
	Category int
	Case     eval.Case
}

var (
	sessionKey  = regexp.MustCompile(`^session_(\d+)$`)
	evidenceRef = regexp.MustCompile(`^D(\d+):`)
)

type turn struct {
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// Load reads the per-conversation files of dir (numeric file-name order)
// and returns every session note and every question.
func Load(dir string) ([]Session, []Question, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no LoCoMo conversation files (*.json) in %s", dir)
	}
	sort.Slice(files, func(i, j int) bool { return fileNum(files[i]) < fileNum(files[j]) })
	var sessions []Session
	var questions []Question
	for c, f := range files {
		s, q, err := convert(c, f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		sessions = append(sessions, s...)
		questions = append(questions, q...)
	}
	return sessions, questions, nil
}

func fileNum(p string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".json"))
	if err != nil {
		return math.MaxInt
	}
	return n
}

// convert reads conversation c's file: its sessions and its questions.
func convert(c int, path string) ([]Session, []Question, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, err
	}
	if conv, ok := raw["conversation"]; ok { // the combined locomo10.json shape
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(conv, &inner); err == nil {
			qa := raw["qa"]
			raw = inner
			raw["qa"] = qa
		}
	}
	sessions, exists, err := sessionsOf(c, raw)
	if err != nil {
		return nil, nil, err
	}
	questions, err := questionsOf(c, raw["qa"], exists)
	if err != nil {
		return nil, nil, err
	}
	return sessions, questions, nil
}

// sessionsOf reads the conversation's session_N lists of turns, in order
// of N, and says which N exist.
func sessionsOf(c int, raw map[string]json.RawMessage) ([]Session, map[int]bool, error) {
	var nums []int
	for k, v := range raw {
		if m := sessionKey.FindStringSubmatch(k); m != nil && len(v) > 0 && v[0] == '[' {
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	exists := map[int]bool{}
	var sessions []Session
	for _, n := range nums {
		exists[n] = true
		var turns []turn
		if err := json.Unmarshal(raw[fmt.Sprintf("session_%d", n)], &turns); err != nil {
			return nil, nil, fmt.Errorf("session_%d: %w", n, err)
		}
		var date string
		if d, ok := raw[fmt.Sprintf("session_%d_date_time", n)]; ok {
			json.Unmarshal(d, &date)
		}
		sessions = append(sessions, render(c, n, strings.TrimSpace(date), turns))
	}
	return sessions, exists, nil
}

// questionsOf reads the conversation's questions; each is relevant to
// the existing sessions its evidence names ("D3:12" is session 3).
func questionsOf(c int, q json.RawMessage, exists map[int]bool) ([]Question, error) {
	var qa []struct {
		Question string   `json:"question"`
		Evidence []string `json:"evidence"`
		Category int      `json:"category"`
	}
	if len(q) > 0 {
		if err := json.Unmarshal(q, &qa); err != nil {
			return nil, fmt.Errorf("qa: %w", err)
		}
	}
	var questions []Question
	for i, item := range qa {
		questions = append(questions, Question{
			ID: fmt.Sprintf("locomo-c%02d-q%04d", c, i), Category: item.Category,
			Case: eval.Case{Query: strings.TrimSpace(item.Question), Relevant: evidenceSessions(c, item.Evidence, exists), Group: fmt.Sprintf("category %d", item.Category)},
		})
	}
	return questions, nil
}

// evidenceSessions are the ids of the existing sessions evidence refers
// to, each once, in order; never nil.
func evidenceSessions(c int, evidence []string, exists map[int]bool) []string {
	gt := []string{}
	seen := map[string]bool{}
	for _, ev := range evidence {
		m := evidenceRef.FindStringSubmatch(strings.TrimSpace(ev))
		if m == nil {
			continue // "D", "D:11:26"
		}
		n, _ := strconv.Atoi(m[1])
		id := sessionID(c, n)
		if exists[n] && !seen[id] {
			seen[id] = true
			gt = append(gt, id)
		}
	}
	return gt
}

func sessionID(c, n int) string { return fmt.Sprintf("locomo-c%02d-s%02d", c, n) }

func render(c, n int, date string, turns []turn) Session {
	id := sessionID(c, n)
	s := Session{ID: id, Title: id}
	heading := "# " + id
	if date != "" {
		s.Title = id + " (" + date + ")"
		heading = "# Chat session at " + date
	}
	var b strings.Builder
	b.WriteString(heading + "\n\n## Conversation\n")
	for _, t := range turns {
		text := strings.TrimSpace(t.Text)
		if text == "" {
			continue
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", t.Speaker, text)
	}
	s.Body = strings.TrimSuffix(b.String(), "\n")
	return s
}

var (
	grepTerm  = regexp.MustCompile(`[a-z0-9][a-z0-9'\-]*`)
	grepStops = map[string]bool{}
)

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by did do does for from had has have how i in is it of on or that the
their they this to was we were what when where which who whom whose why will with you your`) {
		grepStops[w] = true
	}
}

// Grep ranks sessions as the protocol's grep baseline: substring counts of
// the question's non-stopword terms, score sum(1+ln c) * (matched/terms)^2,
// stable order by session, top k.
func Grep(sessions []Session, query string, k int) []string {
	var terms []string
	for _, t := range grepTerm.FindAllString(strings.ToLower(query), -1) {
		if !grepStops[t] {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	type scored struct {
		id    string
		score float64
	}
	var out []scored
	for _, s := range sessions {
		text := strings.ToLower(s.Body)
		matched, sum := 0, 0.0
		for _, t := range terms {
			if c := strings.Count(text, t); c > 0 {
				matched++
				sum += 1 + math.Log(float64(c))
			}
		}
		if matched > 0 {
			r := float64(matched) / float64(len(terms))
			out = append(out, scored{s.ID, sum * r * r})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	var ids []string
	for i := 0; i < len(out) && i < k; i++ {
		ids = append(ids, out[i].id)
	}
	return ids
}
