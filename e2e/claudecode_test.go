//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeHooks drives the real Claude Code CLI after `anamnesis
// init`: the SessionStart note and a prompt-relevant note must reach the
// model, and the session must be captured as a committed episodic note.
func TestClaudeCodeHooks(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp")
	u.anamnesis("write", "--type", "procedural", "--project", "demo", "--title", "Deploys go through the blue-green switch",
		"--body", "The zanzibar flag flips traffic between blue and green.")
	u.anamnesis("write", "--type", "semantic", "--project", "other", "--title", "Walrus cache tuning",
		"--body", "The walrus cache needs 512 MB for the ingest workers.")
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
