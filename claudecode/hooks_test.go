package claudecode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

func TestParseTranscriptSkipsNoise(t *testing.T) {
	s, err := ParseTranscript("testdata/transcript.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionID != "55550000-0000-4000-8000-000000000001" || s.Cwd != "/workspace/example-app" || s.GitBranch != "feature/login" {
		t.Errorf("base fields: %+v", s)
	}
	if !strings.HasPrefix(s.FirstPrompt, "Fix the flaky login test") {
		t.Errorf("first prompt %q", s.FirstPrompt)
	}
	if !strings.HasPrefix(s.LastOutcome, "Fixed: the clock is now reset") {
		t.Errorf("last outcome %q", s.LastOutcome)
	}
	want := []string{"/workspace/example-app/login_test.go", "/workspace/example-app/analysis.ipynb"}
	if strings.Join(s.FilesTouched, ",") != strings.Join(want, ",") {
		t.Errorf("files %v", s.FilesTouched)
	}
	if s.Skipped != 2 { // the non-JSON line and the half-written last line
		t.Errorf("skipped %d lines", s.Skipped)
	}
}

func TestParseTranscriptHugeLineAndMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	huge := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 50<<20) + `"}}` // a 50 MB line
	good := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"after the huge line"}}`
	os.WriteFile(p, []byte(huge+"\n"+good+"\n"), 0o644)
	s, err := ParseTranscript(p)
	if err != nil || s.FirstPrompt != "after the huge line" || s.Skipped != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ParseTranscript(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("missing transcript should be an error")
	}
}

func TestRedact(t *testing.T) {
	secret := []string{
		"AKIAIOSFODNN7EXAMPLE",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
		"glpat-abcdefghijklmnopqrst",
		"xoxb-1234567890-abcdefghij",
		"sk_live_abcdefghijklmnop1234",
		"sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"sk-ant-api03-abcdefghijklmnopqrstuvwxyz-0123456789",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
	}
	for _, s := range secret {
		out := Redact("before " + s + " after")
		if strings.Contains(out, s) || !strings.Contains(out, Redacted) || !strings.HasPrefix(out, "before ") {
			t.Errorf("not redacted: %q -> %q", s, out)
		}
	}
	kv := map[string]string{
		`password=hunter2`:                          `password=[REDACTED]`,
		`DEEPSEEK_API_KEY=abc123`:                   `DEEPSEEK_API_KEY=[REDACTED]`,
		`api_key: "sk-x"`:                           `api_key: "[REDACTED]"`,
		`{"password": "hunter2", "user": "bob"}`:    `{"password": "[REDACTED]", "user": "bob"}`,
		`{"client_secret":"s3cr3t"}`:                `{"client_secret":"[REDACTED]"}`,
		`Authorization: Bearer abcdefghijklmnop123`: `Authorization: [REDACTED]`,
		`https://bob:pa55@example.com/repo.git`:     `https://bob:[REDACTED]@example.com/repo.git`,
		`my_secret: abc`:                            `my_secret: [REDACTED]`,
	}
	for in, want := range kv {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	keep := []string{
		"commit 3f9a2c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
		"note 01M8096W5Y5VJW7T5A4YN4196Z supersedes 01M8096W5WHFTJASA9A73MFZGZ",
		"passwords are good; the tokenizer is porter",
		"sk-short",
		"see https://example.com/path@v2",
		"the secret to good tests is isolation",
	}
	for _, s := range keep {
		if got := Redact(s); got != s {
			t.Errorf("false positive: %q -> %q", s, got)
		}
	}
}

// TestSummary: the Python tool's examples, in CommonMark (WorthKeeping,
// which replaced its trivial-session gate, has its own tests).
func TestSummary(t *testing.T) {
	title, body := Summarize(Session{FirstPrompt: "Add a CLI\nwith subcommands", GitBranch: "main", FilesTouched: []string{"a.py", "b.py"}, LastOutcome: "Done"})
	if title != "Add a CLI" || body != "**Ask:** Add a CLI\nwith subcommands\n\n**Branch:** main\n\n**Files touched (2):**\n\n- a.py\n- b.py\n\n**Outcome:** Done" {
		t.Errorf("summary %q / %q", title, body)
	}
	_, body = Summarize(Session{FirstPrompt: "Fix it", LastOutcome: "ok"})
	if body != "**Ask:** Fix it\n\n**Outcome:** ok" {
		t.Errorf("summary without branch %q", body)
	}
	long := strings.Repeat("é", 700)
	_, body = Summarize(Session{FirstPrompt: long})
	if !strings.Contains(body, strings.Repeat("é", 599)+textfmt.Ellipsis) || strings.Contains(body, strings.Repeat("é", 600)) {
		t.Error("clip is not rune-safe at 600")
	}
}

func TestNormalizeRemote(t *testing.T) {
	cases := map[string]string{
		"git@github.com:oscardvs/anamnesis.git":     "github.com/oscardvs/anamnesis",
		"https://github.com/oscardvs/Anamnesis.git": "github.com/oscardvs/anamnesis",
		"ssh://git@github.com/oscardvs/anamnesis":   "github.com/oscardvs/anamnesis",
		"/home/x/mem.git":                           "/home/x/mem",
		"https://user:pw@gitlab.com/a/b":            "gitlab.com/a/b",
	}
	for in, want := range cases {
		if got := NormalizeRemote(in); got != want {
			t.Errorf("NormalizeRemote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProjectKey(t *testing.T) {
	home := t.TempDir()
	// marker wins, found from a subdirectory
	proj := filepath.Join(home, "work", "app")
	os.MkdirAll(filepath.Join(proj, ".anamnesis"), 0o755)
	os.MkdirAll(filepath.Join(proj, "src", "deep"), 0o755)
	os.WriteFile(filepath.Join(proj, ".anamnesis", "project"), []byte("\n  shared-key \n"), 0o644)
	if got := ProjectKey(filepath.Join(proj, "src", "deep"), home); got != "shared-key" {
		t.Errorf("marker: %q", got)
	}
	// a marker in $HOME itself is not used
	os.MkdirAll(filepath.Join(home, ".anamnesis"), 0o755)
	os.WriteFile(filepath.Join(home, ".anamnesis", "project"), []byte("home-key"), 0o644)
	other := filepath.Join(home, "Other Dir")
	os.MkdirAll(other, 0o755)
	if got := ProjectKey(other, home); got != "other dir" {
		t.Errorf("dir name: %q", got)
	}
	// a git repository: origin URL, else the root's name
	repo := filepath.Join(home, "Repos", "MyTool")
	os.MkdirAll(filepath.Join(repo, "pkg"), 0o755)
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	if got := ProjectKey(filepath.Join(repo, "pkg"), home); got != "mytool" {
		t.Errorf("repo root name: %q", got)
	}
	run("remote", "add", "origin", "git@github.com:Acme/MyTool.git")
	if got := ProjectKey(filepath.Join(repo, "pkg"), home); got != "github.com/acme/mytool" {
		t.Errorf("origin: %q", got)
	}
}

// Imported Claude Code memories from other machines come under a heading
// of their own, each marked with its machine.
func TestRenderNativeMemories(t *testing.T) {
	own := index.Hit{Note: note.Note{ID: "01AAAAAAAAAAAAAAAAAAAAAAAA", Type: "procedural", Title: "Release", Project: "app", MachineID: "laptop", ProvSource: note.DefaultProvSource, Confidence: 1}}
	nat := index.Hit{Note: note.Note{ID: "01BBBBBBBBBBBBBBBBBBBBBBBB", Type: "semantic", Title: "Build", Project: "app", MachineID: "desk", ProvSource: note.ProvClaudeMemory, Confidence: 1}}
	nat2 := nat
	nat2.ID, nat2.Title = "01CCCCCCCCCCCCCCCCCCCCCCCC", "Deploy"
	text, ids := renderNotes([]index.Hit{own, nat, nat2}, 4000)
	if len(ids) != 3 || strings.Count(text, nativeHeading) != 1 || strings.Index(text, nativeHeading) < strings.Index(text, "Release") ||
		strings.Index(text, nativeHeading) > strings.Index(text, "Build") || strings.Count(text, "Claude Code memory from desk") != 2 {
		t.Errorf("rendered:\n%s", text)
	}
}
