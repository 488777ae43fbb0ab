//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeDemoNotes writes the two notes the hook tests look for: one of
// project demo for SessionStart, one of another project that only the
// walrus prompt recalls.
func writeDemoNotes(u *user) {
	u.anamnesis("write", "--type", "procedural", "--project", "demo", "--title", "Deploys go through the blue-green switch",
		"--body", "The zanzibar flag flips traffic between blue and green.")
	u.anamnesis("write", "--type", "semantic", "--project", "other", "--title", "Walrus cache tuning",
		"--body", "The walrus cache needs 512 MB for the ingest workers.")
}

// TestClaudeCodeHooks drives the real Claude Code CLI after `anamnesis
// init`: the SessionStart note and a prompt-relevant note must reach the
// model, and the session must be captured as a committed episodic note.
func TestClaudeCodeHooks(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	writeDemoNotes(u)
	dir := u.project("demo")
	// The reply records a decision: a bare question and answer gets no note.
	api := startFakeAPI(t, Reply{Text: "Use 512 MB. Going forward we will use 512 MB for the ingest workers."})

	prompt := "how big should the walrus cache be for ingest?"
	out, errs, err := u.claude(claude, dir, api.URL, prompt)
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s", err, out, errs)
	}
	var model []string
	for _, r := range api.Requests() {
		if strings.Contains(r, prompt) {
			model = append(model, r)
		}
	}
	if len(model) == 0 {
		t.Fatalf("no model request carried the prompt; %d requests logged", len(api.Requests()))
	}
	first := model[0]
	if !strings.Contains(first, "zanzibar flag flips traffic") {
		t.Error("the SessionStart note did not reach the model")
	}
	if !strings.Contains(first, "walrus cache needs 512 MB") {
		t.Error("the prompt-relevant note (another project, not injected at start) did not reach the model")
	}
	if !strings.Contains(first, "anamnesis-memory") {
		t.Error("injected context is not wrapped as anamnesis memory")
	}

	// SessionEnd wrote and committed the session note (synchronously).
	var list string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list = u.anamnesis("list", "--type", "episodic", "--json")
		if strings.Contains(list, prompt) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(list, prompt) || !strings.Contains(list, `"project": "demo"`) {
		t.Fatalf("no episodic note for the session:\n%s", list)
	}
	log, _, err := u.run(filepath.Join(u.store, "memory"), "", "git", "log", "--name-only", "--format=%s")
	if err != nil || !strings.Contains(log, "episodic/") {
		t.Errorf("session note not committed: %v\n%s", err, log)
	}
	if _, err := os.Stat(filepath.Join(u.store, "state", "sessions")); err != nil {
		t.Error("per-session state was not kept under the store's state/")
	}
}

// TestClaudeCodeHooksUnderAwkwardPaths: a user whose home and anamnesis
// binary sit under directories with a space, a single quote and a $ in
// their names. init writes exec-form hooks (command + args, no shell), and
// the real Claude Code runs them: both notes reach the model.
func TestClaudeCodeHooksUnderAwkwardPaths(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	root := t.TempDir()
	u := newUserAt(t, filepath.Join(root, "o'brien home"))
	bin := filepath.Join(root, "it's a $HOME", "anamnesis")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	data, err := os.ReadFile(u.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	u.bin = bin
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	settings, err := os.ReadFile(filepath.Join(u.home, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(settings, &doc); err != nil {
		t.Fatal(err)
	}
	if h := doc.Hooks["SessionStart"]; len(h) != 1 || h[0].Hooks[0].Command != bin || !slices.Equal(h[0].Hooks[0].Args, []string{"--home", u.store, "hook", "session-start", "--unless-plugin"}) {
		t.Fatalf("SessionStart is not in exec form:\n%s", settings)
	}
	writeDemoNotes(u)
	dir := u.project("demo")
	api := startFakeAPI(t, Reply{Text: "Use 512 MB."})
	prompt := "how big should the walrus cache be for ingest?"
	out, errs, err := u.claude(claude, dir, api.URL, prompt)
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s", err, out, errs)
	}
	first := firstRequestWith(t, api, prompt)
	if !strings.Contains(first, "zanzibar flag flips traffic") {
		t.Errorf("the SessionStart note did not reach the model\nstderr: %s", errs)
	}
	if !strings.Contains(first, "walrus cache needs 512 MB") {
		t.Errorf("the prompt-relevant note did not reach the model\nstderr: %s", errs)
	}
}

// firstRequestWith is the first model request that carried prompt.
func firstRequestWith(t *testing.T, api *fakeAPI, prompt string) string {
	t.Helper()
	for _, r := range api.Requests() {
		if strings.Contains(r, prompt) {
			return r
		}
	}
	t.Fatalf("no model request carried the prompt; %d requests logged", len(api.Requests()))
	return ""
}
