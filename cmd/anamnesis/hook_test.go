package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	_ "modernc.org/sqlite"
)

// failOpen asserts the hook contract for bad situations: exit 0, nothing
// on stdout, exactly one line on stderr.
func assertFailOpen(t *testing.T, name string, r result) {
	t.Helper()
	if r.code != 0 || r.stdout != "" || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 || r.stderr == "" {
		t.Errorf("%s: exit %d stdout %q stderr %q", name, r.code, r.stdout, r.stderr)
	}
}

func TestClaudeHooksFailOpen(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "n", "--body", "b"))
	garbage := make([]byte, 4096)
	rand.Read(garbage)
	for _, hook := range []string{"session-start", "prompt", "session-end", "pre-compact"} {
		assertFailOpen(t, hook+" empty stdin", anm(t, home, "", "hook", hook))
		assertFailOpen(t, hook+" bad json", anm(t, home, `{"session_id": `, "hook", hook))
		assertFailOpen(t, hook+" not an object", anm(t, home, `[1,2,3]`, "hook", hook))
		assertFailOpen(t, hook+" binary", anm(t, home, string(garbage), "hook", hook))
		assertFailOpen(t, hook+" missing store", anm(t, filepath.Join(t.TempDir(), "nope"), `{"session_id":"s","cwd":"/tmp"}`, "hook", hook))
	}
	big := `{"prompt":"` + strings.Repeat("a", 100<<20) + `"}`
	assertFailOpen(t, "prompt 100 MB stdin", anm(t, home, big, "hook", "prompt"))
	assertFailOpen(t, "session-end missing transcript", anm(t, home, `{"session_id":"s","transcript_path":"/no/such/file.jsonl"}`, "hook", "session-end"))
	if _, err := os.Stat(filepath.Join(filepath.Dir(home), "nope")); err == nil {
		t.Error("a hook created a store it was not asked for")
	}
}

// TestCaptureWithLockedIndexKeepsTheNote: another process holds the
// index's write lock past the hook's short busy timeout. The hook still
// returns fast, and the captured note is kept and committed (a write never
// fails because of the index); the next reindex indexes it.
func TestCaptureWithLockedIndexKeepsTheNote(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "n", "--body", "b"))
	db, err := sql.Open("sqlite", filepath.Join(home, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx0())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx0(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx0(), "ROLLBACK")
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"s9","message":{"role":"user","content":"remember that the build needs make 4.3"}}`+"\n"), 0o644)
	start := time.Now()
	r := anm(t, home, `{"session_id":"s9","transcript_path":"`+tr+`","cwd":"/tmp"}`, "hook", "session-end")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "saved but not indexed yet") || !strings.Contains(r.stderr, "wrote session note") || rawSQLite(r.stderr) {
		t.Errorf("session-end with a locked index: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("hook took %v with a locked index", took)
	}
	conn.ExecContext(ctx0(), "ROLLBACK")
	// The note file is the truth: the capture is kept, committed, and
	// indexed by the next reindex.
	matches, _ := filepath.Glob(filepath.Join(home, "memory", "episodic", "*.md"))
	if len(matches) != 1 {
		t.Fatalf("captured notes: %v", matches)
	}
	id := strings.TrimSuffix(filepath.Base(matches[0]), ".md")
	if !committedIDs(t, home)[id] {
		t.Errorf("capture %s not committed", id)
	}
	mustOK(t, anm(t, home, "", "reindex"))
	if !listedIDs(t, home)[id] {
		t.Errorf("capture %s not indexed by reindex", id)
	}
}

func TestSessionStartHookOutput(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "User prefers tabs", "--body", "gofmt style"))
	r := mustOK(t, anm(t, home, `{"session_id":"s1","cwd":"/tmp","source":"startup"}`, "hook", "session-start"))
	if !strings.HasPrefix(r.stdout, `{"hookSpecificOutput":{"additionalContext":"<anamnesis-memory`) || !strings.Contains(r.stdout, `"hookEventName":"SessionStart"`) {
		t.Errorf("stdout %s", r.stdout)
	}
	var buf bytes.Buffer
	cmd := exec.Command(binary, "hook", "session-start")
	cmd.Env = append(os.Environ(), "ANAMNESIS_HOME="+home)
	cmd.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	cmd.Stdout = &buf
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
}

func ctx0() context.Context { return context.Background() }

// TestSessionEndSyncsInTheBackground: with a remote configured, the
// captured note reaches the hub through the detached sync the hook starts,
// while the hook itself returns at once.
func TestSessionEndSyncsInTheBackground(t *testing.T) {
	hub := testutil.BareHub(t)
	home := t.TempDir()
	awaitDetached(t, home)
	mustOK(t, anmRemote(t, home, "desk", hub, "", "write", "--type", "semantic", "--title", "seed", "--body", "b"))
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"bg1","message":{"role":"user","content":"remember the heron deploy window"}}`+"\n"), 0o644)
	start := time.Now()
	r := anmRemote(t, home, "desk", hub, `{"session_id":"bg1","transcript_path":"`+tr+`","cwd":"/tmp"}`, "hook", "session-end")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("hook: %+v", r)
	}
	took := time.Since(start)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		cmd := exec.Command("git", "-C", hub, "log", "--all", "--name-only", "--format=")
		out, _ := cmd.Output()
		if strings.Contains(string(out), "episodic/") {
			if took > 2*time.Second {
				t.Errorf("the hook waited for the sync (%v)", took)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(home, "state", "sync.log"))
	t.Fatalf("the hub never received the session note; sync.log:\n%s", log)
}

// TestHookDefersAnIndexRebuild: after an upgrade changes the index layout
// (or the index is damaged), a hook must not spend seconds rebuilding it
// inside Claude Code's budget. It fails open at once, starts the rebuild
// in the background, and the next hook has memory again.
func TestHookDefersAnIndexRebuild(t *testing.T) {
	home := t.TempDir()
	awaitDetached(t, home)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron migration notes", "--body", "the heron flies south in autumn"))
	db, err := sql.Open("sqlite", filepath.Join(home, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE index_meta SET value = 'go-0' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	start := time.Now()
	r := anm(t, home, `{"session_id":"s1","cwd":"/tmp","prompt":"where does the heron fly in autumn"}`, "hook", "prompt")
	assertFailOpen(t, "prompt hook on a stale index", r)
	if !strings.Contains(r.stderr, "rebuilding it in the background") {
		t.Errorf("stderr %q does not say the rebuild runs in the background", r.stderr)
	}
	t.Logf("hook returned in %v", time.Since(start))
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = anm(t, home, `{"session_id":"s1","cwd":"/tmp","prompt":"where does the heron fly in autumn"}`, "hook", "prompt")
		if strings.Contains(r.stdout, "Heron migration notes") {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(home, "state", "reindex.log"))
			t.Fatalf("no recall 20 s after the background rebuild started: hook %+v, reindex log %q", r, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDoctorFixRebuildsDisagreeingPostings: doctor reports postings that
// disagree with FTS5 as a problem (exit 1), and --fix rebuilds the index
// and says so.
func TestDoctorFixRebuildsDisagreeingPostings(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Heron", "--body", "the heron flies south"))
	db, err := sql.Open("sqlite", filepath.Join(home, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE index_df SET df = 7 WHERE term = 'heron'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := anm(t, home, "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "problem: search postings: disagree with FTS5 for 1 tokens") || !strings.Contains(r.stdout, "heron") {
		t.Fatalf("doctor on disagreeing postings: exit %d\n%s", r.code, r.stdout)
	}
	r = anm(t, home, "", "doctor", "--fix", "--json")
	if !strings.Contains(r.stdout, `"rebuilt_index": true`) {
		t.Errorf("doctor --fix --json does not report the rebuild:\n%s", r.stdout)
	}
	if r := anm(t, home, "", "doctor"); !strings.Contains(r.stdout, "ok:     search postings: agree with FTS5") {
		t.Errorf("after --fix:\n%s", r.stdout)
	}
	if r := anm(t, home, "", "doctor", "--fix", "--json"); !strings.Contains(r.stdout, `"rebuilt_index": false`) {
		t.Errorf("a healthy index was rebuilt again:\n%s", r.stdout)
	}
}

// TestPreToolUseHook: the plugin's PreToolUse hook allows the read-only
// memory tools and is silent on any other, from the tool name alone (no
// store needed, none created); bad input fails open like every hook.
func TestPreToolUseHook(t *testing.T) {
	nope := filepath.Join(t.TempDir(), "nope")
	r := mustOK(t, anm(t, nope, `{"hook_event_name":"PreToolUse","tool_name":"mcp__plugin_anamnesis_anamnesis__memory_search","tool_input":{"query":"x"}}`, "hook", "pre-tool-use"))
	if !strings.Contains(r.stdout, `"permissionDecision":"allow"`) || r.stderr != "" {
		t.Errorf("read-only tool: stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = mustOK(t, anm(t, nope, `{"hook_event_name":"PreToolUse","tool_name":"mcp__plugin_anamnesis_anamnesis__memory_write"}`, "hook", "pre-tool-use"))
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("memory_write: stdout %q stderr %q", r.stdout, r.stderr)
	}
	assertFailOpen(t, "pre-tool-use bad json", anm(t, nope, `{"tool_name": `, "hook", "pre-tool-use"))
	if _, err := os.Stat(nope); err == nil {
		t.Error("pre-tool-use created a store")
	}
}

// A hook written by init (--unless-plugin) does nothing in a project where
// the anamnesis plugin is active, whose own hook (without the flag) does
// the work, so that project's sessions do not get their memory twice;
// elsewhere it runs as before.
func TestHookStepsAsideForThePlugin(t *testing.T) {
	home, claude, project, other := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "User prefers tabs", "--body", "gofmt style"))
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"enabledPlugins": {"anamnesis@anamnesis": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	installed := fmt.Sprintf(`{"version": 2, "plugins": {"anamnesis@anamnesis": [{"scope": "project", "projectPath": %q, "installPath": "/c"}]}}`, project)
	if err := os.MkdirAll(filepath.Join(claude, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claude, "plugins", "installed_plugins.json"), []byte(installed), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := func(cwd, projectDir string, args ...string) string {
		env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "CLAUDE_CONFIG_DIR="+claude, "CLAUDE_PROJECT_DIR="+projectDir)
		in := fmt.Sprintf(`{"session_id":"s-%d","cwd":%q,"source":"startup"}`, time.Now().UnixNano(), cwd)
		return mustOK(t, runCmd(t, env, in, append([]string{"hook", "session-start"}, args...)...)).stdout
	}
	for _, c := range []struct {
		name, cwd, projectDir string
		args                  []string
		injects               bool
	}{
		{"init's hook in the plugin's project", project, project, []string{"--unless-plugin"}, false},
		{"init's hook in a subdirectory of it", filepath.Join(project, "sub"), project, []string{"--unless-plugin"}, false},
		{"init's hook, no CLAUDE_PROJECT_DIR: the session's directory", project, "", []string{"--unless-plugin"}, false},
		{"the plugin's own hook", project, project, nil, true},
		{"init's hook in another project", other, other, []string{"--unless-plugin"}, true},
	} {
		if got := strings.Contains(hook(c.cwd, c.projectDir, c.args...), "User prefers tabs"); got != c.injects {
			t.Errorf("%s: injected %v, want %v", c.name, got, c.injects)
		}
	}
}

// TestHooksOffForConsolidationRuns: a Claude Code run that consolidate
// starts as a model carries ANAMNESIS_HOOKS_OFF=1; our hooks then inject
// nothing and capture nothing.
func TestHooksOffForConsolidationRuns(t *testing.T) {
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "User prefers tabs", "--body", "gofmt style"))
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest", "ANAMNESIS_HOOKS_OFF=1")
	r := mustOK(t, runCmd(t, env, `{"session_id":"s1","cwd":"/tmp","source":"startup"}`, "hook", "session-start"))
	if r.stdout != "" {
		t.Errorf("session-start injected with hooks off: %s", r.stdout)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","sessionId":"off1","message":{"role":"user","content":"remember the heron deploy window and the kestrel rollout plan"}}`+"\n"), 0o644)
	mustOK(t, runCmd(t, env, `{"session_id":"off1","transcript_path":"`+tr+`","cwd":"/tmp"}`, "hook", "session-end"))
	if out := mustOK(t, anm(t, home, "", "list", "--type", "episodic")).stdout; strings.Contains(out, "heron") {
		t.Errorf("captured with hooks off: %s", out)
	}
	// Without the variable the same hook injects (the test would pass vacuously otherwise).
	if r := mustOK(t, anm(t, home, `{"session_id":"s2","cwd":"/tmp","source":"startup"}`, "hook", "session-start")); r.stdout == "" {
		t.Error("session-start injected nothing without the variable")
	}
}
