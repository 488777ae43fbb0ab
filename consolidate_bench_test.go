package anamnesis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// monthTopics are what a project's sessions keep coming back to.
var monthTopics = []string{"deploy pipeline", "flaky integration test", "database migration", "cache invalidation",
	"release notes", "lint configuration", "api pagination", "auth token refresh", "metrics dashboard",
	"docker image size", "dependency upgrade", "log rotation"}

// topicDistiller distils like a careful model: one durable note per topic
// the sessions mention, holding every distinct outcome; merges nothing.
type topicDistiller struct{}

func (topicDistiller) Name() string { return "bench/topic-distiller" }

var outcomeLine = regexp.MustCompile(`(?m)^Outcome: (.*)$`)

func (topicDistiller) Complete(_ context.Context, req consolidate.Request) (consolidate.Reply, error) {
	if req.System != consolidate.ReflectSystemPrompt {
		return consolidate.Reply{Text: "[]"}, nil
	}
	var out []string
	for _, topic := range monthTopics {
		seen := map[string]bool{}
		var facts []string
		for _, sec := range strings.Split(req.User, "\n\n## ") {
			if !strings.Contains(sec, topic) {
				continue
			}
			for _, m := range outcomeLine.FindAllStringSubmatch(sec, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					facts = append(facts, "- "+m[1])
				}
			}
		}
		if len(facts) > 0 {
			out = append(out, fmt.Sprintf(`{"type":"procedural","title":"How we handle the %s","body":%q}`, topic, strings.Join(facts, "\n")))
		}
	}
	return consolidate.Reply{Text: "[" + strings.Join(out, ",") + "]"}, nil
}

// TestConsolidateMonthsOfSessions measures a project after three months of
// daily sessions, before and after one consolidation run: live notes, the
// characters SessionStart spends on the project, and recall@8 on the
// store's own questions. ANAMNESIS_BENCH_CONSOLIDATE=1 runs it (`make
// bench-consolidate`).
func TestConsolidateMonthsOfSessions(t *testing.T) {
	if os.Getenv("ANAMNESIS_BENCH_CONSOLIDATE") == "" {
		t.Skip("set ANAMNESIS_BENCH_CONSOLIDATE=1 (make bench-consolidate)")
	}
	home := t.TempDir()
	day := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	now := day
	s, err := Open(ctx, home, Options{MachineID: "desk", Create: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const days = 90
	for i := range days {
		now = day.Add(time.Duration(i) * 24 * time.Hour)
		topic := monthTopics[(i*7)%len(monthTopics)]
		body := fmt.Sprintf("Ask: look at the %s again (day %d)\nFiles: internal/%s.go\nOutcome: the %s needs step %d, checked with make check-%d",
			topic, i, strings.ReplaceAll(topic, " ", "_"), topic, i%5, i%5)
		if _, _, err := s.Write(ctx, WriteRequest{Type: note.TypeEpisodic, Project: "svc", Title: fmt.Sprintf("session %d: %s", i, topic),
			Body: body, Tags: []string{"session"}, ProvSource: "session-end"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, topic := range monthTopics[:6] {
		body := fmt.Sprintf("The %s is owned by the platform team; ask in #platform before changing it.", topic)
		for range 1 + i%2 { // every other one written twice: dedup's work
			s.Write(ctx, WriteRequest{Type: note.TypeSemantic, Project: "svc", Title: "Owner of the " + topic, Body: body})
		}
	}
	cwd := filepath.Join(t.TempDir(), "svc")
	os.MkdirAll(filepath.Join(cwd, ".anamnesis"), 0o755)
	os.WriteFile(filepath.Join(cwd, ".anamnesis", "project"), []byte("svc\n"), 0o644)
	facts := map[string]bool{} // each session's outcome, as it is written
	for i := range days {
		topic := monthTopics[(i*7)%len(monthTopics)]
		facts[fmt.Sprintf("the %s needs step %d", topic, i%5)] = true
	}
	var shown int
	measure := func() (live, chars int) {
		hits, err := s.List(ctx, index.Filter{Project: "svc", Live: true})
		if err != nil {
			t.Fatal(err)
		}
		out, err := claudecode.SessionStart(ctx, claudecode.Env{Memory: s, StateDir: t.TempDir(), UserHome: filepath.Dir(cwd)},
			claudecode.Input{SessionID: "bench", Cwd: cwd, Source: "startup"})
		if err != nil {
			t.Fatal(err)
		}
		shown = 0
		for f := range facts {
			if strings.Contains(out, f) {
				shown++
			}
		}
		return len(hits), len(out)
	}
	cases, err := s.SelfCases(ctx, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	recall := func() float64 {
		r, err := s.Evaluate(ctx, cases, []int{8}, "fts")
		if err != nil {
			t.Fatal(err)
		}
		return r.Recall["8"]
	}
	liveBefore, charsBefore := measure()
	shownBefore := shown
	recallBefore := recall()
	start := time.Now()
	p := &consolidate.Planner{Model: topicDistiller{}, Budget: &consolidate.Budget{Limits: consolidate.DefaultLimits(), Path: filepath.Join(home, "state", "b.json")}}
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: p, Apply: true, GateCases: 200})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	liveAfter, charsAfter := measure()
	fmt.Printf("consolidate, %d days of sessions in one project (%d session notes, 9 durable notes of which 3 duplicates):\n", days, days)
	fmt.Printf("  live notes of the project        %d -> %d\n", liveBefore, liveAfter)
	fmt.Printf("  SessionStart characters          %d -> %d\n", charsBefore, charsAfter)
	fmt.Printf("  session outcomes SessionStart carries  %d -> %d of %d\n", shownBefore, shown, len(facts))
	fmt.Printf("  recall@8, %d own questions       %.3f -> %.3f (gate: %.3f -> %.3f)\n", len(cases), recallBefore, recall(), rep.RecallBefore, rep.RecallAfter)
	fmt.Printf("  proposals applied / rejected     %d / %d; model calls %d, %d input characters\n", len(rep.Applied), len(rep.Rejected), rep.Plan.Calls, rep.Plan.Chars)
	fmt.Printf("  run time (gate included)         %v\n", took.Round(time.Millisecond))
}
