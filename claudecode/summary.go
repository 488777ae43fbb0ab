package claudecode

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// titleLimit bounds a session note's title in runes, ellipsis included
// (the Python tool's 80).
const titleLimit = 80

// Ellipsis ends a clipped text: one character, so a clipped title still
// fits its limit.
const Ellipsis = "…"

// clip shortens t (trimmed) to at most n runes, the ellipsis included. It
// cuts at the last word boundary (white space) that leaves room for the
// ellipsis, so no word or number is cut ("canary 3" of "canary 30 min"),
// and drops the spaces and a trailing ",", ";" or ":" before the
// ellipsis. Only a first word longer than the limit is cut inside.
func clip(t string, n int) string {
	t = strings.TrimSpace(t)
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	r := []rune(t)
	room := max(n-1, 0) // runes before the ellipsis
	cut := room
	for cut > 0 && !unicode.IsSpace(r[cut]) {
		cut--
	}
	kept := strings.TrimRightFunc(string(r[:cut]), func(c rune) bool { return unicode.IsSpace(c) || strings.ContainsRune(",;:", c) })
	if kept == "" {
		kept = string(r[:room]) // one word longer than the limit
	}
	return kept + Ellipsis
}

// How much of a session's commands its note names: the first
// maxCommands, the first line of each, clipped to commandLimit.
const (
	maxCommands  = 10
	commandLimit = 160
)

// Summarize builds the deterministic note of the Python tool's heuristic
// summarizer: the ask, the branch, files touched, the commands run, the
// outcome, as CommonMark blocks separated by blank lines (the Python
// tool ran some together).
func Summarize(s Session) (title, body string) {
	title = "Session summary"
	if p := strings.TrimSpace(s.FirstPrompt); p != "" {
		first := clip(strings.SplitN(p, "\n", 2)[0], titleLimit)
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
	// One blank line between blocks, so the body is CommonMark that
	// renders as meant: without it the file list was read as the tail of
	// the "Files touched" paragraph, and the branch joined that paragraph.
	blocks := []string{"**Ask:** " + ask}
	if s.GitBranch != "" {
		blocks = append(blocks, "**Branch:** "+s.GitBranch)
	}
	if len(s.FilesTouched) > 0 {
		blocks = append(blocks, fmt.Sprintf("**Files touched (%d):**", len(s.FilesTouched)))
		items := make([]string, len(s.FilesTouched))
		for i, f := range s.FilesTouched {
			items[i] = "- " + f
		}
		blocks = append(blocks, strings.Join(items, "\n"))
	}
	if len(s.Commands) > 0 {
		// A session that only ran commands (a deploy, a migration) is
		// otherwise a note that says nothing of what it did.
		cmds := s.Commands
		more := ""
		if len(cmds) > maxCommands {
			cmds, more = cmds[:maxCommands], fmt.Sprintf("\n- … and %d more", len(s.Commands)-maxCommands)
		}
		items := make([]string, len(cmds))
		for i, c := range cmds {
			items[i] = "- " + clip(strings.TrimSpace(strings.SplitN(c, "\n", 2)[0]), commandLimit)
		}
		blocks = append(blocks, fmt.Sprintf("**Commands run (%d):**", len(s.Commands)), strings.Join(items, "\n")+more)
	}
	blocks = append(blocks, "**Outcome:** "+out)
	return title, strings.Join(blocks, "\n\n")
}
