package anamnesis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// scripted is a Model answering reflect and merge requests from scripts.
type scripted struct {
	name           string
	reflect, merge func(user string) string
	calls          int
}

func (m *scripted) Name() string { return m.name }
func (m *scripted) Complete(_ context.Context, req consolidate.Request) (consolidate.Reply, error) {
	m.calls++
	if req.System == consolidate.ReflectSystemPrompt && m.reflect != nil {
		return consolidate.Reply{Text: m.reflect(req.User)}, nil
	}
	if req.System == consolidate.MergeSystemPrompt && m.merge != nil {
		return consolidate.Reply{Text: m.merge(req.User)}, nil
	}
	return consolidate.Reply{Text: "[]"}, nil
}

func planner(t *testing.T, m consolidate.Model) *consolidate.Planner {
	return &consolidate.Planner{Model: m, Budget: &consolidate.Budget{Limits: consolidate.DefaultLimits(), Path: filepath.Join(t.TempDir(), "b.json")}}
}

var sessionTopics = []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"}

// writeSessions writes five episodic notes and a few durable ones in project p.
func writeSessions(t *testing.T, s *Store, p string) []string {
	var ids []string
	for _, topic := range sessionTopics {
		n, _, err := s.Write(ctx, WriteRequest{Type: note.TypeEpisodic, Project: p, Title: "session: " + topic,
			Body: "Ask: " + topic + "\nOutcome: settled the " + topic + " with make -j2", Tags: []string{"session"}, ProvSource: "session-end"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	return ids
}

// goodReflection covers every session's topic, so recall does not drop.
func goodReflection(string) string {
	return `[{"type":"procedural","title":"Project routines: ` + strings.Join(sessionTopics, ", ") + `","body":"` +
		strings.Join(sessionTopics, "; ") + `: each settled with make -j2."}]`
}

// liveIDs lists the project's notes search and SessionStart may show.
func liveIDs(t *testing.T, s *Store, p string) []string {
	notes, err := s.List(ctx, index.Filter{Project: p, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range notes {
		out = append(out, h.ID)
	}
	return out
}

func TestConsolidateIsOneCommitAndUndoRestores(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	eps := writeSessions(t, s, "proj")
	m := &scripted{name: "fake/model", reflect: goodReflection}
	// Without --apply nothing changes.
	dry, err := s.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, m)})
	if err != nil || len(dry.Plan.Proposals) != 1 || dry.Run != "" {
		t.Fatalf("dry run %+v %v", dry, err)
	}
	headBefore := testutil.Git(t, s.memory.Root, "rev-parse", "HEAD")
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, m), Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 1 || rep.Run == "" || rep.RecallAfter < rep.RecallBefore || rep.GateCases == 0 {
		t.Fatalf("report %+v", rep)
	}
	// One commit, saying what and by which model.
	if n := testutil.Git(t, s.memory.Root, "rev-list", "--count", strings.TrimSpace(headBefore)+"..HEAD"); strings.TrimSpace(n) != "1" {
		t.Fatalf("%s commits", n)
	}
	msg := testutil.Git(t, s.memory.Root, "log", "-1", "--format=%B")
	if !strings.HasPrefix(msg, "anamnesis: consolidate by fake/model on testbox") || !strings.Contains(msg, "reflect proj:") {
		t.Fatalf("message %q", msg)
	}
	distilled := rep.Applied[0].ID
	// Python-compatible frontmatter; sources keep their files, tagged.
	n, path, data, err := s.GetFile(ctx, distilled)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prov_source: reflection", "prov_model: fake/model", "confidence: 0.6", "- reflection", "supersedes:"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q:\n%s", path, want, data)
		}
	}
	if len(n.Supersedes) != 5 {
		t.Errorf("supersedes %v", n.Supersedes)
	}
	for _, id := range eps {
		e, _, err := s.Get(ctx, id)
		if err != nil || !slices.Contains(e.Tags, consolidate.TagReflected) {
			t.Errorf("source %s: %v %v", id, e, err)
		}
	}
	// SessionStart shows the distilled note, not the sessions it came from.
	live := liveIDs(t, s, "proj")
	if !slices.Contains(live, distilled) || slices.ContainsFunc(live, func(id string) bool { return slices.Contains(eps, id) }) {
		t.Errorf("live %v", live)
	}
	injected, _, _, err := s.Inject(ctx, "proj", 8)
	if err != nil || len(injected) != 1 || injected[0].ID != distilled {
		t.Errorf("SessionStart injects %v (%v)", hitIDs(injected), err)
	}
	runs, err := s.ConsolidateLog(ctx, 100)
	if err != nil || len(runs) != 1 || runs[0].Run != rep.Run || runs[0].Model != "fake/model" {
		t.Fatalf("log %+v %v", runs, err)
	}
	// Undo: a new commit; the sessions are shown again, untagged.
	if _, err := s.UndoConsolidate(ctx, ""); err != nil {
		t.Fatal(err)
	}
	live = liveIDs(t, s, "proj")
	for _, id := range eps {
		e, _, _ := s.Get(ctx, id)
		if !slices.Contains(live, id) || slices.Contains(e.Tags, consolidate.TagReflected) {
			t.Errorf("after undo %s: live %v tags %v", id, slices.Contains(live, id), e.Tags)
		}
	}
	if slices.Contains(live, distilled) {
		t.Errorf("distilled note still injected after undo")
	}
	if got := testutil.Git(t, s.memory.Root, "log", "--format=%s", "-2"); !strings.HasPrefix(got, "anamnesis: undo consolidate "+rep.Run) {
		t.Errorf("log %q", got)
	}
	runs, _ = s.ConsolidateLog(ctx, 100)
	if runs[0].UndoneBy == "" {
		t.Errorf("run not marked undone: %+v", runs[0])
	}
	if _, err := s.UndoConsolidate(ctx, ""); err == nil {
		t.Error("undid a second time")
	}
}

// TestRecallGateRejectsALossyMerge: a synthesis that drops what its
// sources said lowers recall on the store's own questions and is not
// applied; a faithful one is.
func TestRecallGateRejectsALossyMerge(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	var ids []string
	for i, topic := range []string{"heron deploy window is tuesday", "kestrel cache flush uses redis-cli", "osprey schema migrations run with goose", "plover lint rules live in .golangci.yml", "wren release notes come from git-cliff"} {
		n, _, err := s.Write(ctx, WriteRequest{Type: note.TypeSemantic, Project: "proj", Title: fmt.Sprintf("fact %d: %s", i, topic), Body: topic})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	lossy := &scripted{name: "fake/lossy", merge: func(string) string {
		return fmt.Sprintf(`[{"action":"synthesize","type":"semantic","title":"misc","body":"various things","superseded_ids":[%q,%q,%q]}]`, ids[0], ids[1], ids[2])
	}}
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, lossy), Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Applied) != 0 || len(rep.Rejected) != 1 || rep.Run != "" || rep.RecallAfter != rep.RecallBefore {
		t.Fatalf("lossy merge: %+v", rep)
	}
	if live := liveIDs(t, s, "proj"); len(live) != 5 {
		t.Fatalf("live after a rejected merge: %v", live)
	}
	faithful := &scripted{name: "fake/faithful", merge: func(string) string {
		return fmt.Sprintf(`[{"action":"keep","keeper_id":%q,"superseded_ids":[%q]}]`, ids[0], ids[1])
	}}
	// A keep is gated too: the keeper stands for what it hides (eval counts
	// a superseded note as found through its superseder), so it passes.
	rep, err = s.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, faithful), Apply: true})
	if err != nil || len(rep.Applied) != 1 || rep.RecallAfter < rep.RecallBefore {
		t.Fatalf("keep: %+v %v", rep, err)
	}
	keeper, _, _ := s.Get(ctx, ids[0])
	if !slices.Contains(keeper.Supersedes, ids[1]) || !slices.Contains(keeper.Tags, consolidate.TagMerged) {
		t.Fatalf("keeper %+v", keeper)
	}
}

func TestReviewKeepsProposalsPending(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	eps := writeSessions(t, s, "proj")
	m := &scripted{name: "fake/model", reflect: goodReflection}
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, m), Review: true})
	if err != nil || len(rep.Pending) != 1 || rep.Run != "" {
		t.Fatalf("review %+v %v", rep, err)
	}
	// Pending: nothing written, the sessions still injected.
	if live := liveIDs(t, s, "proj"); len(live) != 5 {
		t.Fatalf("live while pending %v", live)
	}
	pend, _ := s.PendingProposals()
	if len(pend) != 1 || pend[0].Proposal.Kind != consolidate.KindReflect {
		t.Fatalf("pending %+v", pend)
	}
	run, err := s.ReviewPending(ctx, pend[0].ID, true)
	if err != nil || run == "" {
		t.Fatalf("accept: %s %v", run, err)
	}
	if live := liveIDs(t, s, "proj"); slices.Contains(live, eps[0]) || len(live) != 1 {
		t.Fatalf("live after accept %v", live)
	}
	if pend, _ := s.PendingProposals(); len(pend) != 0 {
		t.Fatalf("still pending %+v", pend)
	}
	if _, err := s.ReviewPending(ctx, "nope", false); err == nil {
		t.Fatal("discarded an unknown proposal")
	}
}

func openRemote(t *testing.T, home, machine, hub string) *Store {
	s, err := Open(ctx, home, Options{MachineID: machine, Create: true, Remote: hub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func syncOK(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.Sync(ctx, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
}

func reflectionNotes(t *testing.T, s *Store) []string {
	var out []string
	hits, err := s.List(ctx, index.Filter{Project: "proj"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.ProvSource == consolidate.ProvReflection && h.ConflictOf == "" {
			out = append(out, h.ID)
		}
	}
	return out
}

// TestTwoMachinesConsolidate: the desk's run reaches the laptop with a
// sync, and the laptop, syncing first, finds nothing left to distil; two
// runs at once distil to the same id rather than two sets of notes; a run
// undone on the laptop is undone on the desk after a sync.
func TestTwoMachinesConsolidate(t *testing.T) {
	hub := testutil.BareHub(t)
	desk := openRemote(t, t.TempDir(), "desk", hub)
	writeSessions(t, desk, "proj")
	syncOK(t, desk)
	laptop := openRemote(t, t.TempDir(), "laptop", hub)
	syncOK(t, laptop)

	// At once: both plan from the same sources; different words, same id.
	other := func(string) string {
		return `[{"type":"procedural","title":"Routines (laptop's words): ` + strings.Join(sessionTopics, ", ") + `","body":"` + strings.Join(sessionTopics, ", ") + ` with make -j2"}]`
	}
	r1, err := desk.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, &scripted{name: "a", reflect: goodReflection}), Apply: true})
	if err != nil || len(r1.Applied) != 1 {
		t.Fatalf("desk %+v %v", r1, err)
	}
	r2, err := laptop.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, &scripted{name: "b", reflect: other}), Apply: true})
	if err != nil || len(r2.Applied) != 1 {
		t.Fatalf("laptop %+v %v", r2, err)
	}
	if r1.Applied[0].ID != r2.Applied[0].ID {
		t.Fatalf("two machines distilled to two ids: %s, %s", r1.Applied[0].ID, r2.Applied[0].ID)
	}
	syncOK(t, desk)
	syncOK(t, laptop)
	syncOK(t, desk)
	if ids := reflectionNotes(t, laptop); len(ids) != 1 {
		t.Fatalf("laptop holds %d live distilled notes: %v", len(ids), ids)
	}
	// Synced first, the next run finds nothing to distil.
	m := &scripted{name: "c", reflect: goodReflection}
	r3, err := laptop.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, m), Apply: true})
	if err != nil || m.calls != 0 || len(r3.Plan.Proposals) != 0 {
		t.Fatalf("second run %+v calls %d %v", r3, m.calls, err)
	}
	// The id both wrote is one note and, its texts differing, a conflict
	// copy, which the run settles: two syntheses of the same sources.
	if cs, err := laptop.Conflicts(ctx); err != nil || len(cs) == 0 || len(cs[0].Copies) != 1 {
		t.Fatalf("conflicts %+v %v", cs, err)
	}
	settled, err := laptop.SettleConsolidation(ctx, []string{r2.Applied[0].ID})
	if err != nil || len(settled) != 1 {
		t.Fatalf("settled %v %v", settled, err)
	}
	if cs, _ := laptop.Conflicts(ctx); len(cs) != 0 {
		t.Fatalf("conflicts left %+v", cs)
	}
	syncOK(t, laptop)
	syncOK(t, desk)
	for _, s := range []*Store{desk, laptop} {
		if live := liveIDs(t, s, "proj"); len(live) != 1 || live[0] != r1.Applied[0].ID {
			t.Fatalf("%s live %v", s.machineID, live)
		}
	}
}

// TestUndoAfterSync: a run applied on the desk and synced is undone on
// the laptop; after a sync the desk shows the sessions again.
func TestUndoAfterSync(t *testing.T) {
	hub := testutil.BareHub(t)
	desk := openRemote(t, t.TempDir(), "desk", hub)
	eps := writeSessions(t, desk, "proj")
	rep, err := desk.Consolidate(ctx, ConsolidateOptions{Planner: planner(t, &scripted{name: "a", reflect: goodReflection}), Apply: true})
	if err != nil || rep.Run == "" {
		t.Fatalf("%+v %v", rep, err)
	}
	syncOK(t, desk)
	laptop := openRemote(t, t.TempDir(), "laptop", hub)
	syncOK(t, laptop)
	runs, err := laptop.ConsolidateLog(ctx, 100)
	if err != nil || len(runs) != 1 || runs[0].Run != rep.Run {
		t.Fatalf("laptop's log %+v %v", runs, err)
	}
	if _, err := laptop.UndoConsolidate(ctx, rep.Run[:10]); err != nil {
		t.Fatal(err)
	}
	syncOK(t, laptop)
	syncOK(t, desk)
	live := liveIDs(t, desk, "proj")
	slices.Sort(live)
	slices.Sort(eps)
	if !slices.Equal(live, eps) {
		t.Fatalf("desk after the laptop's undo: %v, want %v", live, eps)
	}
	if runs, _ := desk.ConsolidateLog(ctx, 100); runs[0].UndoneBy == "" {
		t.Fatalf("desk's log %+v", runs)
	}
}

func TestBudgetStateIsShared(t *testing.T) {
	home := t.TempDir()
	s, _ := openHome(t, home)
	writeSessions(t, s, "proj")
	b := &consolidate.Budget{Limits: consolidate.Limits{RunCalls: 5, DayCalls: 1}, Path: filepath.Join(home, "state", "b.json")}
	m := &scripted{name: "m", reflect: goodReflection}
	s.Consolidate(ctx, ConsolidateOptions{Planner: &consolidate.Planner{Model: m, Budget: b}})
	b2 := &consolidate.Budget{Limits: b.Limits, Path: b.Path}
	rep, _ := s.Consolidate(ctx, ConsolidateOptions{Planner: &consolidate.Planner{Model: m, Budget: b2}})
	if m.calls != 1 || !strings.Contains(rep.Plan.Stopped, "1 of 1 call(s) today") {
		t.Fatalf("calls %d, %+v", m.calls, rep.Plan)
	}
	data, _ := os.ReadFile(b.Path)
	var spent consolidate.Spent
	if json.Unmarshal(data, &spent) != nil || spent.Calls != 1 {
		t.Fatalf("state %s", data)
	}
}

// pythonReader is the Python tool's _deserialize (inventory §4.3) plus the
// CHECK its SQLite schema puts on prov_source: it prints one JSON line per
// note file, or fails.
const pythonReader = `
import json, sys, yaml
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read()
    if not text.startswith("---\n"):
        raise ValueError("memory file missing YAML front-matter")
    front, _, body = text[4:].partition("\n---\n")
    meta = yaml.safe_load(front) or {}
    m = {k: meta[k] for k in ("id", "type", "title")}
    m["prov_source"] = meta.get("prov_source", "human")
    assert m["prov_source"] in ("human", "session-end", "reflection", "import", "merge"), m["prov_source"]
    m["confidence"] = float(meta.get("confidence", 1.0))
    sup = meta.get("supersedes")
    m["supersedes"] = [] if sup is None else [sup] if isinstance(sup, str) else [str(v) for v in sup]
    m["tags"] = list(meta.get("tags") or [])
    for k in ("created_at", "updated_at", "prov_model"):
        assert isinstance(meta.get(k, ""), str), (k, meta.get(k))
    print(json.dumps(m))
`

// TestPythonToolReadsConsolidatedNotes: the files a run writes and edits
// load in the Python tool's reader with the values its schema accepts.
func TestPythonToolReadsConsolidatedNotes(t *testing.T) {
	if err := exec.Command("python3", "-c", "import yaml").Run(); err != nil {
		t.Skip("python3 with PyYAML is not installed")
	}
	s, _ := openHome(t, t.TempDir())
	eps := writeSessions(t, s, "proj")
	var facts []string
	for _, body := range []string{"the heron deploy window is tuesday", "the heron deploy window is tuesday morning"} {
		n, _, _ := s.Write(ctx, WriteRequest{Type: note.TypeSemantic, Project: "proj", Title: body, Body: body})
		facts = append(facts, n.ID)
	}
	m := &scripted{name: "deepseek/deepseek-chat", reflect: goodReflection, merge: func(string) string {
		return fmt.Sprintf(`[{"action":"synthesize","type":"semantic","title":"Heron deploys","body":"the heron deploy window is tuesday morning","superseded_ids":[%q,%q]}]`, facts[0], facts[1])
	}}
	p := planner(t, m)
	p.MinDurable = 2
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: p, Apply: true, NoGate: true})
	if err != nil || len(rep.Applied) != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	files, _ := filepath.Glob(filepath.Join(s.memory.Root, "*", "*.md"))
	out, err := exec.Command("python3", append([]string{"-c", pythonReader}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the Python reader failed: %v\n%s", err, out)
	}
	byID := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(line), &m)
		byID[m["id"].(string)] = m
	}
	for _, a := range rep.Applied {
		got := byID[a.ID]
		want := map[string]string{consolidate.KindReflect: "reflection", consolidate.KindSynthesize: "merge"}[a.Kind]
		if got["prov_source"] != want || got["confidence"] != 0.6 || len(got["supersedes"].([]any)) != len(a.Supersedes) {
			t.Errorf("%s as Python reads it: %v", a.Kind, got)
		}
	}
	if tags := fmt.Sprint(byID[eps[0]]["tags"]); !strings.Contains(tags, "reflected") {
		t.Errorf("source's tags as Python reads them: %s", tags)
	}
}

// TestDedupWithoutAModel: identical bodies are superseded by the oldest
// copy with no model configured, and the run names that.
func TestDedupWithoutAModel(t *testing.T) {
	s, _ := openHome(t, t.TempDir())
	var ids []string
	for range 3 {
		n, _, err := s.Write(ctx, WriteRequest{Type: note.TypeSemantic, Project: "proj", Title: "tabs", Body: "The user prefers tabs."})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	rep, err := s.Consolidate(ctx, ConsolidateOptions{Planner: &consolidate.Planner{Budget: &consolidate.Budget{Path: filepath.Join(t.TempDir(), "b")}}, Apply: true})
	if err != nil || len(rep.Applied) != 1 || rep.Applied[0].Kind != consolidate.KindDedup || rep.Applied[0].ID != ids[0] {
		t.Fatalf("%+v %v", rep, err)
	}
	if live := liveIDs(t, s, "proj"); len(live) != 1 || live[0] != ids[0] {
		t.Fatalf("live %v", live)
	}
	if msg := testutil.Git(t, s.memory.Root, "log", "-1", "--format=%s"); !strings.Contains(msg, "by "+NoModel) {
		t.Fatalf("message %q", msg)
	}
}
