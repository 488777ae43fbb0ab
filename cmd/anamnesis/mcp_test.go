package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func mcpSession(t *testing.T) (*mcp.ClientSession, *anamnesis.Store) {
	t.Helper()
	ctx := context.Background()
	s, err := anamnesis.Open(ctx, t.TempDir(), anamnesis.Options{MachineID: "mcptest", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := newMCPServer(s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	st, ct := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, s
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, "protocol error: " + err.Error()
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

func TestMCPToolsAndAnnotations(t *testing.T) {
	cs, _ := mcpSession(t)
	ctx := context.Background()
	init := cs.InitializeResult()
	if init == nil || len(init.Instructions) == 0 || len(init.Instructions) > 2048 {
		t.Fatalf("instructions missing or over 2 KB: %d", len(init.Instructions))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
		if len(tl.Description) > 2048 {
			t.Errorf("%s description over 2 KB", tl.Name)
		}
	}
	for _, n := range []string{"memory_search", "memory_list", "memory_get", "memory_status"} {
		tl := byName[n]
		if tl == nil || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint {
			t.Errorf("%s: want readOnlyHint true, openWorldHint false: %+v", n, tl)
		}
	}
	for _, n := range []string{"memory_write", "memory_sync", "memory_resolve", "memory_review"} {
		if tl := byName[n]; tl == nil || tl.Annotations.ReadOnlyHint {
			t.Errorf("%s must not be read-only", n)
		}
	}

	res, text := call(t, cs, "memory_write", map[string]any{"type": "procedural", "title": "Use WAL mode for SQLite",
		"body": "Set busy_timeout on every connection to avoid lock errors.", "project": "demo", "tags": []string{"sqlite"}})
	if res == nil || res.IsError {
		t.Fatalf("write: %s", text)
	}
	var w struct{ ID, Path string }
	json.Unmarshal([]byte(text), &w)
	if len(w.ID) != 26 || !strings.HasPrefix(w.Path, "memory/procedural/") {
		t.Fatalf("write result %s", text)
	}
	res, text = call(t, cs, "memory_search", map[string]any{"query": "sqlite lock errors"})
	if res.IsError || !strings.Contains(text, w.ID) || !strings.Contains(text, "busy_timeout") {
		t.Fatalf("search: %s", text)
	}
	if res.StructuredContent == nil {
		t.Error("no structured content")
	}
	_, text = call(t, cs, "memory_list", map[string]any{"project": "demo"})
	if !strings.Contains(text, w.ID) || strings.Contains(text, "busy_timeout") {
		t.Errorf("list should have the note without its body: %s", text)
	}
	_, text = call(t, cs, "memory_get", map[string]any{"id": w.ID})
	if !strings.Contains(text, "busy_timeout") {
		t.Errorf("get: %s", text)
	}
	_, text = call(t, cs, "memory_status", map[string]any{})
	if !strings.Contains(text, `"total":1`) {
		t.Errorf("status: %s", text)
	}
	res, text = call(t, cs, "memory_sync", map[string]any{})
	if res.IsError || !strings.Contains(text, `"committed"`) {
		t.Errorf("sync: %s", text)
	}
}

func TestMCPErrorsAreToolErrors(t *testing.T) {
	cs, _ := mcpSession(t)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"memory_get", map[string]any{"id": "../../etc/passwd"}, "id"},
		{"memory_get", map[string]any{"id": "01M8096W5Y5VJW7T5A4YN4196Z"}, "no note"},
		{"memory_get", map[string]any{}, "id"},
		{"memory_write", map[string]any{"type": "opinion", "title": "t", "body": "b"}, "type"},
		{"memory_write", map[string]any{"type": "semantic", "title": "  ", "body": "b"}, "title"},
		{"memory_write", map[string]any{"type": "semantic", "title": "t", "body": "b", "scope": "world"}, "scope"},
		{"memory_write", map[string]any{"type": "semantic", "title": "t", "body": "b", "supersedes": []string{"a/b"}}, "supersedes"},
		{"memory_write", map[string]any{"type": "semantic", "body": "b"}, "title"},
		{"memory_write", map[string]any{"type": "semantic", "title": "t", "body": "b", "supersedes": []string{"01N0SUCHN0TE00000000000000"}}, "supersedes: no note has the id"},
		{"memory_write", map[string]any{"type": "semantic", "title": "clear \x1b[2J", "body": "b"}, "title contains the control character"},
		{"memory_write", map[string]any{"type": "semantic", "title": "t", "body": "b", "project": "p\u202e"}, "project contains the control character"},
		{"memory_write", map[string]any{"type": 7, "title": "t", "body": "b"}, "type"},
		{"memory_write", map[string]any{"type": "semantic", "title": "t", "body": strings.Repeat("x", note.MaxBody+1)}, "body"},
		{"memory_resolve", map[string]any{"id": "01M8096W5Y5VJW7T5A4YN4196Z", "keep": "01M8096W5Y5VJW7T5A4YN4196Z"}, "no note"},
		{"memory_resolve", map[string]any{"id": "../x"}, "id"},
		{"memory_search", map[string]any{"query": ""}, "query"},
		{"memory_search", map[string]any{"query": "x", "k": -1}, "k"},
		{"memory_search", map[string]any{"query": "x", "type": "bogus"}, "type"},
		{"memory_list", map[string]any{"limit": -5}, "limit"},
	}
	for _, c := range cases {
		res, text := call(t, cs, c.tool, c.args)
		if strings.HasPrefix(text, "protocol error") {
			// Schema violations may be rejected by the SDK before the handler;
			// they must still name the field.
			if !strings.Contains(text, c.want) {
				t.Errorf("%s %v: %s", c.tool, c.args, text)
			}
			continue
		}
		if res == nil || !res.IsError || !strings.Contains(strings.ToLower(text), c.want) {
			t.Errorf("%s %v: want a tool error naming %q, got %v %q", c.tool, c.args, c.want, res != nil && res.IsError, text)
		}
	}
	// The server is still alive after all that.
	if res, text := call(t, cs, "memory_status", map[string]any{}); res == nil || res.IsError {
		t.Fatalf("server unusable after errors: %s", text)
	}
}

func TestMCPTruncatesLongBodies(t *testing.T) {
	cs, s := mcpSession(t)
	long := strings.Repeat("walrus ", 3000) // 21,000 characters
	n, _, err := s.Write(context.Background(), anamnesis.WriteRequest{Type: "semantic", Title: "long walrus", Body: long})
	if err != nil {
		t.Fatal(err)
	}
	_, text := call(t, cs, "memory_search", map[string]any{"query": "walrus"})
	if len(text) > mcpTotalCap+5000 || !strings.Contains(text, "truncated") || !strings.Contains(text, `"truncated":true`) {
		t.Errorf("search result not truncated (%d chars)", len(text))
	}
	_, text = call(t, cs, "memory_get", map[string]any{"id": n.ID})
	if !strings.Contains(text, "memory_get returns the whole note") && !strings.Contains(text, long[:100]) {
		t.Errorf("get: %d chars", len(text))
	}
}

// TestMCPServerAnswersMalformedLinesAndKeepsServing runs the real `anamnesis
// mcp` process and writes raw lines to it: each line that is not JSON, or
// not a JSON-RPC message, gets an error answer with id null, and the valid
// requests around them are answered as usual.
func TestMCPServerAnswersMalformedLinesAndKeepsServing(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron deploy window", "--body", "Tuesdays."))
	cmd := exec.Command(binary, "--home", home, "mcp")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	next := func(what string) map[string]any {
		t.Helper()
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		defer timer.Stop()
		ok := lines.Scan()
		if !ok {
			cmd.Wait()
			t.Fatalf("%s: no answer; the server ended (stderr: %s)", what, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%s: answer is not JSON: %q", what, lines.Text())
		}
		return m
	}
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	wantError := func(what string, code float64) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		if id, has := m["id"]; !has || id != nil || e == nil || e["code"] != code {
			t.Errorf("%s: got %v, want error %v with id null", what, m, code)
		}
	}

	send(`this is not json`)
	wantError("garbage", -32700)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := next("initialize"); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search"`) // cut short
	wantError("truncated line", -32700)
	send(`{"jsonrpc":"2.0","id":3} {"x":1}`)
	wantError("two values on one line", -32700)
	send(`{"hello":"world"}`)
	wantError("JSON but not JSON-RPC", -32600)
	send(`[]`)
	wantError("empty batch", -32600)
	send("")
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"heron"}}}`)
	m := next("search after the bad lines")
	if m["id"] != float64(4) || !strings.Contains(fmt.Sprint(m["result"]), "Heron deploy window") {
		t.Errorf("search: %v", m)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit at end of input: %v (stderr: %s)", err, stderr.String())
	}
}

// A note written through MCP is on the hub within seconds (a debounced
// background sync), not when the session ends.
func TestMCPWriteReachesTheHubWithinSeconds(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
	defer awaitDetached(t, home)
	cmd := exec.Command(binary, "--home", home, "mcp")
	cmd.Env = append(os.Environ(), "ANAMNESIS_MACHINE_ID=desk", "ANAMNESIS_GIT_REMOTE="+hub)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, text := call(t, cs, "memory_write", map[string]any{"type": "semantic", "title": "Ibis builds pin Go 1.26", "body": "The ibis image pins Go 1.26."})
	if res == nil || res.IsError {
		t.Fatalf("write: %s", text)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if log := testutil.Git(t, hub, "log", "--all", "--format=%s", "--name-only"); strings.Contains(log, "semantic/") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the note written through MCP is not on the hub 20 s later (session still open)")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestDebouncerRunsOnceAfterTheLastPoke(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	d := newDebouncer(50*time.Millisecond, func() { mu.Lock(); runs++; mu.Unlock() })
	for i := 0; i < 5; i++ {
		d.poke()
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	if runs != 1 {
		t.Errorf("%d runs after a burst of pokes, want 1", runs)
	}
	mu.Unlock()
	d.poke()
	d.flush()
	d.flush()
	mu.Lock()
	defer mu.Unlock()
	if runs != 2 {
		t.Errorf("flush of a pending poke: %d runs, want 2", runs)
	}
}

// Search results carry a rank and a relevance a person can read, and are
// not padded with notes that match only on words most notes contain.
func TestMCPSearchIsNotPadded(t *testing.T) {
	cs, s := mcpSession(t)
	for i := 0; i < 6; i++ {
		if _, _, err := s.Write(context.Background(), anamnesis.WriteRequest{Type: "semantic", Title: fmt.Sprintf("note %d about the system", i), Body: "the system uses a cache"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Write(context.Background(), anamnesis.WriteRequest{Type: "semantic", Title: "Zebra stripes", Body: "zebra stripe width is configured in the system"}); err != nil {
		t.Fatal(err)
	}
	res, text := call(t, cs, "memory_search", map[string]any{"query": "the system zebra"})
	if res == nil || res.IsError {
		t.Fatal(text)
	}
	var out struct {
		Results []struct {
			Title     string
			Rank      int
			Relevance float64
			Score     *float64
		}
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	if len(out.Results) != 1 || out.Results[0].Title != "Zebra stripes" || out.Results[0].Rank != 1 || out.Results[0].Relevance != 1 || out.Results[0].Score != nil {
		t.Errorf("want only the zebra note, rank 1, relevance 1, no raw score: %s", text)
	}
}
