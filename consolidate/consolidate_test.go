package consolidate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

func episodics(n int) []*note.Note {
	var out []*note.Note
	for i := range n {
		e := note.New(note.TypeEpisodic, fmt.Sprintf("session %d", i), fmt.Sprintf("Ask: fix the build %d\nOutcome: used make -j2; token=hunter2secret", i), time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC))
		e.Project = "proj"
		e.Tags = []string{"session"}
		out = append(out, e)
	}
	return out
}

func durables(n int) []*note.Note {
	var out []*note.Note
	for i := range n {
		d := note.New(note.TypeSemantic, fmt.Sprintf("fact %d", i), fmt.Sprintf("fact body %d", i), time.Date(2026, 2, 1+i, 0, 0, 0, 0, time.UTC))
		d.Project = "proj"
		out = append(out, d)
	}
	return out
}

func newPlanner(t *testing.T, m Model, limits Limits) *Planner {
	return &Planner{Model: m, Budget: &Budget{Limits: limits, Path: filepath.Join(t.TempDir(), "budget.json")}}
}

func TestReflectThroughOpenAICompatible(t *testing.T) {
	f := &fakeOpenAI{replies: []func(w http.ResponseWriter){
		content("```json\n[{\"type\": \"procedural\", \"title\": \"Build with make -j2\", \"body\": \"Two cores: make -j2.\"}]\n```"),
	}}
	m := OpenAI{Provider: "deepseek", Model: "deepseek-chat", BaseURL: f.start(t), APIKey: "sk-test"}
	p := newPlanner(t, m, DefaultLimits())
	var plan Plan
	eps := episodics(5)
	if err := p.Project(context.Background(), "proj", eps, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Calls != 1 || len(plan.Proposals) != 1 || plan.Model != "deepseek/deepseek-chat" {
		t.Fatalf("plan %+v", plan)
	}
	pr := plan.Proposals[0]
	if pr.Kind != KindReflect || pr.Type != note.TypeProcedural || len(pr.Supersedes) != 5 || len(pr.Reflected) != 5 || !note.ValidID(pr.ID) {
		t.Fatalf("proposal %+v", pr)
	}
	sent := f.userContent(0)
	if strings.Contains(sent, "hunter2secret") || !strings.Contains(sent, "## session 0") {
		t.Fatalf("sent content not redacted or not rendered: %q", sent)
	}
	if f.auth[0] != "Bearer sk-test" || f.requests[0]["temperature"] != 0.2 {
		t.Fatalf("request %v auth %q", f.requests[0], f.auth[0])
	}
	// The same sources give the same id on another machine.
	var again Plan
	f.replies = append(f.replies, content(`[{"type":"procedural","title":"other words","body":"b"}]`))
	newPlanner(t, m, DefaultLimits()).Project(context.Background(), "proj", eps, &again)
	if again.Proposals[0].ID != pr.ID {
		t.Fatalf("ids differ: %s, %s", again.Proposals[0].ID, pr.ID)
	}
}

func TestBadRepliesApplyNothing(t *testing.T) {
	for name, reply := range map[string]func(w http.ResponseWriter){
		"malformed":    content(`[{"type": "semantic", "title": "no body"`),
		"wrong type":   content(`[{"type": "episodic", "title": "t", "body": "b"}]`),
		"prose":        content(`Sure! Here are your notes.`),
		"refusal":      refusal("I can't help with that"),
		"empty":        content("  "),
		"server error": status(503, "overloaded"),
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeOpenAI{replies: []func(w http.ResponseWriter){reply}}
			m := OpenAI{Provider: "local", Model: "m", BaseURL: f.start(t), APIKey: "x"}
			var plan Plan
			if err := newPlanner(t, m, DefaultLimits()).Project(context.Background(), "proj", episodics(5), &plan); err != nil {
				t.Fatal(err)
			}
			if len(plan.Proposals) != 0 || len(plan.Failed) != 1 || plan.Calls != 1 {
				t.Fatalf("plan %+v", plan)
			}
		})
	}
}

func TestMergeRepliesInPythonFormat(t *testing.T) {
	ds := durables(6)
	reply := fmt.Sprintf(`[{"action":"keep","keeper_id":%q,"superseded_ids":[%q]},
		{"action":"synthesize","type":"semantic","title":"t","body":"b","superseded_ids":[%q,%q]}]`, ds[0].ID, ds[1].ID, ds[2].ID, ds[3].ID)
	f := &fakeOpenAI{replies: []func(w http.ResponseWriter){content(reply)}}
	m := OpenAI{Provider: "openai", Model: "m", BaseURL: f.start(t), APIKey: "x"}
	var plan Plan
	if err := newPlanner(t, m, DefaultLimits()).Project(context.Background(), "proj", ds, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Proposals) != 2 || plan.Proposals[0].Kind != KindKeep || plan.Proposals[0].ID != ds[0].ID ||
		plan.Proposals[1].Kind != KindSynthesize || len(plan.Proposals[1].Supersedes) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	if !strings.Contains(f.userContent(0), "## ["+ds[5].ID+"] [semantic] fact 5") {
		t.Fatalf("merge content %q", f.userContent(0))
	}
	// An id that was not sent, or one in two groups, rejects the reply.
	for _, bad := range []string{
		`[{"action":"keep","keeper_id":"01ZZZZZZZZZZZZZZZZZZZZZZZZ","superseded_ids":["` + ds[1].ID + `"]}]`,
		`[{"action":"keep","keeper_id":"` + ds[0].ID + `","superseded_ids":["` + ds[0].ID + `"]}]`,
	} {
		valid := map[string]bool{}
		for _, d := range ds {
			valid[d.ID] = true
		}
		if _, err := ParseMerge(bad, valid); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestDedupSupersedesNewerCopies(t *testing.T) {
	ds := durables(3)
	ds[2].Body = "  " + ds[0].Body + "\n"
	props := Dedup("proj", ds)
	if len(props) != 1 || props[0].ID != ds[0].ID || !slices.Equal(props[0].Supersedes, []string{ds[2].ID}) {
		t.Fatalf("dedup %+v", props)
	}
}

func TestBudgetStopsBeforeTheCall(t *testing.T) {
	f := &fakeOpenAI{}
	m := OpenAI{Provider: "local", Model: "m", BaseURL: f.start(t), APIKey: "x"}
	// Run limit 0: no call at all.
	var plan Plan
	p := newPlanner(t, m, Limits{RunCalls: 0})
	if err := p.Project(context.Background(), "proj", episodics(5), &plan); err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 0 || !strings.Contains(plan.Stopped, "--max-calls 0") {
		t.Fatalf("requests %d, plan %+v", len(f.requests), plan)
	}
	// A day's characters: the second run of the day is refused.
	dir := t.TempDir()
	f.replies = append(f.replies, content(`[]`), content(`[]`))
	limits := Limits{RunCalls: 5, DayChars: 1500}
	b1 := &Budget{Limits: limits, Path: filepath.Join(dir, "b.json")}
	var p1 Plan
	(&Planner{Model: m, Budget: b1}).Project(context.Background(), "proj", episodics(5), &p1)
	if p1.Calls != 1 || p1.Proposals[0].Kind != KindReflected {
		t.Fatalf("first run %+v", p1)
	}
	b2 := &Budget{Limits: limits, Path: filepath.Join(dir, "b.json")}
	var p2 Plan
	(&Planner{Model: m, Budget: b2}).Project(context.Background(), "proj", episodics(5), &p2)
	if p2.Calls != 0 || !strings.Contains(p2.Stopped, "input characters") {
		t.Fatalf("second run %+v", p2)
	}
	s, _ := b2.Today()
	if s.Calls != 1 || s.Chars == 0 {
		t.Fatalf("spent %+v", s)
	}
	// A new day starts afresh.
	b3 := &Budget{Limits: limits, Path: filepath.Join(dir, "b.json"), Now: func() time.Time { return time.Now().Add(48 * time.Hour) }}
	if err := b3.Allow(100); err != nil {
		t.Fatal(err)
	}
}

func TestDollarsPerDay(t *testing.T) {
	b := &Budget{Limits: Limits{RunCalls: 10, DayUSD: 1}, Path: filepath.Join(t.TempDir(), "b.json")}
	if err := b.Record(10, 1.25); err != nil {
		t.Fatal(err)
	}
	if err := b.Allow(10); !errors.Is(err, ErrBudget) {
		t.Fatalf("allowed after $1.25 of $1: %v", err)
	}
}

func TestSettingsAsThePythonTool(t *testing.T) {
	env := map[string]string{"DEEPSEEK_API_KEY": "sk-env", "ANAMNESIS_REFLECTION_TIMEOUT": "bad"}
	s := ResolveSettings(func(k string) string { return env[k] },
		[]byte(`{"provider":"DeepSeek","model":"deepseek-chat","base_url":"https://api.deepseek.com","api_key":"sk-file","max_tokens":1000,"auto":"yes"}`))
	if s.Provider != "deepseek" || s.APIKey != "sk-env" || s.MaxTokens != 1000 || s.Timeout != 30*time.Second || !s.Auto {
		t.Fatalf("%+v", s)
	}
	m, err := NewModel(s, 0)
	if err != nil || m.Name() != "deepseek/deepseek-chat" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := NewModel(ResolveSettings(func(string) string { return "" }, nil), 0); err == nil {
		t.Fatal("heuristic built a model")
	}
	if m, _ := NewModel(ResolveSettings(func(k string) string {
		return map[string]string{"ANAMNESIS_REFLECTION_PROVIDER": "claude"}[k]
	}, nil), 0); m.Name() != "claude-code" {
		t.Fatalf("claude: %v", m)
	}
}
