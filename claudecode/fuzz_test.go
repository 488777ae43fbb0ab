package claudecode

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseTranscript: arbitrary transcript bytes never panic (nor do
// the rule and the shell splitter that read them).
func FuzzParseTranscript(f *testing.F) {
	seed, _ := os.ReadFile("testdata/transcript.jsonl")
	f.Add(seed)
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":7}}]}}`))
	f.Add([]byte("{\n}\n\x00\xff"))
	commit, _ := os.ReadFile("testdata/sessions/commit.jsonl")
	f.Add(commit)
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"a <<\"\\"}}]}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "t.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Skip()
		}
		s, err := ParseTranscript(p)
		if err != nil {
			t.Fatalf("a readable file must not be an error: %v", err)
		}
		Summarize(s)
		WorthKeeping(s)
		StateChanging(string(data))
		Redact(s.FirstPrompt + s.LastOutcome)
	})
}
