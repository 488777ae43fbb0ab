package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/consolidate"
	"github.com/anamnesis-memory/anamnesis/index"
)

// reflectingServer is an OpenAI-compatible endpoint whose every reply
// distils the sessions into one note, counting the calls.
func reflectingServer(t *testing.T, calls *atomic.Int32) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		reply := `[{"type":"procedural","title":"Deploys: heron window, kestrel flush, osprey migration, plover lint, wren notes","body":"heron deploy window; kestrel cache flush; osprey schema migration; plover lint rules; wren release notes"}]`
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": reply}}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestConsolidateCommand(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	var calls atomic.Int32
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest",
		"ANAMNESIS_REFLECTION_PROVIDER=local", "ANAMNESIS_REFLECTION_MODEL=fake-7b",
		"ANAMNESIS_REFLECTION_BASE_URL="+reflectingServer(t, &calls), "ANAMNESIS_REFLECTION_API_KEY=none")
	run := func(args ...string) result { return mustOK(t, runCmd(t, env, "", args...)) }
	for _, topic := range []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"} {
		run("write", "--type", "episodic", "--project", "proj", "--title", "session: "+topic, "--body", "Ask: "+topic+"\nOutcome: settled the "+topic+" with make -j2 on the build box")
	}
	// Without --apply: what it would do, nothing written.
	out := run("consolidate", "--project", "proj").stdout
	if !strings.Contains(out, "would reflect proj:") || !strings.Contains(out, "model local/fake-7b: 1 call(s)") {
		t.Fatalf("dry run:\n%s", out)
	}
	if n := strings.Count(run("list", "--project", "proj").stdout, "\n"); n != 5 {
		t.Fatalf("dry run changed the list (%d lines)", n)
	}
	// Applied: one run, recall reported, the sessions hidden.
	out = run("consolidate", "--project", "proj", "--apply").stdout
	if !strings.Contains(out, "applied: reflect proj:") || !strings.Contains(out, "recall@8 on") {
		t.Fatalf("apply:\n%s", out)
	}
	if list := run("list", "--project", "proj").stdout; !strings.Contains(list, "session: heron deploy window  (superseded)") || !strings.Contains(list, "Deploys: heron window") {
		t.Fatalf("list after apply:\n%s", list)
	}
	if st := run("status").stdout; !strings.Contains(st, "consolidate: today 2 model call(s)") {
		t.Fatalf("status:\n%s", st)
	}
	if log := run("consolidate", "--log").stdout; !strings.Contains(log, "local/fake-7b") || !strings.Contains(log, "reflect proj:") {
		t.Fatalf("log:\n%s", log)
	}
	run("consolidate", "--undo")
	if list := run("list", "--project", "proj").stdout; strings.Contains(list, "(superseded)") || strings.Contains(list, "Deploys: heron window") {
		t.Fatalf("list after undo:\n%s", list)
	}
	// The run limit is enforced before a call.
	before := calls.Load()
	out = run("consolidate", "--project", "proj", "--max-calls", "0").stdout
	if calls.Load() != before || !strings.Contains(out, "stopped: consolidation budget reached") {
		t.Fatalf("max-calls 0 made a call or said nothing:\n%s", out)
	}
	// And the daily one, across runs.
	out = run("consolidate", "--project", "proj", "--max-calls-day", "2").stdout
	if calls.Load() != before || !strings.Contains(out, "2 of 2 call(s) today") {
		t.Fatalf("max-calls-day:\n%s", out)
	}
	// Review: pending, then accepted.
	out = run("consolidate", "--project", "proj", "--review").stdout
	if !strings.Contains(out, "1 proposal(s) pending review") {
		t.Fatalf("review:\n%s", out)
	}
	if list := run("list", "--project", "proj").stdout; strings.Contains(list, "Deploys: heron window") {
		t.Fatalf("a pending proposal was written:\n%s", list)
	}
	listing := run("consolidate", "--review").stdout
	id, _, _ := strings.Cut(listing, " ")
	if !strings.Contains(listing, "reflect proj:") || len(id) != 8 {
		t.Fatalf("pending listing:\n%s", listing)
	}
	run("consolidate", "--accept", id)
	if list := run("list", "--project", "proj").stdout; !strings.Contains(list, "Deploys: heron window") {
		t.Fatalf("accepted proposal not applied:\n%s", list)
	}
}

// TestConsolidateWithClaudeCLI: provider claude runs the claude on PATH
// as a plain model, with our hooks off.
func TestConsolidateWithClaudeCLI(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	bin := t.TempDir()
	reply := `{"type":"result","subtype":"success","is_error":false,"result":"","total_cost_usd":0.02,"structured_output":{"notes":[{"type":"semantic","title":"Heron deploys on tuesdays","body":"heron deploy window, kestrel cache flush, osprey schema migration, plover lint rules, wren release notes"}]}}`
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s' \"$ANAMNESIS_HOOKS_OFF\" > %q\ncat >/dev/null\nprintf '%%s' '%s'\n", filepath.Join(bin, "hooksoff"), reply)
	os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755)
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "ANAMNESIS_REFLECTION_PROVIDER=claude",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, topic := range []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"} {
		mustOK(t, runCmd(t, env, "", "write", "--type", "episodic", "--project", "proj", "--title", "session: "+topic, "--body", "Ask: "+topic))
	}
	var rep struct {
		Applied []struct{ ID string }
		Plan    struct {
			Model string
			USD   float64
		}
	}
	out := mustOK(t, runCmd(t, env, "", "consolidate", "--apply", "--json")).stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Applied) != 1 || rep.Plan.Model != "claude-code" || rep.Plan.USD != 0.02 {
		t.Fatalf("%v\n%s", err, out)
	}
	if off, _ := os.ReadFile(filepath.Join(bin, "hooksoff")); string(off) != "1" {
		t.Fatalf("ANAMNESIS_HOOKS_OFF=%q", off)
	}
	if st := mustOK(t, runCmd(t, env, "", "status")).stdout; !strings.Contains(st, "$0.0200") {
		t.Fatalf("status:\n%s", st)
	}
}

// distiller is a Model for in-process tests: every reflection is one note.
type distiller struct{}

func (distiller) Name() string { return "test/distiller" }
func (distiller) Complete(context.Context, consolidate.Request) (consolidate.Reply, error) {
	return consolidate.Reply{Text: `[{"type":"semantic","title":"Distilled routine","body":"heron deploy window, kestrel cache flush, osprey schema migration, plover lint rules, wren release notes"}]`}, nil
}

func TestMCPReview(t *testing.T) {
	parallel(t)
	cs, s := mcpSession(t)
	ctx := context.Background()
	for _, topic := range []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"} {
		if _, _, err := s.Write(ctx, anamnesis.WriteRequest{Type: "episodic", Project: "proj", Title: "session: " + topic, Body: "Outcome: settled the " + topic + " with make -j2 on the box"}); err != nil {
			t.Fatal(err)
		}
	}
	b := &consolidate.Budget{Limits: consolidate.DefaultLimits(), Path: filepath.Join(t.TempDir(), "b.json")}
	if _, err := s.Consolidate(ctx, anamnesis.ConsolidateOptions{Planner: &consolidate.Planner{Model: distiller{}, Budget: b}, Review: true}); err != nil {
		t.Fatal(err)
	}
	res, text := call(t, cs, "memory_review", map[string]any{})
	var out struct {
		Pending []struct {
			ID          string
			Description string
			Replaces    []struct{ Title string }
		}
	}
	if res.IsError || json.Unmarshal([]byte(text), &out) != nil || len(out.Pending) != 1 || len(out.Pending[0].Replaces) != 5 ||
		!strings.Contains(out.Pending[0].Description, "Distilled routine") {
		t.Fatalf("list: %s", text)
	}
	if res, text := call(t, cs, "memory_review", map[string]any{"action": "accept", "id": "nope"}); !res.IsError {
		t.Fatalf("accepted an unknown id: %s", text)
	}
	res, text = call(t, cs, "memory_review", map[string]any{"action": "accept", "id": out.Pending[0].ID})
	if res.IsError || !strings.Contains(text, `"run"`) {
		t.Fatalf("accept: %s", text)
	}
	hits, _ := s.Search(ctx, "Distilled routine", index.Filter{})
	if len(hits) == 0 || hits[0].Title != "Distilled routine" {
		t.Fatalf("accepted note not found: %v", hits)
	}
	if _, text = call(t, cs, "memory_review", map[string]any{}); strings.Contains(text, "Distilled") {
		t.Fatalf("still pending: %s", text)
	}
}

// TestAutoConsolidateAfterSessionEnd: with automatic runs on, SessionEnd
// starts a detached `consolidate --apply` for the session's project; off
// (the default), it starts none.
func TestAutoConsolidateAfterSessionEnd(t *testing.T) {
	parallel(t)
	for _, auto := range []bool{false, true} {
		home := t.TempDir()
		awaitDetached(t, home)
		var calls atomic.Int32
		env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest",
			"ANAMNESIS_REFLECTION_PROVIDER=local", "ANAMNESIS_REFLECTION_MODEL=fake-7b",
			"ANAMNESIS_REFLECTION_BASE_URL="+reflectingServer(t, &calls), "ANAMNESIS_REFLECTION_API_KEY=none")
		if auto {
			env = append(env, "ANAMNESIS_REFLECT_AUTO=1")
		}
		for _, topic := range []string{"heron deploy window", "kestrel cache flush", "osprey schema migration", "plover lint rules", "wren release notes"} {
			mustOK(t, runCmd(t, env, "", "write", "--type", "episodic", "--project", "proj", "--title", "session: "+topic,
				"--body", "Outcome: settled the "+topic+" with make -j2 on the build box"))
		}
		dir := filepath.Join(t.TempDir(), "proj")
		os.MkdirAll(filepath.Join(dir, ".anamnesis"), 0o755)
		os.WriteFile(filepath.Join(dir, ".anamnesis", "project"), []byte("proj\n"), 0o644)
		tr := filepath.Join(t.TempDir(), "t.jsonl")
		os.WriteFile(tr, []byte(`{"type":"user","sessionId":"auto1","message":{"role":"user","content":"remember the heron deploy window moved to tuesday"}}`+"\n"), 0o644)
		r := mustOK(t, runCmd(t, env, `{"session_id":"auto1","transcript_path":"`+tr+`","cwd":"`+dir+`"}`, "hook", "session-end"))
		if !strings.Contains(r.stderr, "wrote session note") {
			t.Fatalf("nothing captured: %s", r.stderr)
		}
		if !detachedDone(home, 30*time.Second) {
			t.Fatal("the background run did not end")
		}
		list := mustOK(t, runCmd(t, env, "", "list", "--project", "proj")).stdout
		distilled := strings.Contains(list, "Deploys: heron window")
		if distilled != auto || (calls.Load() > 0) != auto {
			t.Errorf("auto=%v: distilled %v, model calls %d\n%s", auto, distilled, calls.Load(), list)
		}
	}
}
