//go:build e2e

package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMCPInspector lists the tools and calls memory_write and memory_search
// with the MCP Inspector CLI against `anamnesis mcp`.
func TestMCPInspector(t *testing.T) {
	insp := npmInstall(t, "mcp-inspector", "@modelcontextprotocol/inspector", inspectorVersion, "mcp-inspector")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only", "--no-mcp", "--no-claude")
	server := []string{u.bin, "--home", u.store, "mcp"}
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"--cli"}, server...)
		full = append(full, args...)
		out, errs, err := u.run(u.home, "", insp, full...)
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, errs)
		}
		return out
	}
	list := run("--method", "tools/list")
	for _, name := range []string{"memory_search", "memory_list", "memory_get", "memory_status", "memory_write", "memory_sync"} {
		if !strings.Contains(list, `"`+name+`"`) {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	if !strings.Contains(list, `"readOnlyHint": true`) && !strings.Contains(list, `"readOnlyHint":true`) {
		t.Errorf("read-only hints missing:\n%s", list)
	}
	w := run("--method", "tools/call", "--tool-name", "memory_write", "--tool-arg", "type=procedural",
		"--tool-arg", "title=Rotate the ingest keys on Tuesdays", "--tool-arg", "body=The quokka service rotates keys weekly.",
		"--tool-arg", "project=demo")
	if !strings.Contains(w, "memory/procedural/") {
		t.Fatalf("memory_write: %s", w)
	}
	s := run("--method", "tools/call", "--tool-name", "memory_search", "--tool-arg", "query=quokka keys")
	if !strings.Contains(s, "Rotate the ingest keys on Tuesdays") {
		t.Fatalf("memory_search: %s", s)
	}
	if out := u.anamnesis("search", "quokka"); !strings.Contains(out, "Rotate the ingest keys") {
		t.Errorf("the note written over MCP is not in the store: %s", out)
	}
}

// TestClaudeCodeUsesMCP: the fake model asks Claude Code to call
// mcp__anamnesis__memory_search, then memory_write; the tool result must
// come back in the next request, and the written note must be searchable.
func TestClaudeCodeUsesMCP(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	// claude is not on PATH here, so init writes the MCP server into ~/.claude.json.
	u.anamnesis("init", "--yes", "--local-only")
	u.anamnesis("write", "--type", "semantic", "--project", "other", "--title", "Narwhal queue limits",
		"--body", "The narwhal queue drops messages above 64 KiB.")
	dir := u.project("demo")
	api := startFakeAPI(t,
		Reply{Tool: "mcp__anamnesis__memory_search", ToolArg: map[string]any{"query": "narwhal queue"}},
		Reply{Tool: "mcp__anamnesis__memory_write", ToolArg: map[string]any{"type": "semantic", "title": "Okapi builds need cgo off",
			"body": "The okapi release build sets CGO_ENABLED=0.", "project": "demo"}},
		Reply{Text: "Noted."},
	)
	out, errs, err := u.claude(claude, dir, api.URL, "what limits does the message queue have?",
		"--allowedTools", "mcp__anamnesis__memory_search,mcp__anamnesis__memory_write")
	if err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	var sawTools, sawResult, sawWrite bool
	for _, r := range api.Requests() {
		if strings.Contains(r, "mcp__anamnesis__memory_search") {
			sawTools = true
		}
		if strings.Contains(r, "tool_result") && strings.Contains(r, "drops messages above 64 KiB") {
			sawResult = true
		}
		if strings.Contains(r, "tool_result") && strings.Contains(r, "memory/semantic/") {
			sawWrite = true
		}
	}
	if !sawTools {
		t.Fatal("Claude Code did not offer the anamnesis MCP tools to the model")
	}
	if !sawResult {
		t.Errorf("no tool_result carrying the note came back from memory_search (%d requests)", len(api.Requests()))
	}
	if !sawWrite {
		t.Error("memory_write's result did not come back")
	}
	var found string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if found = u.anamnesis("search", "--json", "okapi cgo"); strings.Contains(found, "Okapi builds need cgo off") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var res struct {
		Results []struct{ Title, Project string }
	}
	json.Unmarshal([]byte(found), &res)
	if len(res.Results) == 0 || res.Results[0].Title != "Okapi builds need cgo off" || res.Results[0].Project != "demo" {
		t.Errorf("note written through Claude Code not found: %s", found)
	}
}

// TestClaudeCodeReadOnlyToolsNeedNoFlags: after `anamnesis init`, the
// memory tools are in the model's tools from the first request (init
// registers the server with alwaysLoad; Claude Code defers MCP tools
// behind a tool search otherwise), and memory_search runs in `claude -p`
// with no --allowedTools (init's permission rules; the readOnlyHint alone
// leaves it denied).
func TestClaudeCodeReadOnlyToolsNeedNoFlags(t *testing.T) {
	claude := npmInstall(t, "claude-code", "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	u := newUser(t)
	u.anamnesis("init", "--yes", "--local-only")
	u.anamnesis("write", "--type", "semantic", "--project", "other", "--title", "Quokka pool size",
		"--body", "The quokka connection pool holds 48 connections.")
	dir := u.project("demo")
	api := startFakeAPI(t,
		Reply{Tool: "mcp__anamnesis__memory_search", ToolArg: map[string]any{"query": "quokka pool"}},
		Reply{Text: "48."},
	)
	out, errs, err := u.claude(claude, dir, api.URL, "how big is the connection pool?")
	if err != nil {
		t.Fatalf("claude -p: %v\n%s\n%s", err, out, errs)
	}
	var first map[string]any
	var results []string
	for _, r := range api.Requests() {
		path, body, _ := strings.Cut(r, " ")
		if !strings.HasSuffix(path, "/v1/messages") || !strings.Contains(body, "connection pool") {
			continue
		}
		var req map[string]any
		if json.Unmarshal([]byte(body), &req) != nil {
			continue
		}
		if first == nil {
			first = req
		}
		results = append(results, toolResults(req)...)
	}
	if first == nil {
		t.Fatalf("no model request carried the prompt (%d requests)", len(api.Requests()))
	}
	tools, _ := first["tools"].([]any)
	var names []string
	for _, x := range tools {
		if m, ok := x.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	for _, want := range []string{"mcp__anamnesis__memory_search", "mcp__anamnesis__memory_get"} {
		if !slices.Contains(names, want) {
			t.Errorf("first request's tools lack %s (deferred behind tool search?): %v", want, names)
		}
	}
	if !slices.ContainsFunc(results, func(r string) bool { return strings.Contains(r, "holds 48 connections") }) {
		t.Errorf("memory_search did not run without --allowedTools; tool results: %q", results)
	}
}

// toolResults returns the text of every tool_result block in a Messages
// API request.
func toolResults(req map[string]any) []string {
	var out []string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		content, _ := m.(map[string]any)["content"].([]any)
		for _, c := range content {
			b, _ := c.(map[string]any)
			if b["type"] != "tool_result" {
				continue
			}
			raw, _ := json.Marshal(b["content"])
			out = append(out, string(raw))
		}
	}
	return out
}
