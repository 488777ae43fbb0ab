package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// mcpProc is a running `anamnesis mcp` process spoken to line by line.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
}

func startMCP(t *testing.T, home string) *mcpProc {
	t.Helper()
	cmd := exec.Command(binary, "--home", home, "mcp")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	p := &mcpProc{t: t, cmd: cmd, stdin: stdin, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p.lines = bufio.NewScanner(stdout)
	p.lines.Buffer(nil, 4<<20)
	return p
}

func (p *mcpProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("write to the server: %v (stderr: %s)", err, p.stderr)
	}
}

// next returns the next line the server writes, decoded.
func (p *mcpProc) next(what string) any {
	p.t.Helper()
	timer := time.AfterFunc(10*time.Second, func() { p.cmd.Process.Kill() })
	defer timer.Stop()
	if !p.lines.Scan() {
		p.t.Fatalf("%s: no answer; the server ended (stderr: %s)", what, p.stderr)
	}
	var v any
	if err := json.Unmarshal(p.lines.Bytes(), &v); err != nil {
		p.t.Fatalf("%s: answer is not JSON: %q", what, p.lines.Text())
	}
	return v
}

func (p *mcpProc) initialize(version string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	m, _ := p.next("initialize").(map[string]any)
	r, _ := m["result"].(map[string]any)
	if m["id"] != float64(1) || r == nil || r["protocolVersion"] != version {
		p.t.Fatalf("initialize %s: %v", version, m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// wantSearch sends a memory_search with id and checks that its answer
// finds the note "Heron deploy window".
func (p *mcpProc) wantSearch(id int, what string) {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"heron"}}}`, id))
	m, _ := p.next(what).(map[string]any)
	if m["id"] != float64(id) || !strings.Contains(fmt.Sprint(m["result"]), "Heron deploy window") {
		p.t.Errorf("%s: %v", what, m)
	}
}

func wantRPCError(t *testing.T, what string, v any, code float64) {
	t.Helper()
	m, _ := v.(map[string]any)
	e, _ := m["error"].(map[string]any)
	if id, has := m["id"]; !has || id != nil || e == nil || e["code"] != code {
		t.Errorf("%s: got %v, want error %v with id null", what, v, code)
	}
}

func heronHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron deploy window", "--body", "Tuesdays."))
	return home
}

// Batches were part of MCP 2025-03-26 only: in a session of a later
// revision (and before initialize, when none is agreed) a batch is one
// Invalid Request error with id null, and the server goes on serving. The
// SDK alone ended the session on the first batch.
func TestMCPRefusesBatchesOutside20250326AndKeepsServing(t *testing.T) {
	home := heronHome(t)
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			p := startMCP(t, home)
			p.send(`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`)
			wantRPCError(t, "batch before initialize", p.next("batch before initialize"), -32600)
			p.initialize(version)
			p.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"heron"}}}]`)
			v := p.next("batch")
			wantRPCError(t, "batch", v, -32600)
			if msg := fmt.Sprint(v); !strings.Contains(msg, "2025-03-26") || !strings.Contains(msg, version) {
				t.Errorf("the error should say batches are of 2025-03-26 only and name the session's version: %v", msg)
			}
			p.send(`[{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]`)
			wantRPCError(t, "batch of a notification", p.next("batch of a notification"), -32600)
			p.wantSearch(4, "search after the batches")
		})
	}
}

// Under 2025-03-26 a batch is answered as JSON-RPC says: one array with
// an answer per request, in the batch's order, an error for a member that
// is not a message, nothing for notifications; a batch of notifications
// only gets no answer at all.
func TestMCPAnswersBatchesUnder20250326(t *testing.T) {
	p := startMCP(t, heronHome(t))
	p.initialize("2025-03-26")
	p.send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"heron"}}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}},` +
		`5,` +
		`{"jsonrpc":"2.0","id":"three","method":"ping"},` +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	arr, ok := p.next("batch").([]any)
	if !ok || len(arr) != 4 {
		t.Fatalf("batch: want an array of 4 answers, got %v", arr)
	}
	first, _ := arr[0].(map[string]any)
	if first["id"] != float64(2) || !strings.Contains(fmt.Sprint(first["result"]), "Heron deploy window") {
		t.Errorf("batch answer 1: %v", first)
	}
	wantRPCError(t, "batch member 5", arr[1], -32600)
	if m, _ := arr[2].(map[string]any); m["id"] != "three" || m["result"] == nil {
		t.Errorf("batch answer 3: %v", arr[2])
	}
	wantRPCError(t, "id 2 twice in one batch", arr[3], -32600)

	p.send(`[{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]`)
	p.send(`[]`)
	wantRPCError(t, "empty batch (and nothing for the batch of a notification)", p.next("empty batch"), -32600)
	many := strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}},`, mcpMaxBatch)
	p.send(`[` + many + `{"jsonrpc":"2.0","id":9,"method":"ping"}]`)
	wantRPCError(t, "batch too long", p.next("batch too long"), -32600)
	p.wantSearch(4, "search after the batches")
}

// Lines of the wrong shape or size each get an error, and the server
// keeps serving: a line past mcpMaxLine is read through without being
// held, and members of the wrong JSON type are Invalid Requests.
func TestMCPServerSurvivesHostileLines(t *testing.T) {
	p := startMCP(t, heronHome(t))
	p.initialize("2025-11-25")
	huge := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"` + strings.Repeat("a", mcpMaxLine) + `"}}`
	p.send(huge)
	wantRPCError(t, "huge line", p.next("huge line"), -32700)
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":7}`,
		`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
		`"just a string"`,
		`42`,
		`null`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	} {
		p.send(bad)
		wantRPCError(t, bad[:min(len(bad), 40)], p.next(bad), -32600)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"not an object"}`)
	if m, _ := p.next("params of the wrong type").(map[string]any); m["id"] != float64(5) || m["error"] == nil {
		t.Errorf("params of the wrong type: %v", m)
	}
	p.send(`  {"jsonrpc":"2.0","id":6,"method":"ping"}  ` + "\r")
	if m, _ := p.next("spaces around a message").(map[string]any); m["id"] != float64(6) || m["result"] == nil {
		t.Errorf("spaces around a message: %v", m)
	}
	p.wantSearch(4, "search after the bad lines")
}
