package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/synth"
	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/note"
)

// TestStatusWhileALargePullRuns is the report of issue 12 with real
// processes: `anamnesis status` in a loop while a second machine pulls
// thousands of notes. A status that removed the checkout's temporary
// files made the sync fail ("rename ... no such file or directory"), and
// the next sync committed the other machine's notes as a local commit.
func TestStatusWhileALargePullRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("pulls thousands of notes")
	}
	hub := testutil.BareHub(t)
	a, b := t.TempDir(), t.TempDir()
	mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync")) // b's repository exists, empty
	mem := note.Tree{Root: filepath.Join(a, "memory"), Scope: note.ScopePortable}
	const n = 1500
	if _, err := synth.Fill(mem, synth.NewGen(synth.NewVocab(2000, 1), 1), n, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	mustOK(t, anmRemote(t, a, "desk", hub, "", "sync"))

	var done atomic.Bool
	var wg sync.WaitGroup
	var statuses atomic.Int64
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if r := anmRemoteProcess(t, b, "laptop", hub, "", "status", "--json"); r.code != 0 {
					t.Errorf("status during the pull: exit %d: %s", r.code, r.stderr)
				}
				statuses.Add(1)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the readers are running
	pull := anmRemoteProcess(t, b, "laptop", hub, "", "sync", "--json")
	done.Store(true)
	wg.Wait()
	t.Logf("%d status runs alongside the pull", statuses.Load())
	if pull.code != 0 {
		t.Errorf("the pull failed while status ran: %s", pull.stderr)
	}
	next := mustOK(t, anmRemote(t, b, "laptop", hub, "", "sync", "--json"))
	if strings.Contains(next.stdout, `"committed": true`) {
		t.Errorf("the next sync committed pulled notes as local changes: %s", next.stdout)
	}
	memB := filepath.Join(b, "memory")
	if head, hubHead := testutil.Git(t, memB, "rev-parse", "main"), testutil.Git(t, hub, "rev-parse", "main"); head != hubHead {
		t.Errorf("b's head %s is not the hub's %s", head, hubHead)
	}
	if st := testutil.Git(t, memB, "status", "--porcelain"); st != "" {
		t.Errorf("b's worktree differs from its head:\n%s", st)
	}
	if got := strings.Count(testutil.Git(t, memB, "ls-files"), ".md"); got != n {
		t.Errorf("b has %d notes, want %d", got, n)
	}
}

// memorySnapshot records every file and directory under memory/ (.git
// included) by mode, size and modification time: creating and removing
// even a temporary file changes its directory's time.
func memorySnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadersLeaveMemoryUntouched: nothing but the holder of the
// repository lock changes memory/. Every command that only reads
// (status, doctor, list, search, show, the prompt and session-start
// hooks, a git hook, MCP memory_status) runs against a store that even has
// a checkout leftover of a killed sync, and memory/ must be exactly as
// before: the leftover is the next sync's to remove, under the lock.
func TestReadersLeaveMemoryUntouched(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	id := strings.TrimSpace(mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "heron deploy window",
		"--body", "The heron service deploys on Tuesdays.")).stdout)
	mustOK(t, anmRemote(t, home, "desk", hub, "", "sync"))
	mem := filepath.Join(home, "memory")
	leftover := filepath.Join(mem, "semantic", "01KDVDQ6HG70WYWNJJFGXJZPAB.md.anamnesis-tmp")
	if err := os.WriteFile(leftover, []byte("half a checkout"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // any later change gets a later time
	before := memorySnapshot(t, mem)

	readers := []struct {
		stdin string
		args  []string
	}{
		{"", []string{"status"}},
		{"", []string{"status", "--json"}},
		{"", []string{"doctor"}},
		{"", []string{"doctor", "--json"}},
		{"", []string{"list"}},
		{"", []string{"search", "heron"}},
		{"", []string{"show", id}},
		{`{"session_id":"s1","cwd":"/tmp","prompt":"when does heron deploy"}`, []string{"hook", "prompt"}},
		{`{"session_id":"s1","cwd":"/tmp","source":"startup"}`, []string{"hook", "session-start"}},
		{"", []string{"hook", "post-merge", "0"}},
		{"memory_status", []string{"mcp"}},
	}
	for _, r := range readers {
		env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=desk")
		if r.args[0] != "hook" { // a session-start hook with a remote starts a sync: a writer
			env = append(env, "ANAMNESIS_GIT_REMOTE="+hub)
		}
		if r.args[0] == "mcp" {
			if out := mcpTool(t, env, r.stdin); !strings.Contains(out, `"notes"`) {
				t.Errorf("mcp %s gave no status: %s", r.stdin, out)
			}
		} else if res := runCmd(t, env, r.stdin, r.args...); res.code != 0 {
			t.Errorf("%v: exit %d: %s", r.args, res.code, res.stderr)
		}
		after := memorySnapshot(t, mem)
		for p, was := range before {
			if now, ok := after[p]; !ok {
				t.Errorf("%v removed %s", r.args, p)
			} else if now != was {
				t.Errorf("%v changed %s (%s, was %s)", r.args, p, now, was)
			}
		}
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("%v left %s behind", r.args, p)
			}
		}
		before = after
	}
}

// mcpTool runs `anamnesis mcp` as Claude Code does (JSON-RPC lines on
// stdin and stdout), calls one tool without arguments and returns the
// answer line. stdin stays open until the answer came: at end of input
// the server stops, dropping calls still in flight.
func mcpTool(t *testing.T, env []string, tool string) string {
	t.Helper()
	cmd := exec.Command(binary, "mcp")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":{}}}`+"\n", tool)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":2,`) {
			return sc.Text()
		}
	}
	return ""
}
