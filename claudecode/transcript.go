package claudecode

import (
	"bufio"
	"bytes"
	"context"
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

// MaxTranscriptBytes bounds what one capture reads of a transcript: a
// transcript is the hook's input, and a session with huge tool results
// (or a file that is not a transcript at all) must not make SessionEnd
// outlast its budget (1.5 s unless the hook's timeout raises it). Parsing
// ran at 77 MB/s on the 2-core development VM (BenchmarkReadTranscript),
// so 16 MiB is about 0.2 s. A longer transcript is read as its first
// transcriptHead bytes (the first prompt: what the session set out to do)
// and its last bytes (what it did last); the middle is left out.
const MaxTranscriptBytes = 16 << 20

// transcriptHead is the part of MaxTranscriptBytes read from the start
// of a longer transcript.
const transcriptHead = 2 << 20

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
	// OmittedBytes counts the bytes of a transcript past
	// MaxTranscriptBytes that were not read (its middle).
	OmittedBytes int64
}

// Tools whose use WorthKeeping weighs besides editTools.
const (
	bashTool        = "Bash"
	memoryWriteTool = "memory_write" // by either route (OurTool)
)

// editTools name the tools whose input names a file they changed.
var editTools = map[string]string{"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// noise marks user-role text that is not something the person typed.
var noise = []string{"<command-name>", "<command-message>", "<local-command-stdout>", "<bash-input>",
	"<bash-stdout>", "<system-reminder>", "<task-notification>", "Caveat:", "[Request interrupted by user",
	"<anamnesis-memory"}

type record struct {
	Type             string `json:"type"`
	SessionID        string `json:"sessionId"`
	Cwd              string `json:"cwd"`
	GitBranch        string `json:"gitBranch"`
	IsMeta           bool   `json:"isMeta"`
	IsCompactSummary bool   `json:"isCompactSummary"`
	IsSidechain      bool   `json:"isSidechain"`
	UUID             string `json:"uuid"`
	// Message is decoded with the record: one pass over the line
	// instead of two, since parsing is what bounds a capture's time.
	Message *message `json:"message"`
}

type message struct {
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ReadTranscript reads a transcript JSONL file, at most
// MaxTranscriptBytes of it (the start and the end of a longer one). It
// never fails on content: broken lines, unknown record types, meta lines,
// tool-result-only lines, sidechains and anamnesis's own injected context
// are skipped. An unreadable file, or one that is not a regular file (a
// FIFO would block the hook), is an error; so is ctx ending, which stops
// the read between lines and returns what was read so far beside
// ctx.Err().
func ReadTranscript(ctx context.Context, path string) (Session, error) {
	var s Session
	// Asked before the open too: opening a FIFO blocks until a writer
	// comes.
	if fi, err := os.Stat(path); err != nil {
		return s, fmt.Errorf("open transcript: %w", err)
	} else if !fi.Mode().IsRegular() {
		return s, fmt.Errorf("open transcript %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return s, fmt.Errorf("read transcript: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return s, fmt.Errorf("read transcript %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	seen := map[string]bool{}
	size := fi.Size()
	if size <= MaxTranscriptBytes {
		err = s.readSpan(ctx, io.NewSectionReader(f, 0, size), false, seen)
		return s, err
	}
	// The head's last line is usually cut; it fails to parse and counts
	// as skipped. The tail starts one byte early so that a line starting
	// right at its start is whole: everything up to the first newline is
	// dropped.
	tail := int64(MaxTranscriptBytes - transcriptHead)
	s.OmittedBytes = size - transcriptHead - tail
	if err := s.readSpan(ctx, io.NewSectionReader(f, 0, transcriptHead), false, seen); err != nil {
		return s, err
	}
	return s, s.readSpan(ctx, io.NewSectionReader(f, size-tail-1, tail+1), true, seen)
}

// readSpan folds the lines of r into s; cut drops r's first line, the
// end of a line that started before r.
func (s *Session) readSpan(ctx context.Context, r io.Reader, cut bool, seen map[string]bool) error {
	rd := bufio.NewReaderSize(r, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read transcript: %w", err)
		}
		line, tooLong, err := readLine(rd)
		switch {
		case cut:
			cut = false
		case len(line) > 0 || tooLong:
			s.Lines++
			if tooLong || !s.take(line, seen) {
				s.Skipped++
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read transcript: %w", err)
		}
	}
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
		return bytes.TrimSpace(buf), false, err
	}
}

// take folds one line into the session; false means it was not usable.
func (s *Session) take(line []byte, seen map[string]bool) bool {
	var r record
	// A message of the wrong type is an UnmarshalTypeError with the
	// other fields decoded: the line still names the session, but is not
	// usable.
	err := json.Unmarshal(line, &r)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return false
	}
	if r.UUID != "" {
		if seen[r.UUID] {
			return true // resumed sessions copy earlier entries
		}
		seen[r.UUID] = true
	}
	s.identify(&r)
	if err != nil {
		return false
	}
	if r.IsSidechain || r.Message == nil {
		return true
	}
	text, blocks := contentOf(r.Message.Content)
	switch r.Type {
	case "user":
		if !r.IsMeta && !r.IsCompactSummary {
			s.takePrompt(text)
		}
	case "assistant":
		s.takeReply(text, blocks)
	}
	return true
}

// identify takes the session's id, directory and branch from the first
// line that names each.
func (s *Session) identify(r *record) {
	if s.SessionID == "" {
		s.SessionID = r.SessionID
	}
	if s.Cwd == "" {
		s.Cwd = r.Cwd
	}
	if s.GitBranch == "" {
		s.GitBranch = r.GitBranch
	}
}

// takePrompt keeps a user's prompt, unless it is empty or Claude Code's
// own noise (isNoise).
func (s *Session) takePrompt(text string) {
	t := strings.TrimSpace(text)
	if t == "" || isNoise(t) {
		return
	}
	if s.FirstPrompt == "" {
		s.FirstPrompt = t
	}
	s.Prompts = append(s.Prompts, t)
}

// takeReply keeps the assistant's text and what its tool uses did.
func (s *Session) takeReply(text string, blocks []block) {
	if t := strings.TrimSpace(text); t != "" {
		s.LastOutcome = t
		s.Replies = append(s.Replies, t)
	}
	for _, b := range blocks {
		if b.Type == "tool_use" {
			s.takeToolUse(b)
		}
	}
}

// takeToolUse counts a memory_write, and keeps the command a Bash use
// ran or the file an edit tool changed.
func (s *Session) takeToolUse(b block) {
	if t, ok := OurTool(b.Name); ok && t == memoryWriteTool {
		s.MemoryWrites++
		return
	}
	key, ok := editTools[b.Name]
	if b.Name == bashTool {
		key, ok = "command", true
	}
	if !ok {
		return
	}
	var in map[string]any
	if json.Unmarshal(b.Input, &in) != nil {
		return
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

// contentOf returns the text blocks of a message content (a string or a
// list of blocks) and the blocks themselves.
func contentOf(raw json.RawMessage) (string, []block) {
	// Only the shape the first byte names is tried: a failed Unmarshal
	// has already scanned the whole value.
	if len(raw) == 0 || raw[0] != '[' {
		var str string
		json.Unmarshal(raw, &str)
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
