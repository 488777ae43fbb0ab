package claudecode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// MaxTranscriptLine bounds one transcript line; longer lines (a pasted
// image, a huge tool result) are skipped without being held in memory.
const MaxTranscriptLine = 16 << 20

// Session is what capture needs from a Claude Code transcript.
type Session struct {
	SessionID    string
	Cwd          string
	GitBranch    string
	FirstPrompt  string
	LastOutcome  string
	FilesTouched []string
	// Prompts are the human prompts and Replies the assistant's texts, in
	// order; WorthKeeping looks in them for decisions.
	Prompts, Replies []string
	// Commands are the Bash tool's commands, in order.
	Commands []string
	// MemoryWrites counts anamnesis memory_write tool uses: durable notes
	// the session wrote itself.
	MemoryWrites int
	Lines        int // lines read
	Skipped      int // lines that were not usable JSON (or too long)
}

// Tools whose use WorthKeeping weighs besides editTools.
const (
	bashTool        = "Bash"
	memoryWriteTool = "mcp__anamnesis__memory_write"
)

// editTools name the tools whose input names a file they changed.
var editTools = map[string]string{"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// noise marks user-role text that is not something the person typed.
var noise = []string{"<command-name>", "<command-message>", "<local-command-stdout>", "<bash-input>",
	"<bash-stdout>", "<system-reminder>", "<task-notification>", "Caveat:", "[Request interrupted by user",
	"<anamnesis-memory"}

type record struct {
	Type             string          `json:"type"`
	SessionID        string          `json:"sessionId"`
	Cwd              string          `json:"cwd"`
	GitBranch        string          `json:"gitBranch"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	IsSidechain      bool            `json:"isSidechain"`
	UUID             string          `json:"uuid"`
	Message          json.RawMessage `json:"message"`
}

type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ParseTranscript reads a transcript JSONL file. It never fails on
// content: broken lines, unknown record types, meta lines, tool-result-only
// lines, sidechains and anamnesis's own injected context are skipped. Only
// an unreadable file is an error.
func ParseTranscript(path string) (Session, error) {
	var s Session
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<20)
	seen := map[string]bool{}
	for {
		line, tooLong, err := readLine(rd)
		if len(line) > 0 || tooLong {
			s.Lines++
			if tooLong {
				s.Skipped++
			} else if !s.take(line, seen) {
				s.Skipped++
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, fmt.Errorf("read transcript: %w", err)
		}
	}
	return s, nil
}

// readLine returns the next line, or tooLong (and no data) for a line
// past MaxTranscriptLine, which is consumed in chunks and dropped.
func readLine(rd *bufio.Reader) ([]byte, bool, error) {
	var buf []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxTranscriptLine {
			buf = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = rd.ReadSlice('\n')
			}
			return nil, true, err
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytesTrim(buf), false, err
	}
}

func bytesTrim(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }

// take folds one line into the session; false means it was not usable.
func (s *Session) take(line []byte, seen map[string]bool) bool {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return false
	}
	if r.UUID != "" {
		if seen[r.UUID] {
			return true // resumed sessions copy earlier entries
		}
		seen[r.UUID] = true
	}
	if s.SessionID == "" {
		s.SessionID = r.SessionID
	}
	if s.Cwd == "" {
		s.Cwd = r.Cwd
	}
	if s.GitBranch == "" {
		s.GitBranch = r.GitBranch
	}
	if r.IsSidechain || len(r.Message) == 0 {
		return true
	}
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(r.Message, &msg); err != nil {
		return false
	}
	text, blocks := contentOf(msg.Content)
	switch r.Type {
	case "user":
		if r.IsMeta || r.IsCompactSummary {
			return true
		}
		t := strings.TrimSpace(text)
		if t == "" || isNoise(t) {
			return true
		}
		if s.FirstPrompt == "" {
			s.FirstPrompt = t
		}
		s.Prompts = append(s.Prompts, t)
	case "assistant":
		if t := strings.TrimSpace(text); t != "" {
			s.LastOutcome = t
			s.Replies = append(s.Replies, t)
		}
		for _, b := range blocks {
			if b.Type != "tool_use" {
				continue
			}
			if b.Name == memoryWriteTool {
				s.MemoryWrites++
				continue
			}
			key, ok := editTools[b.Name]
			if b.Name == bashTool {
				key, ok = "command", true
			}
			if !ok {
				continue
			}
			var in map[string]any
			if json.Unmarshal(b.Input, &in) != nil {
				continue
			}
			p, ok := in[key].(string)
			switch {
			case !ok || strings.TrimSpace(p) == "":
			case b.Name == bashTool:
				s.Commands = append(s.Commands, p)
			case !slices.Contains(s.FilesTouched, p):
				s.FilesTouched = append(s.FilesTouched, p)
			}
		}
	}
	return true
}

// contentOf returns the text blocks of a message content (a string or a
// list of blocks) and the blocks themselves.
func contentOf(raw json.RawMessage) (string, []block) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return "", nil
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), blocks
}

func isNoise(t string) bool {
	for _, p := range noise {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
