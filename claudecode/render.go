package claudecode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// Output renders the hook JSON Claude Code expects for context injection.
func Output(event, context string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep <anamnesis-memory> readable in logs and transcripts
	enc.Encode(map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": event, "additionalContext": context}})
	return strings.TrimSuffix(b.String(), "\n")
}

// renderNotes writes whole notes in order while they fit in budget
// characters, skipping any that would not fit.
//
// Claude Code's own memories from other machines (imported auto memory)
// get a heading of their own the first time one is written: they are
// what Claude learned elsewhere, not notes the user wrote.
func renderNotes(notes []index.Hit, budget int) (string, []string) {
	var b strings.Builder
	var ids []string
	headed := false
	for _, h := range notes {
		part := renderNote(h)
		if h.ProvSource == note.ProvClaudeMemory && !headed {
			part = nativeHeading + part
		}
		if b.Len()+len(part) > budget {
			continue
		}
		if h.ProvSource == note.ProvClaudeMemory {
			headed = true
		}
		b.WriteString(part)
		ids = append(ids, h.ID)
	}
	return b.String(), ids
}

// nativeHeading opens the block of imported Claude Code memories.
const nativeHeading = "\n### Claude Code's own memories of this work, recorded on the user's other machines\n"

// renderNote shows control characters escaped (note.Escape): notes come
// from machines that may not refuse them, and Claude Code can print what
// a hook injects.
func renderNote(h index.Hit) string {
	meta := fmt.Sprintf("_project: %s | origin: %s | updated: %s | id: %s", note.Escape(h.Project), note.Escape(h.MachineID), dateOf(h.UpdatedAt), h.ID)
	if (h.ProvSource != note.DefaultProvSource && h.ProvSource != note.ProvClaudeMemory) || h.Confidence < 1.0 {
		meta += fmt.Sprintf(" | source: %s (confidence %s)", h.ProvSource, strconv.FormatFloat(h.Confidence, 'g', -1, 64))
	}
	if h.ProvSource == note.ProvClaudeMemory {
		meta += " | Claude Code memory from " + note.Escape(h.MachineID)
	}
	if v, ok := conflictOf(h); ok {
		// Both versions are shown, the copy right after its note: the
		// model must not take either for the settled truth.
		meta += " | CONFLICT COPY of " + v + ": another machine's version of that note, kept when a sync met overlapping edits; until one is kept (memory_resolve) neither is settled"
	}
	out := fmt.Sprintf("\n## [%s] %s\n%s_\n", h.Type, note.Escape(h.Title), meta)
	if body := strings.TrimSpace(h.Body); body != "" {
		out += "\n" + note.EscapeText(body) + "\n"
	}
	return out
}

func conflictOf(h index.Hit) (string, bool) {
	if h.ConflictOf != "" {
		return h.ConflictOf, true
	}
	return h.ExtraValue(index.ConflictKey)
}

func dateOf(ts string) string {
	if len(ts) >= 10 {
		return ts[:10]
	}
	return ts
}
