package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxInput bounds what a Claude Code hook reads from stdin. Real payloads
// are a few KB (a prompt can be long, not megabytes); a larger stream is
// refused rather than buffered.
const MaxInput = 8 << 20

// Input is the union of the stdin fields anamnesis uses from Claude Code
// hook events. Every field is optional; unknown fields are ignored.
type Input struct {
	SessionID          string `json:"session_id"`
	TranscriptPath     string `json:"transcript_path"`
	Cwd                string `json:"cwd"`
	HookEventName      string `json:"hook_event_name"`
	Source             string `json:"source"`  // SessionStart
	Prompt             string `json:"prompt"`  // UserPromptSubmit
	Trigger            string `json:"trigger"` // PreCompact
	CustomInstructions string `json:"custom_instructions"`
	Reason             string `json:"reason"`    // SessionEnd
	ToolName           string `json:"tool_name"` // PreToolUse
}

// ErrNoInput means stdin was empty: a hook run by hand, not by Claude Code.
var ErrNoInput = errors.New("no hook input on stdin")

// ReadInput decodes one hook payload. Oversized, binary or non-object
// input is an error (the caller fails open).
func ReadInput(r io.Reader) (Input, error) {
	var in Input
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return in, fmt.Errorf("read hook input: %w", err)
	}
	if len(data) > MaxInput {
		return in, fmt.Errorf("hook input over %d bytes; ignored", MaxInput)
	}
	if strings.TrimSpace(string(data)) == "" {
		return in, ErrNoInput
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, fmt.Errorf("hook input is not a JSON object: %w", err)
	}
	return in, nil
}
