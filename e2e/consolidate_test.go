//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// consolidate runs `anamnesis consolidate` with the real Claude Code
// CLI as its model, against the fake API.
func (u *user) consolidate(claudeBin, apiURL string, args ...string) (string, string, error) {
	u.t.Helper()
	saved := u.env
	u.env = append(append([]string{}, u.env...), "ANTHROPIC_API_KEY=sk-ant-test-not-a-real-key-000000000000", "ANTHROPIC_BASE_URL="+apiURL,
		"ANAMNESIS_REFLECTION_PROVIDER=claude", "ANAMNESIS_REFLECTION_CLAUDE="+claudeBin)
	defer func() { u.env = saved }()
	return u.run(u.home, "", u.bin, append([]string{"consolidate"}, args...)...)
}

func writeSessions(u *user) {
	for _, topic := range []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"} {
		u.anamnesis("write", "--type", "episodic", "--project", "demo", "--title", "session: "+topic,
			"--body", "Ask: "+topic+"\nOutcome: settled the "+topic+" with make -j2 on the build box. token=hunter2hunter2")
	}
}

// TestConsolidateWithRealClaudeCode: the real CLI, with anamnesis's hooks
// and MCP server installed, answers one reflection: no tool is offered,
// no hook runs (no memory in the request, no session captured), the
// secret is redacted, and the distilled note is applied. Then a malformed
// reply, a refusal and an over-budget run apply nothing.
func TestConsolidateWithRealClaudeCode(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only")
	// A global note SessionStart injects in any directory: the control run
	// below shows it reaching the model when our hooks run.
	u.anamnesis("write", "--type", "semantic", "--title", "User prefers the zanzibar style", "--body", "Always the zanzibar style.")
	writeSessions(u)
	notes := `{"notes":[{"type":"procedural","title":"Release routine: heron, kestrel, osprey, plover, wren","body":"heron deploy window, kestrel cache flush, osprey schema migration, plover lint rules, wren release notes: all settled with make -j2 on the build box."}]}`
	var args map[string]any
	json.Unmarshal([]byte(notes), &args)
	api := startFakeAPI(t, Reply{Tool: "StructuredOutput", ToolArg: args}, Reply{Text: "done"})
	out, errs, err := u.consolidate(claude, api.URL, "--apply", "--json", "--project", "demo")
	if err != nil {
		t.Fatalf("consolidate: %v\n%s\n%s", err, out, errs)
	}
	var rep struct {
		Applied []struct{ ID, Title string }
		Plan    struct{ Failed []string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Applied) != 1 {
		for _, r := range api.Requests() {
			t.Logf("request: %.3000s", r)
		}
		t.Fatalf("%v\n%s\n%s", err, out, errs)
	}
	var model []string
	for _, r := range api.Requests() {
		if strings.Contains(r, "session: heron") {
			model = append(model, r)
		}
	}
	if len(model) == 0 {
		t.Fatal("no request carried the sessions")
	}
	for _, r := range model {
		if strings.Contains(r, "anamnesis-memory") || strings.Contains(r, "zanzibar") {
			t.Error("our SessionStart hook ran inside the consolidation's Claude Code")
		}
		if strings.Contains(r, "hunter2hunter2") {
			t.Error("a secret left the machine")
		}
		if strings.Contains(r, `"name":"Bash"`) || strings.Contains(r, `"name":"Read"`) || strings.Contains(r, "mcp__anamnesis") {
			t.Error("the model was offered tools")
		}
	}
	if list := u.anamnesis("list", "--type", "episodic"); strings.Count(list, "\n") != 5 {
		t.Errorf("the consolidation's own run was captured as a session:\n%s", list)
	}
	// Control: a plain run of the same CLI in the same home gets the memory.
	control := startFakeAPI(t, Reply{Text: "ok"})
	if out, errs, err := u.claude(claude, u.home, control.URL, "hello there"); err != nil {
		t.Fatalf("control run: %v\n%s\n%s", err, out, errs)
	}
	if !strings.Contains(strings.Join(control.Requests(), "\n"), "zanzibar") {
		t.Error("control: the SessionStart note did not reach a plain run, so the check above proves nothing")
	}

	// Bad replies apply nothing.
	for name, script := range map[string][]Reply{
		"malformed": {{Text: `[{"type": "semantic", "title": `}},
		"refusal":   {{Text: "I can't help with that."}},
	} {
		u2 := newUser(t)
		u2.anamnesis("init", "--yes", "--local-only")
		writeSessions(u2)
		api := startFakeAPI(t, script...)
		out, errs, err := u2.consolidate(claude, api.URL, "--apply")
		if err != nil || !strings.Contains(out, "failed:") || strings.Contains(out, "applied:") {
			t.Errorf("%s: %v\n%s\n%s", name, err, out, errs)
		}
	}
	u3 := newUser(t)
	u3.anamnesis("init", "--yes", "--local-only")
	writeSessions(u3)
	api3 := startFakeAPI(t, Reply{Tool: "StructuredOutput", ToolArg: args})
	out, errs, err = u3.consolidate(claude, api3.URL, "--apply", "--max-usd-call", "0.000001")
	if err != nil || strings.Contains(out, "applied:") || !strings.Contains(out, "error_max_budget_usd") {
		t.Errorf("over budget: %v\n%s\n%s", err, out, errs)
	}
}
