package claudecode

import (
	"fmt"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
)

// titleLimit bounds a session note's title in runes, ellipsis included
// (the Python tool's 80).
const titleLimit = 80

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
		first := textfmt.Clip(strings.SplitN(p, "\n", 2)[0], titleLimit)
		if strings.TrimSpace(first) != "" {
			title = first
		}
	}
	ask := textfmt.Clip(s.FirstPrompt, 600)
	if ask == "" {
		ask = "(no user prompt captured)"
	}
	out := textfmt.Clip(s.LastOutcome, 600)
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
			items[i] = "- " + textfmt.Clip(strings.TrimSpace(strings.SplitN(c, "\n", 2)[0]), commandLimit)
		}
		blocks = append(blocks, fmt.Sprintf("**Commands run (%d):**", len(s.Commands)), strings.Join(items, "\n")+more)
	}
	blocks = append(blocks, "**Outcome:** "+out)
	return title, strings.Join(blocks, "\n\n")
}
