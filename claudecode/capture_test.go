package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/note"
)

// savedMemory is a Memory that keeps the notes SaveSession was given.
type savedMemory struct{ notes []*note.Note }

func (m *savedMemory) Inject(context.Context, string, int) ([]index.Hit, int, int, error) {
	return nil, 0, 0, nil
}
func (m *savedMemory) Arrived(context.Context, string, time.Time) ([]index.Hit, error) {
	return nil, nil
}
func (m *savedMemory) Recall(context.Context, string, int) ([]index.Hit, error) { return nil, nil }
func (m *savedMemory) SaveSession(_ context.Context, n *note.Note) (string, string, bool, error) {
	m.notes = append(m.notes, n)
	return "01CAPTURED0000000000000000", "episodic/01CAPTURED0000000000000000.md", false, nil
}

// writeTranscript writes records as a JSONL transcript and returns its path.
func writeTranscript(t *testing.T, records ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func userLine(cwd, text string) map[string]any {
	return map[string]any{"type": "user", "cwd": cwd, "sessionId": "s1", "message": map[string]any{"role": "user", "content": text}}
}

func toolLine(cwd, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "assistant", "cwd": cwd, "sessionId": "s1", "message": map[string]any{"role": "assistant",
		"content": []map[string]any{{"type": "tool_use", "id": "toolu_1", "name": name, "input": input}}}}
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFilesTouchedRelativeToProjectRoot: files are listed relative to the
// git top-level of the session's cwd (a .git directory or file), else to
// the cwd; a file outside it keeps its path with the home as "~".
func TestFilesTouchedRelativeToProjectRoot(t *testing.T) {
	home := t.TempDir()
	app := mkdir(t, home, "src", "app")
	mkdir(t, app, ".git")
	cwd := mkdir(t, app, "internal")
	wt := mkdir(t, home, "src", "app-wt")
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: ../app/.git/worktrees/app-wt\n"), 0o644)
	plain := mkdir(t, home, "notes", "draft")

	cases := []struct {
		cwd   string
		files []string
		want  []string
	}{
		{cwd, []string{filepath.Join(app, "internal", "x.go"), filepath.Join(app, "README.md"), filepath.Join(home, "other", "y.go"), "/etc/hosts", "rel/z.go"},
			[]string{"internal/x.go", "README.md", "~/other/y.go", "/etc/hosts", "rel/z.go"}},
		{filepath.Join(wt, "cmd"), []string{filepath.Join(wt, "cmd", "main.go"), filepath.Join(app, "go.mod")},
			[]string{"cmd/main.go", "~/src/app/go.mod"}},
		{plain, []string{filepath.Join(plain, "a.md"), filepath.Join(home, "notes", "b.md")},
			[]string{"a.md", "~/notes/b.md"}},
	}
	for _, c := range cases {
		lines := []map[string]any{userLine(c.cwd, "tidy these files")}
		for _, f := range c.files {
			lines = append(lines, toolLine(c.cwd, "Write", map[string]any{"file_path": f, "content": "x"}))
		}
		mem := &savedMemory{}
		r, err := Capture(context.Background(), Env{Memory: mem, UserHome: home}, Input{SessionID: "s1", TranscriptPath: writeTranscript(t, lines...)}, "session-end")
		if err != nil || r.Skipped != "" || len(mem.notes) != 1 {
			t.Fatalf("capture: %+v %v", r, err)
		}
		want := "\n\n- " + strings.Join(c.want, "\n- ") + "\n\n"
		if !strings.Contains(mem.notes[0].Body, want) || strings.Contains(mem.notes[0].Body, home) {
			t.Errorf("cwd %s: body\n%s\nwant the list\n%s", c.cwd, mem.notes[0].Body, want)
		}
	}
}
