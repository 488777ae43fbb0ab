package claudecode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

var ctx = context.Background()

func store(t *testing.T) *anamnesis.Store {
	t.Helper()
	s, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: "test", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The hooks run against the real Store.
var _ claudecode.Memory = (*anamnesis.Store)(nil)

func envFor(s *anamnesis.Store, userHome string) claudecode.Env {
	return claudecode.Env{Memory: s, StateDir: filepath.Join(s.Home(), "state"), UserHome: userHome}
}

func projectDir(t *testing.T, key string) (cwd, userHome string) {
	userHome = t.TempDir()
	cwd = filepath.Join(userHome, "src", "app")
	os.MkdirAll(filepath.Join(cwd, ".anamnesis"), 0o755)
	os.WriteFile(filepath.Join(cwd, ".anamnesis", "project"), []byte(key), 0o644)
	return cwd, userHome
}

func context_(t *testing.T, out, event string) string {
	t.Helper()
	var o struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("output is not the hook JSON: %v\n%s", err, out)
	}
	if o.HookSpecificOutput.HookEventName != event {
		t.Fatalf("hookEventName %q", o.HookSpecificOutput.HookEventName)
	}
	return o.HookSpecificOutput.AdditionalContext
}

func write(t *testing.T, s *anamnesis.Store, r anamnesis.WriteRequest) *note.Note {
	t.Helper()
	n, _, err := s.Write(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSessionStartSelectsAndRenders(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "demo")
	g := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "User prefers tabs", Body: "Go code uses tabs."})
	old := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "old fact", Body: "outdated", Project: "demo"})
	write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "new fact", Body: "current", Project: "demo", Supersedes: []string{old.ID}})
	write(t, s, anamnesis.WriteRequest{Type: "procedural", Title: "Deploy", Body: "make release", Project: "demo"})
	write(t, s, anamnesis.WriteRequest{Type: "episodic", Title: "reflected session", Body: "x", Project: "demo", Tags: []string{"reflected"}})
	for i := 0; i < 3; i++ {
		write(t, s, anamnesis.WriteRequest{Type: "episodic", Title: fmt.Sprintf("session %d", i), Body: "did things", Project: "demo"})
	}
	write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "other project", Body: "nope", Project: "elsewhere"})
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "s1", Cwd: cwd, Source: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	for _, want := range []string{g.Title, "new fact", "Deploy", "session 2", "session 1", `project="demo"`, "memory_search"} {
		if !strings.Contains(c, want) {
			t.Errorf("context lacks %q:\n%s", want, c)
		}
	}
	for _, not := range []string{"old fact", "reflected session", "session 0", "other project"} {
		if strings.Contains(c, not) {
			t.Errorf("context should not have %q", not)
		}
	}
	if !strings.HasPrefix(c, "<anamnesis-memory") || !strings.HasSuffix(c, "</anamnesis-memory>") {
		t.Error("context not wrapped")
	}
}

func TestSessionStartStaysWithinBudget(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "big")
	long := strings.Repeat("A long paragraph of remembered detail. ", 60) // ~2,400 chars
	for i := 0; i < 12; i++ {
		write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("global %d", i), Body: long})
	}
	huge := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "huge", Body: strings.Repeat("x", 20000), Project: "big"})
	write(t, s, anamnesis.WriteRequest{Type: "procedural", Title: "small project note", Body: "short", Project: "big"})
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "s1", Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	if len(out) > 10000 || len(c) > claudecode.ContextBudget {
		t.Fatalf("context %d chars, output %d", len(c), len(out))
	}
	if strings.Contains(c, huge.Title+"\n") || !strings.Contains(c, "small project note") {
		t.Error("whole notes only, smaller later notes still fit")
	}
	// Nothing evicted in silence: what does not fit whole is named by
	// title and id.
	if !strings.Contains(c, "- huge (id "+huge.ID+")") || !strings.Contains(c, "- global: global 0 (id ") {
		t.Errorf("does not name what did not fit:\n%s", c[len(c)-600:])
	}
	if n := strings.Count(c, strings.TrimSpace(long)); n == 0 || n != strings.Count(c, "## [semantic] global") {
		t.Errorf("a note was cut in the middle (%d bodies)", n)
	}
}

func TestPromptRecallsOncePerSession(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "demo")
	wal := write(t, s, anamnesis.WriteRequest{Type: "procedural", Title: "Use WAL mode for SQLite", Body: "Set busy_timeout on every connection to avoid lock errors.", Project: "demo"})
	for i := 0; i < 60; i++ {
		write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("filler %d", i), Body: "the project uses go and make and tests", Project: "demo"})
	}
	env := envFor(s, uh)
	in := claudecode.Input{SessionID: "s1", Cwd: cwd, Prompt: "why do I get sqlite lock errors under load?"}
	out, err := claudecode.Prompt(ctx, env, in)
	if err != nil || !strings.Contains(context_(t, out, "UserPromptSubmit"), wal.Title) {
		t.Fatalf("first prompt: %v %s", err, out)
	}
	if out, _ := claudecode.Prompt(ctx, env, in); out != "" {
		t.Errorf("the same note was recalled twice in one session: %s", out)
	}
	if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s2", Cwd: cwd, Prompt: in.Prompt}); out == "" {
		t.Error("another session should get it")
	}
	for _, chat := range []string{"thanks, looks good", "please run the tests again", "", "ok"} {
		if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s3", Cwd: cwd, Prompt: chat}); out != "" {
			t.Errorf("chit-chat %q recalled notes: %s", chat, out)
		}
	}
}

func TestPromptSkipsNotesInjectedAtSessionStart(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "demo")
	wal := write(t, s, anamnesis.WriteRequest{Type: "procedural", Title: "Use WAL mode for SQLite", Body: "Set busy_timeout to avoid lock errors.", Project: "demo"})
	write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "filler", Body: "unrelated words", Project: "demo"})
	env := envFor(s, uh)
	out, _ := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "s4", Cwd: cwd})
	if !strings.Contains(out, wal.Title) {
		t.Fatalf("setup: WAL note not injected at start: %s", out)
	}
	if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s4", Cwd: cwd, Prompt: "sqlite lock errors again"}); strings.Contains(out, wal.Title) {
		t.Error("a note injected at SessionStart was recalled again")
	}
	if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s5", Cwd: cwd, Prompt: "sqlite lock errors again"}); !strings.Contains(out, wal.Title) {
		t.Errorf("a small store should still recall by distinctive words: %q", out)
	}
}

func TestCaptureWritesOneNotePerSession(t *testing.T) {
	s := store(t)
	_, uh := projectDir(t, "demo")
	env := envFor(s, uh)
	in := claudecode.Input{SessionID: "from-hook", TranscriptPath: "testdata/transcript.jsonl"}
	r1, err := claudecode.Capture(ctx, env, in, "pre-compact")
	if err != nil || r1.ID == "" || r1.Updated {
		t.Fatalf("pre-compact: %+v %v", r1, err)
	}
	r2, err := claudecode.Capture(ctx, env, in, "session-end")
	if err != nil || r2.ID != r1.ID || !r2.Updated {
		t.Fatalf("session-end should update the same note: %+v %v", r2, err)
	}
	n, _, err := s.Get(ctx, r1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "episodic" || n.ProvSession != "55550000-0000-4000-8000-000000000001" || n.ProvSource != "session-end" ||
		n.Project != "example-app" || strings.Join(n.Tags, ",") != "session,pre-compact,session-end" {
		t.Errorf("note %+v", n)
	}
	if strings.Contains(n.Title+n.Body, "ghp_") || !strings.Contains(n.Body, claudecode.Redacted) {
		t.Errorf("secret not redacted: %q %q", n.Title, n.Body)
	}
	if !strings.Contains(n.Body, "login_test.go") || !strings.Contains(n.Body, "**Branch:** feature/login") {
		t.Errorf("summary: %s", n.Body)
	}
	list, _ := s.List(ctx, anamnesisFilterEpisodic())
	if len(list) != 1 {
		t.Errorf("%d episodic notes, want 1", len(list))
	}
	// A trivial session writes nothing.
	p := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(p, []byte(`{"type":"user","message":{"role":"user","content":"/clear"}}`+"\n"), 0o644)
	if r, err := claudecode.Capture(ctx, env, claudecode.Input{SessionID: "x", TranscriptPath: p}, "session-end"); err != nil || r.Skipped == "" {
		t.Errorf("trivial: %+v %v", r, err)
	}
}

func anamnesisFilterEpisodic() index.Filter { return index.Filter{Type: note.TypeEpisodic} }

// TestCaptureTitleWithControlCharacters: a session whose first prompt
// holds a tab and a terminal escape is still captured (titles refuse
// control characters), with those characters turned into spaces.
func TestCaptureTitleWithControlCharacters(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "demo")
	p := filepath.Join(t.TempDir(), "t.jsonl")
	lines := []map[string]any{
		{"type": "user", "cwd": cwd, "sessionId": "ctl", "message": map[string]any{"role": "user", "content": "fix\tthe \x1b[31mbuild\x1b[0m \u202eplease"}},
		{"type": "assistant", "cwd": cwd, "sessionId": "ctl", "message": map[string]any{"role": "assistant",
			"content": []map[string]any{{"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": map[string]any{"file_path": filepath.Join(cwd, "Makefile")}},
				{"type": "text", "text": "The build is fixed: the linker flag was missing from the release target."}}}},
	}
	var buf strings.Builder
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(p, []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := claudecode.Capture(ctx, envFor(s, uh), claudecode.Input{SessionID: "ctl", TranscriptPath: p, Cwd: cwd}, "session-end")
	if err != nil || r.ID == "" {
		t.Fatalf("capture: %+v %v", r, err)
	}
	n, _, err := s.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c, bad := note.ControlIn(n.Title + n.Project); bad || n.Title != "fix the  [31mbuild [0m  please" {
		t.Errorf("title %q (control %U)", n.Title, c)
	}
}

// TestInjectedNotesShowControlCharactersEscaped: a note from a machine
// that does not refuse terminal escapes is injected with them escaped.
func TestInjectedNotesShowControlCharactersEscaped(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "demo")
	src := "---\nid: 01EV1LN0TE0000000000000000\ntype: semantic\ntitle: \"heron \\e[2J \\u202Egnp\"\nproject: demo\n" +
		"created_at: '2026-01-01T00:00:00+00:00'\nupdated_at: '2026-01-01T00:00:00+00:00'\n---\nbody \x1b]0;pwned\x07 text\n"
	p := filepath.Join(s.Home(), "memory", "semantic", "01EV1LN0TE0000000000000000.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "s1", Cwd: cwd, Source: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	if strings.ContainsAny(c, "\x1b\x07\u202e") || !strings.Contains(c, `heron \u001b[2J \u202egnp`) || !strings.Contains(c, `body \u001b]0;pwned\u0007 text`) {
		t.Errorf("injected note not escaped:\n%q", c)
	}
}

// With many global notes (the 20 notes of 300 characters, then
// 10,000-note stores where all 8 injected notes were global), every note
// of the project is injected first and globals fill what is left.
func TestSessionStartProjectBeforeGlobal(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "app")
	body := strings.Repeat("a global preference with some detail ", 8) // ~300 chars
	for i := 0; i < 40; i++ {
		write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("global %d", i), Body: body})
	}
	var project []string
	for i, typ := range []string{"procedural", "semantic", "semantic"} {
		n := write(t, s, anamnesis.WriteRequest{Type: typ, Title: fmt.Sprintf("project fact %d", i), Body: "the app deploys with make ship", Project: "app"})
		project = append(project, n.ID)
	}
	// Globals written after the project's notes are newer, which used to
	// put them first.
	for i := 40; i < 60; i++ {
		write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("global %d", i), Body: body})
	}
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "p1", Cwd: cwd, Source: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	last := -1
	for _, id := range project {
		at := strings.Index(c, id)
		if at < 0 {
			t.Fatalf("project note %s crowded out:\n%s", id, c)
		}
		last = max(last, at)
	}
	if first := strings.Index(c, "## [semantic] global"); first >= 0 && first < last {
		t.Errorf("a global note comes before the project's notes")
	}
	// Every project note was shown: none is counted as left out. The
	// globals that did not fit whole are named by title.
	if strings.Contains(c, "of project app") || !strings.Contains(c, "- global: global ") {
		t.Errorf("left-out lines wrong (every project note was shown, some globals were not):\n%s", c[len(c)-200:])
	}
	if len(c) > claudecode.ContextBudget {
		t.Errorf("context %d chars", len(c))
	}
}

// A resumed session already holds its first injection (the transcript
// keeps it): SessionStart with source resume adds only what is new.
func TestSessionStartResumeDoesNotRepeat(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "app")
	first := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "first fact", Body: "one", Project: "app"})
	env := envFor(s, uh)
	if out, err := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "r1", Cwd: cwd, Source: "startup"}); err != nil || !strings.Contains(out, first.ID) {
		t.Fatalf("startup: %v %s", err, out)
	}
	out, err := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "r1", Cwd: cwd, Source: "resume"})
	if err != nil || out != "" {
		t.Fatalf("resume with nothing new injected %q (%v)", out, err)
	}
	second := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "second fact", Body: "two", Project: "app"})
	out, err = claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "r1", Cwd: cwd, Source: "resume"})
	if err != nil {
		t.Fatal(err)
	}
	if c := context_(t, out, "SessionStart"); !strings.Contains(c, second.ID) || strings.Contains(c, first.ID) {
		t.Errorf("resume should add only the new note:\n%s", c)
	}
	// Another session, or a cleared one, gets everything again.
	out, _ = claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "r1", Cwd: cwd, Source: "clear"})
	if !strings.Contains(out, first.ID) || !strings.Contains(out, second.ID) {
		t.Errorf("clear should inject everything: %s", out)
	}
}

// deskAndLaptop opens two machines' stores sharing a bare hub.
func deskAndLaptop(t *testing.T) (desk, laptop *anamnesis.Store) {
	t.Helper()
	hub := testutil.BareHub(t)
	open := func(machine string) *anamnesis.Store {
		s, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: machine, Remote: hub, Create: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open("desk"), open("laptop")
}

// A note another machine writes during a session reaches the model with
// the next prompt, once, after the background sync brings it; a note of
// another project does not.
func TestPromptBringsNotesThatArrivedMidSession(t *testing.T) {
	desk, laptop := deskAndLaptop(t)
	cwd, uh := projectDir(t, "app")
	write(t, desk, anamnesis.WriteRequest{Type: "semantic", Title: "Old fact", Body: "known before", Project: "app"})
	for _, s := range []*anamnesis.Store{desk, laptop} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := envFor(desk, uh)
	if _, err := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "live", Cwd: cwd, Source: "startup"}); err != nil {
		t.Fatal(err)
	}
	fresh := write(t, laptop, anamnesis.WriteRequest{Type: "semantic", Title: "Staging moved", Body: "Staging now runs in eu-west-3.", Project: "app"})
	write(t, laptop, anamnesis.WriteRequest{Type: "semantic", Title: "Elsewhere", Body: "not this project", Project: "other"})
	if _, err := laptop.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := desk.Sync(ctx, anamnesis.SyncOptions{}); err != nil { // the session's background sync
		t.Fatal(err)
	}
	out, err := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "live", Cwd: cwd, Prompt: "ok, carry on"})
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		t.Fatal("the note that arrived mid-session did not reach the next prompt")
	}
	c := context_(t, out, "UserPromptSubmit")
	if !strings.Contains(c, fresh.ID) || !strings.Contains(c, "arrived from this user's other machines") || strings.Contains(c, "Elsewhere") || strings.Contains(c, "Old fact") {
		t.Errorf("prompt context:\n%s", c)
	}
	if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "live", Cwd: cwd, Prompt: "and then?"}); strings.Contains(out, fresh.ID) {
		t.Error("the arrived note was shown twice")
	}
	// Changed on the other machine since it was shown: shown again.
	m, _, err := laptop.Get(ctx, fresh.ID)
	if err != nil {
		t.Fatal(err)
	}
	m.Body = "Staging now runs in eu-central-1."
	if _, err := laptop.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*anamnesis.Store{laptop, desk} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "live", Cwd: cwd, Prompt: "next"}); !strings.Contains(out, "eu-central-1") {
		t.Errorf("a note changed elsewhere mid-session was not shown again: %q", out)
	}
}

// Arrivals that replace or edit a note shown at session start say so
// (issue 25): the model must not hold the stale version as current.
func TestArrivalsSayWhatTheyMakeOutOfDate(t *testing.T) {
	desk, laptop := deskAndLaptop(t)
	cwd, uh := projectDir(t, "app")
	fly := write(t, desk, anamnesis.WriteRequest{Type: "semantic", Title: "Widget deploys with Fly.io", Body: "fly deploy", Project: "app"})
	region := write(t, desk, anamnesis.WriteRequest{Type: "semantic", Title: "Staging region", Body: "eu-west-3", Project: "app"})
	for _, s := range []*anamnesis.Store{desk, laptop} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := envFor(desk, uh)
	out, err := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "s", Cwd: cwd, Source: "startup"})
	if err != nil || !strings.Contains(out, fly.ID) {
		t.Fatalf("session start: %v\n%s", err, out)
	}
	render := write(t, laptop, anamnesis.WriteRequest{Type: "semantic", Title: "Widget deploys with Render", Body: "render deploy", Project: "app", Supersedes: []string{fly.ID}})
	m, _, err := laptop.Get(ctx, region.ID)
	if err != nil {
		t.Fatal(err)
	}
	m.Body = "eu-central-1"
	if _, err := laptop.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*anamnesis.Store{laptop, desk} {
		if _, err := s.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err = claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s", Cwd: cwd, Prompt: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "UserPromptSubmit")
	for _, want := range []string{
		render.ID,
		fmt.Sprintf("Replaces %q (id %s), shown at session start: that note is out of date.", "Widget deploys with Fly.io", fly.ID),
		fmt.Sprintf("A new version of %q, shown at session start: this one is current.", "Staging region"),
	} {
		if !strings.Contains(c, want) {
			t.Errorf("prompt context lacks %q:\n%s", want, c)
		}
	}
}

// A machine's first sync marks what it brought in as arrivals, so a
// session open during it is shown them (issue 25).
func TestFirstSyncMarksArrivals(t *testing.T) {
	hub := testutil.BareHub(t)
	desk, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: "desk", Remote: hub, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer desk.Close()
	fact := write(t, desk, anamnesis.WriteRequest{Type: "semantic", Title: "Build uses Bazel", Body: "bazel build //...", Project: "app"})
	if _, err := desk.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	laptop, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: "laptop", Remote: hub, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer laptop.Close()
	cwd, uh := projectDir(t, "app")
	env := envFor(laptop, uh)
	if _, err := claudecode.SessionStart(ctx, env, claudecode.Input{SessionID: "s", Cwd: cwd, Source: "startup"}); err != nil {
		t.Fatal(err)
	}
	if _, err := laptop.Sync(ctx, anamnesis.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := claudecode.Prompt(ctx, env, claudecode.Input{SessionID: "s", Cwd: cwd, Prompt: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fact.ID) {
		t.Errorf("the first sync's arrival was not shown: %q", out)
	}
}

// SessionStart marks two live versions of one fact (issue 25).
func TestSessionStartMarksTwoVersionsOfOneFact(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "app")
	fly := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "Widget deploys with Fly.io", Body: "fly", Project: "app"})
	render := write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "Widget deploys with Render", Body: "render", Project: "app"})
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "s", Cwd: cwd, Source: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	for _, id := range []string{fly.ID, render.ID} {
		if !strings.Contains(c, "looks like another version of the same fact as "+id) {
			t.Errorf("%s not named as the other version:\n%s", id, c)
		}
	}
}

// A project of 60 durable notes and 10 global notes (issue 25): every
// global note and most durable notes are named at session start, whole
// or by title and id, within the budget, and the rest are counted.
func TestSessionStartSixtyDurableTenGlobal(t *testing.T) {
	s := store(t)
	cwd, uh := projectDir(t, "big")
	body := strings.Repeat("A remembered detail about how this part of the project works. ", 5) // ~320 chars
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber birch cedar dune")
	var project, global []string
	for i := 0; i < 10; i++ {
		global = append(global, write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: "The user prefers " + words[i] + " " + words[i+10], Body: "The user prefers option " + fmt.Sprint(i) + "."}).ID)
	}
	for i := 0; i < 60; i++ {
		project = append(project, write(t, s, anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("The %s %s setting of the build", words[i%30], words[(i*7+3)%30]), Body: body, Project: "big"}).ID)
	}
	out, err := claudecode.SessionStart(ctx, envFor(s, uh), claudecode.Input{SessionID: "s1", Cwd: cwd, Source: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	c := context_(t, out, "SessionStart")
	count := func(ids []string) (whole, listed int) {
		for _, id := range ids {
			switch {
			case strings.Contains(c, "| id: "+id):
				whole++
			case strings.Contains(c, "id "+id+")"):
				listed++
			}
		}
		return
	}
	pw, pl := count(project)
	gw, gl := count(global)
	t.Logf("60 durable + 10 global: project %d whole + %d by title, global %d whole + %d by title, %d characters", pw, pl, gw, gl, len(c))
	if len(c) > claudecode.ContextBudget {
		t.Errorf("context of %d characters", len(c))
	}
	if os.Getenv("SHOW") != "" {
		t.Log(c)
	}
	// Every global note, most project notes; the rest counted.
	if gw+gl != 10 || gw == 0 || pw < 4 || pw+pl < 35 || !strings.Contains(c, fmt.Sprintf("Left out here: %d more notes of project big;", 60-pw-pl)) {
		t.Errorf("project %d+%d, global %d+%d\n%s", pw, pl, gw, gl, c)
	}
}
