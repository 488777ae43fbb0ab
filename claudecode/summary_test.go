package claudecode

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTitleCutsAtAWord: a long first line becomes a title cut at a word,
// with an ellipsis; a short one is kept whole, without one.
func TestTitleCutsAtAWord(t *testing.T) {
	prompt := "Deploy the new billing service to staging and keep the canary at 5% for canary 30 min before going on\nsecond line"
	title, _ := Summarize(Session{FirstPrompt: prompt})
	if title != "Deploy the new billing service to staging and keep the canary at 5% for canary…" {
		t.Errorf("title %q", title)
	}
	if n := utf8.RuneCountInString(title); n > 80 {
		t.Errorf("title has %d runes", n)
	}
	if title, _ := Summarize(Session{FirstPrompt: "Fix the login test\nthen push"}); title != "Fix the login test" {
		t.Errorf("short title %q", title)
	}
	_, body := Summarize(Session{FirstPrompt: "ask", LastOutcome: strings.Repeat("word ", 200)})
	if !strings.Contains(body, "**Outcome:** "+strings.TrimSpace(strings.Repeat("word ", 120))+"…") {
		t.Errorf("outcome not cut at a word: %q", body)
	}
}

// TestSummaryIsCommonMark: the body's blocks are separated by one blank
// line, and the file list has a blank line before it, so it renders as a
// list and not as the tail of the "Files touched" paragraph.
func TestSummaryIsCommonMark(t *testing.T) {
	title, body := Summarize(Session{
		FirstPrompt:  "Fix the flaky login test\nthe mock clock is never reset",
		GitBranch:    "feature/login",
		FilesTouched: []string{"internal/auth/login_test.go", "internal/auth/clock.go"},
		LastOutcome:  "Fixed: the clock is now reset in TestMain.",
	})
	want := "**Ask:** Fix the flaky login test\nthe mock clock is never reset\n" +
		"\n" +
		"**Branch:** feature/login\n" +
		"\n" +
		"**Files touched (2):**\n" +
		"\n" +
		"- internal/auth/login_test.go\n" +
		"- internal/auth/clock.go\n" +
		"\n" +
		"**Outcome:** Fixed: the clock is now reset in TestMain."
	if title != "Fix the flaky login test" || body != want {
		t.Errorf("summary %q\n%s\nwant\n%s", title, body, want)
	}
	_, body = Summarize(Session{FirstPrompt: "Fix it", LastOutcome: "ok"})
	if body != "**Ask:** Fix it\n\n**Outcome:** ok" {
		t.Errorf("summary without branch or files %q", body)
	}
	_, body = Summarize(Session{})
	if body != "**Ask:** (no user prompt captured)\n\n**Outcome:** (no assistant output captured)" {
		t.Errorf("empty summary %q", body)
	}
}

// A session that only ran commands names them in its note (issue 25).
func TestBashOnlySessionNamesItsCommands(t *testing.T) {
	s, err := ParseTranscript(filepath.Join("testdata", "sessions", "commit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.FilesTouched) != 0 || len(s.Commands) == 0 {
		t.Fatalf("not a Bash-only session: %d files, %d commands", len(s.FilesTouched), len(s.Commands))
	}
	_, body := Summarize(s)
	if !strings.Contains(body, "**Commands run (") || !strings.Contains(body, "- git status --short && git diff --cached --stat") {
		t.Errorf("the note does not name the commands:\n%s", body)
	}
}
