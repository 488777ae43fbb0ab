package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anamnesis-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "anamnesis")
	// Every sync imports Claude Code's auto memory: point the binaries
	// the tests run at an empty Claude directory, not the runner's own
	// (tests that need one set their own CLAUDE_CONFIG_DIR).
	os.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(dir, "claude"))
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func anm(t *testing.T, home, stdin string, args ...string) result {
	t.Helper()
	return runCmd(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest"), stdin, args...)
}

// anmProcess is anm in a process of the built binary: for tests where
// several processes at once are the point (their locks, SQLite's, a sync
// others wait for), or a process killed.
func anmProcess(t *testing.T, home, stdin string, args ...string) result {
	t.Helper()
	return runProcess(t, append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=clitest"), stdin, args...)
}

// awaitDetached makes the test wait, before its temporary directories go,
// for processes a hook started detached (a background sync or reindex)
// on home: they outlive the hook by design, and one still writing
// objects makes the directory's removal fail. It reads /proc (Linux).
func awaitDetached(t *testing.T, home string) {
	t.Cleanup(func() {
		if !detachedDone(home, 30*time.Second) {
			t.Errorf("a detached process on %s still runs 30 s after the test", home)
		}
	})
}

// detachedDone waits up to timeout until no process runs with home on
// its command line, and reports whether that happened.
func detachedDone(home string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		busy := false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(cmdline), home) {
				busy = true
				break
			}
		}
		if !busy {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// runCmd runs the CLI with env and stdin and collects its output and
// exit code; only a failure to start it fails the test. It runs in-process
// (run, with env as the command's environment and the built binary as
// the one it starts detached commands with) when every variable env sets
// differently from this process is one that run reads through its
// procEnv (threadedEnv); otherwise, e.g. for another HOME or PATH that
// the packages below cmd or the programs it starts read themselves, it
// runs the built binary. Tests where the process is the point (signals,
// kills, concurrency, hooks started by Claude Code) use runProcess.
func runCmd(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	if !inProcess(env) {
		return runProcess(t, env, stdin, args...)
	}
	var out, errb bytes.Buffer
	e := procEnv{vars: env, executable: func() (string, error) { return binary, nil }}
	code := run(context.Background(), append([]string{binary}, args...), e, strings.NewReader(stdin), &out, &errb)
	return result{out.String(), errb.String(), code}
}

// parallel marks a CLI test that may run beside the others: each has its
// own homes and hubs, and run reads nothing process-wide. Not under the
// race detector: urfave/cli v2 writes its package-level HelpFlag and
// VersionFlag each time a command parses its flags (BoolFlag.Apply), a
// race between apps run at once in one process that is urfave/cli's, not
// the CLI's (the binary runs one app); under -race they run one at a time.
func parallel(t *testing.T) {
	if !raceEnabled {
		t.Parallel()
	}
}

// threadedEnv are the variables run reads only through its procEnv:
// nothing below cmd reads them from the process environment.
var threadedEnv = map[string]bool{
	"ANAMNESIS_HOME": true, "ANAMNESIS_MACHINE_ID": true, remoteEnv: true, tailscaleSocketEnv: true,
	"ANAMNESIS_HOOKS_OFF": true, "CLAUDE_PROJECT_DIR": true, "ANAMNESIS_REFLECT_AUTO": true,
	"ANAMNESIS_REFLECTION_PROVIDER": true, "ANAMNESIS_REFLECTION_MODEL": true,
	"ANAMNESIS_REFLECTION_BASE_URL": true, "ANAMNESIS_REFLECTION_API_KEY": true,
}

// inProcess reports whether env differs from this process's environment
// only in threadedEnv, so that run in this process sees what the built
// binary started with env would.
func inProcess(env []string) bool {
	own, want := envMap(os.Environ()), envMap(env)
	for k, v := range want {
		if ov, ok := own[k]; (!ok || ov != v) && !threadedEnv[k] {
			return false
		}
	}
	for k := range own {
		if _, ok := want[k]; !ok && !threadedEnv[k] {
			return false
		}
	}
	return true
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// runProcess runs the built binary with env and stdin and collects its
// output and exit code; only a failure to start it fails the test.
func runProcess(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// initHome sets up a store at home the way a user does, with nothing
// outside it touched (no Claude Code settings, MCP registration or sync).
func initHome(t *testing.T, home string) {
	t.Helper()
	mustOK(t, anm(t, home, "", "init", "--yes", "--local-only", "--no-claude", "--no-mcp", "--no-git-hooks", "--no-sync"))
}

func mustOK(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

const seedQuery = "how to configure a SQLite connection to avoid lock errors on concurrent writes"

func TestUserFlowFromTheIssue(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	r := mustOK(t, anm(t, home, "", "write", "--type", "procedural", "--title", "Use WAL mode for SQLite", "--project", "demo",
		"--tags", "sqlite,db", "--body", "Set busy_timeout on every connection to avoid lock errors."))
	id := strings.TrimSpace(r.stdout)
	if len(id) != 26 {
		t.Fatalf("write printed %q", r.stdout)
	}
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Coffee", "--body", "The user drinks it black."))

	r = mustOK(t, anm(t, home, "", append([]string{"search"}, strings.Fields(seedQuery)...)...))
	if !strings.HasPrefix(r.stdout, "1. [procedural] Use WAL mode for SQLite") || !strings.Contains(r.stdout, id) {
		t.Errorf("search output:\n%s", r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "search", "--json", "-k", "1", seedQuery))
	var sr struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || len(sr.Results) != 1 || sr.Results[0]["id"] != id {
		t.Fatalf("search --json: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"id", "type", "title", "project", "scope", "tags", "created_at", "updated_at", "supersedes", "body", "score"} {
		if _, ok := sr.Results[0][k]; !ok {
			t.Errorf("search result lacks %q", k)
		}
	}

	r = mustOK(t, anm(t, home, "", "list", "--project", "demo", "--json"))
	var lr struct {
		Results []struct {
			ID   string   `json:"id"`
			Tags []string `json:"tags"`
			Body string   `json:"body"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &lr); err != nil || len(lr.Results) != 1 || lr.Results[0].ID != id ||
		strings.Join(lr.Results[0].Tags, ",") != "sqlite,db" {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}

	r = mustOK(t, anm(t, home, "", "show", id))
	if !strings.HasPrefix(r.stdout, "---\nid: "+id+"\n") || !strings.Contains(r.stdout, "Set busy_timeout") {
		t.Errorf("show:\n%s", r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "status", "--json"))
	var st struct {
		Home  string `json:"home"`
		Notes struct {
			Total  int            `json:"total"`
			ByType map[string]int `json:"by_type"`
		} `json:"notes"`
		Index struct {
			Notes             int     `json:"notes"`
			LastIndexedCommit *string `json:"last_indexed_commit"`
		} `json:"index"`
		Sync map[string]any `json:"sync"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Home != home || st.Notes.Total != 2 ||
		st.Notes.ByType["procedural"] != 1 || st.Index.Notes != 2 || st.Index.LastIndexedCommit == nil || st.Sync == nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "reindex"))
	if !strings.Contains(r.stdout, "2 notes indexed") {
		t.Errorf("reindex: %s", r.stdout)
	}
	mustOK(t, anm(t, home, "", "doctor"))
}

func TestBadArgumentsGiveClearErrors(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	initHome(t, home)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"show", "../../etc/passwd"}, 2, "not a note id"},
		{[]string{"show", "01M8096W5Y5VJW7T5A4YN4196Z"}, 1, "no note with that id"},
		{[]string{"show"}, 2, "exactly one note id"},
		{[]string{"write", "--type", "opinion", "--title", "t", "--body", "b"}, 2, "type \"opinion\""},
		{[]string{"write", "--type", "../x", "--title", "t", "--body", "b"}, 2, "type"},
		{[]string{"write", "--type", "semantic", "--body", "b"}, 2, "title"},
		{[]string{"write", "--type", "semantic", "--title", "t", "--scope", "world", "--body", "b"}, 2, "scope"},
		{[]string{"search"}, 2, "needs a query"},
		{[]string{"search", "-k", "0", "x"}, 2, "-k"},
		{[]string{"list", "--type", "bogus"}, 2, "type \"bogus\""},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"write", "--nope"}, 2, "nope"},
	}
	for _, c := range cases {
		r := anm(t, home, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	entries, _ := filepath.Glob(filepath.Join(home, "memory", "*", "*.md"))
	if len(entries) != 0 {
		t.Errorf("failed writes left notes: %v", entries)
	}
	for _, q := range []string{`state-of-the-art`, `16:9`, `"unbalanced`, `NEAR(a b)`, `*`, `foo AND`} {
		if r := anm(t, home, "", "search", q); r.code != 0 {
			t.Errorf("search %q: exit %d %s", q, r.code, r.stderr)
		}
	}
}

func TestWriteBodySources(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	id := strings.TrimSpace(mustOK(t, anm(t, home, "piped body text\n", "write", "--type", "semantic", "--title", "from stdin")).stdout)
	f := filepath.Join(t.TempDir(), "body.md")
	os.WriteFile(f, []byte("file body text\n"), 0o644)
	id2 := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "from file", "--body-file", f, "--json")).stdout)
	var w struct{ ID, Path string }
	if err := json.Unmarshal([]byte(id2), &w); err != nil || !strings.HasPrefix(w.Path, "memory/semantic/") {
		t.Fatalf("write --json: %s", id2)
	}
	for id, want := range map[string]string{id: "piped body text", w.ID: "file body text"} {
		r := mustOK(t, anm(t, home, "", "show", "--json", id))
		var n struct{ Body string }
		json.Unmarshal([]byte(r.stdout), &n)
		if n.Body != want {
			t.Errorf("body %q, want %q", n.Body, want)
		}
	}
}

func TestDeletedIndexIsRebuiltWithNotice(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "procedural", "--title", "Use WAL mode for SQLite", "--body", "busy_timeout avoids lock errors"))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(home, "index.db"+suffix))
	}
	r := mustOK(t, anm(t, home, "", "search", "--json", seedQuery))
	if !strings.Contains(r.stdout, "Use WAL mode") || !strings.Contains(r.stderr, "rebuilt") {
		t.Errorf("stdout %s\nstderr %s", r.stdout, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("notice should be one line: %q", r.stderr)
	}
}

func TestMalformedNoteIsNamedNotFatal(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "good", "--body", "good heron"))
	os.WriteFile(filepath.Join(home, "memory", "semantic", "broken.md"), []byte("---\ntitle: [\n---\n"), 0o644)
	r := mustOK(t, anm(t, home, "", "reindex"))
	if !strings.Contains(r.stdout, "memory/semantic/broken.md") {
		t.Errorf("reindex does not name the bad file:\n%s", r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "status"))
	if !strings.Contains(r.stdout, "memory/semantic/broken.md") {
		t.Errorf("status does not name the bad file:\n%s", r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "doctor"))
	if !strings.Contains(r.stdout, "broken.md") {
		t.Errorf("doctor does not name the bad file:\n%s", r.stdout)
	}
	if r := mustOK(t, anm(t, home, "", "search", "heron")); !strings.Contains(r.stdout, "good") {
		t.Errorf("good note lost: %s", r.stdout)
	}
}

func TestConcurrentProcesses(t *testing.T) {
	home := t.TempDir()
	initHome(t, home)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				for _, args := range [][]string{
					{"write", "--type", "semantic", "--title", fmt.Sprintf("p%d n%d", p, i), "--body", "parallel osprey"},
					{"search", "osprey"},
				} {
					if r := anmProcess(t, home, "", args...); r.code != 0 {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%v: %d %s", args, r.code, r.stderr))
						mu.Unlock()
					}
				}
			}
		}(p)
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	r := mustOK(t, anm(t, home, "", "list", "--json"))
	if n := strings.Count(r.stdout, `"id":`); n != 32 {
		t.Errorf("listed %d notes, want 32", n)
	}
}

func TestHelpExplainsEveryCommand(t *testing.T) {
	parallel(t)
	for _, c := range []string{"write", "show", "list", "search", "status", "doctor", "reindex"} {
		r := mustOK(t, anm(t, t.TempDir(), "", c, "--help"))
		if !strings.Contains(r.stdout, "USAGE") {
			t.Errorf("%s --help:\n%s", c, r.stdout)
		}
	}
}

func TestEvalOnATinyStore(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	a := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Pixel the greyhound",
		"--body", "Ann adopted a greyhound named Pixel in May. The dog sleeps on the blue sofa every afternoon.")).stdout)
	b := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Pottery class",
		"--body", "Bo starts a pottery class on Monday evenings. The studio is next to the old railway station.")).stdout)
	old := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Old wifi password rule",
		"--body", "rotate monthly")).stdout)
	mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "Wifi rule", "--body", "rotate quarterly", "--supersedes", old))
	ds := filepath.Join(t.TempDir(), "set.jsonl")
	os.WriteFile(ds, []byte(strings.Join([]string{
		`{"query":"what is the name of Ann's dog","relevant":["` + a + `"]}`,
		`{"query":"when is the pottery class","relevant":["` + b + `"]}`,
		`{"query":"how often do we rotate the wifi password","relevant":["` + old + `"]}`,
		`{"query":"unicorn xylophone","relevant":["` + a + `"]}`,
	}, "\n")+"\n"), 0o644)
	r := mustOK(t, anm(t, home, "", "eval", "--dataset", ds, "-k", "1,3", "--json"))
	var rep struct {
		Cases  int
		Recall map[string]float64
		MRR    float64
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// 3 of 4 found at rank 1 (the superseded note credited through its replacement), one finds nothing.
	if rep.Cases != 4 || rep.Recall["1"] != 0.75 || rep.Recall["3"] != 0.75 || rep.MRR != 0.75 {
		t.Errorf("report: %s", r.stdout)
	}
	r = mustOK(t, anm(t, home, "", "eval", "--self", "--n", "10"))
	if !strings.Contains(r.stdout, "eval: 2 queries from self-eval") || !strings.Contains(r.stdout, "recall@1 1.000") {
		t.Errorf("self-eval: %s", r.stdout)
	}
	if r := anm(t, home, "", "eval"); r.code != 2 {
		t.Errorf("eval without a query set: exit %d", r.code)
	}
	os.WriteFile(ds, []byte("{broken\n"), 0o644)
	if r := anm(t, home, "", "eval", "--dataset", ds); r.code != 1 || !strings.Contains(r.stderr, "line 1") {
		t.Errorf("malformed dataset: %d %s", r.code, r.stderr)
	}
}

// TestSearchDecayDaysFlag: --decay-days reaches the ranking (a tiny decay
// constant makes the newer, weaker match win) and a negative value is a
// usage error.
func TestSearchDecayDaysFlag(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	old := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "sqlite busy timeout", "--body", "Set the sqlite busy timeout to avoid lock errors.")).stdout)
	time.Sleep(1100 * time.Millisecond) // updated_at has one-second resolution
	recent := strings.TrimSpace(mustOK(t, anm(t, home, "", "write", "--type", "semantic", "--title", "sqlite", "--body", "Use WAL mode.")).stdout)
	firstID := func(args ...string) string {
		t.Helper()
		out := mustOK(t, anm(t, home, "", append([]string{"search", "--json", "-k", "1"}, args...)...)).stdout
		var r struct {
			Results []struct{ ID string } `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Results) != 1 {
			t.Fatalf("search output %q: %v", out, err)
		}
		return r.Results[0].ID
	}
	if got := firstID("sqlite", "busy", "timeout", "lock"); got != old {
		t.Fatalf("without decay the better match should win, got %s", got)
	}
	if got := firstID("--decay-days", "0.000001", "sqlite", "busy", "timeout", "lock"); got != recent {
		t.Errorf("--decay-days did not favour the newer note, got %s", got)
	}
	if r := anm(t, home, "", "search", "--decay-days", "-1", "sqlite"); r.code != 2 || !strings.Contains(r.stderr, "decay-days") {
		t.Errorf("negative --decay-days: exit %d, %q", r.code, r.stderr)
	}
}
