//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// firstTurn returns the first Messages API request that carries prompt.
func firstTurn(t *testing.T, api *fakeAPI, prompt string) string {
	t.Helper()
	for _, r := range api.Requests() {
		path, body, _ := strings.Cut(r, " ")
		if strings.HasSuffix(path, "/v1/messages") && strings.Contains(body, prompt) {
			return body
		}
	}
	t.Fatalf("no model request carried %q (%d requests)", prompt, len(api.Requests()))
	return ""
}

// twoMachines sets up two users ("desk" and "laptop") with `anamnesis
// init` against one bare hub, with extra init flags.
func twoMachines(t *testing.T, initFlags ...string) (desk, laptop *user) {
	t.Helper()
	hub := testutil.BareHub(t)
	desk, laptop = newUser(t), newUser(t)
	for _, m := range []struct {
		u    *user
		name string
	}{{desk, "desk"}, {laptop, "laptop"}} {
		m.u.env = append(m.u.env, "ANAMNESIS_MACHINE_ID="+m.name)
		m.u.anamnesis(append([]string{"init", "--yes", "--remote", hub}, initFlags...)...)
	}
	return desk, laptop
}

// With many global notes, the project's notes still reach the model at
// SessionStart (globals used to fill the budget first).
func TestClaudeCodeProjectNotesBeforeManyGlobals(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	body := strings.Repeat("a global preference with some detail ", 8)
	for i := 0; i < 40; i++ {
		u.anamnesis("write", "--type", "semantic", "--title", fmt.Sprintf("global preference %d", i), "--body", body)
	}
	var project []string
	for i := 0; i < 3; i++ {
		project = append(project, strings.TrimSpace(u.anamnesis("write", "--type", "procedural", "--project", "demo",
			"--title", fmt.Sprintf("demo fact %d", i), "--body", fmt.Sprintf("The demo service uses port 80%02d.", i))))
	}
	for i := 40; i < 50; i++ { // newer than the project's notes
		u.anamnesis("write", "--type", "semantic", "--title", fmt.Sprintf("global preference %d", i), "--body", body)
	}
	api := startFakeAPI(t, Reply{Text: "ok"})
	if out, errs, err := u.claude(claude, u.project("demo"), api.URL, "hello there"); err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	first := firstTurn(t, api, "hello there")
	for i, id := range project {
		if !strings.Contains(first, id) {
			t.Errorf("project note %d (%s) did not reach the model", i, id)
		}
	}
	// What does not fit whole is named by title, or counted.
	if !strings.Contains(first, "- global: global preference ") && !strings.Contains(first, "global notes; memory_search finds them") {
		t.Error("the injection does not say what it left out")
	}
}

// A note written on another machine while a session is under way reaches
// the model in that session (after the background sync brings it), and a
// resumed session is not given its first injection again.
func TestClaudeCodeNoteArrivesMidSession(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	desk, laptop := twoMachines(t, "--no-mcp")
	known := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Demo deploys on Tuesdays", "--body", "Only Tuesdays."))
	desk.anamnesis("sync")
	dir := desk.project("demo")
	api := startFakeAPI(t, Reply{Text: "ok"})
	const session = "5b1f4a52-3c57-4b7e-9a0e-2f7b4c1d9e01"
	if out, errs, err := desk.claude(claude, dir, api.URL, "first question", "--session-id", session); err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	if !strings.Contains(firstTurn(t, api, "first question"), known) {
		t.Fatal("setup: the known note was not injected at the start")
	}
	// Meanwhile on the laptop:
	fresh := strings.TrimSpace(laptop.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Staging moved to eu-west-3", "--body", "Staging now runs in eu-west-3."))
	laptop.anamnesis("sync")
	desk.anamnesis("sync") // what the session's background sync does
	if out, errs, err := desk.claude(claude, dir, api.URL, "second question", "--resume", session); err != nil {
		t.Fatalf("claude -p --resume: %v\n%s\n%s", err, out, errs)
	}
	second := firstTurn(t, api, "second question")
	if !strings.Contains(second, fresh) {
		t.Error("the note written on the other machine mid-session did not reach the model")
	}
	if n := strings.Count(second, "Demo deploys on Tuesdays"); n > 1 {
		t.Errorf("the resumed session was given its first injection again (%d copies)", n)
	}
}

// A conflict (both machines edited one note) reaches the model marked,
// the copy beside its note, and memory_resolve settles it.
func TestClaudeCodeSeesAndResolvesAConflict(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	desk, laptop := twoMachines(t, "--no-sync")
	id := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Canary duration", "--body", "The canary runs 30 minutes."))
	desk.anamnesis("sync")
	laptop.anamnesis("sync")
	edit := func(u *user, minutes string) { // by hand, as a user edits a note
		t.Helper()
		file := u.store + "/memory/semantic/" + id + ".md"
		if out, _, err := u.run(u.home, "", "sed", "-i", "s/30 minutes/"+minutes+" minutes/", file); err != nil {
			t.Fatalf("edit: %v %s", err, out)
		}
		u.anamnesis("reindex")
	}
	edit(desk, "45")
	edit(laptop, "60")
	desk.anamnesis("sync")
	laptop.anamnesis("sync")
	st := laptop.anamnesis("status", "--json")
	if !strings.Contains(st, `"copies"`) {
		t.Fatalf("setup: no conflict on the laptop: %s", st)
	}
	api := startFakeAPI(t,
		Reply{Tool: "mcp__anamnesis__memory_resolve", ToolArg: map[string]any{"id": id, "body": "The canary runs 45 minutes on staging and 60 in production."}},
		Reply{Text: "Resolved."},
	)
	out, errs, err := laptop.claude(claude, laptop.project("demo"), api.URL, "how long is the canary?", "--allowedTools", "mcp__anamnesis__memory_resolve")
	if err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	first := firstTurn(t, api, "how long is the canary?")
	at, copyAt := strings.Index(first, "| id: "+id), strings.Index(first, "CONFLICT COPY of "+id)
	if at < 0 || copyAt < 0 || copyAt < at {
		t.Errorf("the conflict copy is not shown marked, after its note (note at %d, copy at %d)", at, copyAt)
	}
	var resolved bool
	for _, r := range api.Requests() {
		var req map[string]any
		_, body, _ := strings.Cut(r, " ")
		if json.Unmarshal([]byte(body), &req) == nil {
			for _, res := range toolResults(req) {
				resolved = resolved || strings.Contains(res, `\"kept\"`) || strings.Contains(res, `"kept"`)
			}
		}
	}
	if !resolved {
		t.Error("memory_resolve's result did not come back")
	}
	if st := laptop.anamnesis("status", "--json"); !strings.Contains(st, `"conflicts": []`) {
		t.Errorf("still in conflict after memory_resolve: %s", st)
	}
	if show := laptop.anamnesis("show", id); !strings.Contains(show, "45 minutes on staging and 60 in production") {
		t.Errorf("merged text not in the note: %s", show)
	}
}

// What one machine's Claude Code put in its own auto memory reaches the
// other machine's first model request: desk's Claude wrote a memory file,
// desk synced (the sync imports it), the laptop synced, and the real CLI
// on the laptop, in a checkout of the same repository at another path,
// is given it at SessionStart, marked with the machine it came from.
func TestClaudeCodeAutoMemoryTravels(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	desk, laptop := twoMachines(t, "--no-mcp")
	const origin = "git@github.com:ann/tern.git"
	checkout := func(u *user, path string) string {
		dir := u.home + "/" + path
		u.run(u.home, "", "mkdir", "-p", dir)
		testutil.Git(t, dir, "init", "-q")
		testutil.Git(t, dir, "remote", "add", "origin", origin)
		return dir
	}
	deskDir := checkout(desk, "src/tern")
	laptopDir := checkout(laptop, "work/tern-checkout")
	// What Claude Code on the desk left: a transcript with the checkout as
	// cwd, and a memory file in the project's auto memory.
	proj := desk.home + "/.claude/projects/-home-desk-src-tern"
	desk.run(desk.home, "", "mkdir", "-p", proj+"/memory")
	transcript := fmt.Sprintf(`{"type":"user","cwd":%q,"sessionId":"s1","message":{"role":"user","content":"hi"}}`+"\n", deskDir)
	memory := "---\nname: Tern builds\ndescription: The tern release build needs CGO_ENABLED=0\ntype: project\n---\nBuild the tern binary with CGO_ENABLED=0 or the Alpine image fails at start.\n"
	for name, text := range map[string]string{proj + "/s1.jsonl": transcript, proj + "/memory/project_tern.md": memory,
		proj + "/memory/MEMORY.md": "- [Tern builds](project_tern.md): CGO off\n"} {
		if out, _, err := desk.run(desk.home, text, "tee", name); err != nil {
			t.Fatalf("write %s: %v %s", name, err, out)
		}
	}
	desk.anamnesis("sync")
	laptop.anamnesis("sync")
	api := startFakeAPI(t, Reply{Text: "ok"})
	if out, errs, err := laptop.claude(claude, laptopDir, api.URL, "let's cut a tern release"); err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	first := firstTurn(t, api, "let's cut a tern release")
	if i := strings.Index(first, "### Claude Code"); i >= 0 {
		t.Logf("the laptop's first model request carries:\n%s", first[i:min(len(first), i+420)])
	}
	if !strings.Contains(first, "CGO_ENABLED=0 or the Alpine image fails") || !strings.Contains(first, "Claude Code memory from desk") {
		t.Errorf("desk's auto memory did not reach the laptop's first model request")
	}
}

// The first session after switching machines (issue 25): a note
// superseded and one edited on the desk minutes before reach the
// laptop's first model request as they are now, not as the laptop's
// index last had them; SessionStart syncs within its budget first.
func TestClaudeCodeMachineSwitch(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	desk, laptop := twoMachines(t, "--no-mcp")
	fly := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Demo deploys with Fly.io", "--body", "Run fly deploy from main."))
	region := strings.TrimSpace(desk.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Demo staging region", "--body", "Staging runs in eu-west-3."))
	desk.anamnesis("sync")
	laptop.anamnesis("sync")
	// On the desk, before the switch: one fact replaced, one edited by hand.
	desk.anamnesis("write", "--type", "semantic", "--project", "demo", "--title", "Demo deploys with Render", "--body", "Run render deploy from main.", "--supersedes", fly)
	file := desk.store + "/memory/semantic/" + region + ".md"
	if out, _, err := desk.run(desk.home, "", "sed", "-i", "s/eu-west-3/eu-central-1/", file); err != nil {
		t.Fatalf("edit: %v %s", err, out)
	}
	desk.anamnesis("sync")
	api := startFakeAPI(t, Reply{Text: "ok"})
	if out, errs, err := laptop.claude(claude, laptop.project("demo"), api.URL, "how do we deploy?"); err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	first := firstTurn(t, api, "how do we deploy?")
	if !strings.Contains(first, "render deploy") || !strings.Contains(first, "eu-central-1") {
		t.Errorf("the current versions did not reach the first request")
	}
	if strings.Contains(first, "fly deploy") || strings.Contains(first, "eu-west-3") {
		t.Errorf("a stale version reached the first request")
	}
}
