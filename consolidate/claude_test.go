package consolidate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeClaude puts an executable named claude on PATH that records its
// arguments (NUL-terminated), ANAMNESIS_HOOKS_OFF and its stdin under dir, and
// prints the reply file's content.
func fakeClaude(t *testing.T, reply string, exit int) (dir string) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake CLI is a shell script")
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "reply.json"), []byte(reply), 0o644)
	script := `#!/bin/sh
d="$(dirname "$0")"
: > "$d/argv"
for a in "$@"; do printf '%s\0' "$a" >> "$d/argv"; done
printf '%s' "$ANAMNESIS_HOOKS_OFF" > "$d/hooksoff"
printf '%s' "$FAKE_CLAUDE_LOGIN" > "$d/login"
cat > "$d/stdin"
cat "$d/reply.json"
exit ` + strconv.Itoa(exit) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func TestClaudeBackendRunsWithoutToolsOrHooks(t *testing.T) {
	dir := fakeClaude(t, `{"type":"result","subtype":"success","is_error":false,"result":"","total_cost_usd":0.0123,
		"structured_output":{"notes":[{"type":"semantic","title":"Uses make -j2","body":"The machine has two cores."}]}}`, 0)
	t.Setenv("FAKE_CLAUDE_LOGIN", "user's login")
	p := newPlanner(t, Claude{MaxBudgetUSD: 0.25}, DefaultLimits())
	var plan Plan
	if err := p.Project(context.Background(), "proj", episodics(5), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Proposals) != 1 || plan.Proposals[0].Title != "Uses make -j2" || plan.USD != 0.0123 {
		t.Fatalf("plan %+v", plan)
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv"))
	args := strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00")
	for _, want := range [][]string{{"-p"}, {"--safe-mode"}, {"--tools", ""}, {"--strict-mcp-config"},
		{"--no-session-persistence"}, {"--output-format", "json"}, {"--max-budget-usd", "0.25"}} {
		i := slices.Index(args, want[0])
		if i < 0 || (len(want) == 2 && (i+1 >= len(args) || args[i+1] != want[1])) {
			t.Errorf("argv lacks %q: %q", want, args)
		}
	}
	if i := slices.Index(args, "--json-schema"); i < 0 || !strings.Contains(args[i+1], `"notes"`) {
		t.Errorf("no schema: %q", args)
	}
	if i := slices.Index(args, "--system-prompt"); i < 0 || args[i+1] != ReflectSystemPrompt {
		t.Errorf("no system prompt: %q", args)
	}
	if off, _ := os.ReadFile(filepath.Join(dir, "hooksoff")); string(off) != "1" {
		t.Errorf("%s=%q in the CLI's environment", HooksOffEnv, off)
	}
	if login, _ := os.ReadFile(filepath.Join(dir, "login")); string(login) != "user's login" {
		t.Errorf("the CLI did not get this process's environment: %q", login)
	}
	stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if !strings.Contains(string(stdin), "## session 4") || strings.Contains(string(stdin), "hunter2secret") {
		t.Errorf("stdin %q", stdin)
	}
}

func TestClaudeBackendFailures(t *testing.T) {
	for name, c := range map[string]struct {
		reply string
		exit  int
	}{
		"over budget": {`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.3}`, 1},
		"refusal":     {`{"type":"result","subtype":"success","is_error":false,"result":"","stop_reason":"refusal"}`, 0},
		"malformed":   {`{"type":"result","subtype":"success","is_error":false,"result":"[{\"type\":"}`, 0},
		"not json":    {`Error: not logged in`, 1},
	} {
		t.Run(name, func(t *testing.T) {
			fakeClaude(t, c.reply, c.exit)
			p := newPlanner(t, Claude{}, DefaultLimits())
			var plan Plan
			if err := p.Project(context.Background(), "proj", episodics(5), &plan); err != nil {
				t.Fatal(err)
			}
			if len(plan.Proposals) != 0 || len(plan.Failed) != 1 {
				t.Fatalf("plan %+v", plan)
			}
			if name == "over budget" && plan.USD != 0.3 {
				t.Errorf("cost of a failed call not counted: %+v", plan)
			}
		})
	}
	fakeClaude(t, `{"type":"result","subtype":"success","result":""}`, 0)
	if _, err := (Claude{}).Complete(context.Background(), Request{User: "x"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("empty reply: %v", err)
	}
}
