package claudecode

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// trivialOutcomeFloor: a session without a real prompt whose last answer
// is shorter than this is not worth a note (the Python tool's gate).
const trivialOutcomeFloor = 40

var loneSlashCommand = regexp.MustCompile(`^/\S+$`)

// IsTrivial is the Python tool's gate: a session that touched files or had
// a real prompt is kept; one with nothing, or only a lone slash command
// and a short answer, is not.
func IsTrivial(s Session) bool {
	if len(s.FilesTouched) > 0 {
		return false
	}
	prompt, outcome := strings.TrimSpace(s.FirstPrompt), strings.TrimSpace(s.LastOutcome)
	switch {
	case prompt == "" && outcome == "":
		return true
	case prompt == "":
		return utf8.RuneCountInString(outcome) < trivialOutcomeFloor
	case loneSlashCommand.MatchString(prompt):
		return utf8.RuneCountInString(outcome) < trivialOutcomeFloor
	}
	return false
}

// clip shortens to n runes, never inside a multi-byte character.
func clip(t string, n int) string {
	t = strings.TrimSpace(t)
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	r := []rune(t)
	return strings.TrimRight(string(r[:n]), " \t\n") + " ..."
}

// Summarize builds the deterministic note of the Python tool's heuristic
// summarizer: the ask, the branch, files touched, the outcome.
func Summarize(s Session) (title, body string) {
	title = "Session summary"
	if p := strings.TrimSpace(s.FirstPrompt); p != "" {
		first := strings.SplitN(p, "\n", 2)[0]
		if r := []rune(first); len(r) > 80 {
			first = string(r[:80])
		}
		if strings.TrimSpace(first) != "" {
			title = first
		}
	}
	ask := clip(s.FirstPrompt, 600)
	if ask == "" {
		ask = "(no user prompt captured)"
	}
	out := clip(s.LastOutcome, 600)
	if out == "" {
		out = "(no assistant output captured)"
	}
	parts := []string{"**Ask:** " + ask, ""}
	if s.GitBranch != "" {
		parts = append(parts, "**Branch:** "+s.GitBranch)
	}
	if len(s.FilesTouched) > 0 {
		parts = append(parts, fmt.Sprintf("**Files touched (%d):**", len(s.FilesTouched)))
		for _, f := range s.FilesTouched {
			parts = append(parts, "- "+f)
		}
	}
	parts = append(parts, "", "**Outcome:** "+out)
	return title, strings.Join(parts, "\n")
}
