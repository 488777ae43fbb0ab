package nativemem

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var ctx = context.Background()

func TestFindFixtures(t *testing.T) {
	dirs, err := Find(ctx, "testdata/claude", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 {
		t.Fatalf("want 2 memory directories, got %+v", dirs)
	}
	app, broken := dirs[0], dirs[1]
	if app.Key != "-home-ann-src-app" || app.Cwd != "/home/ann/src/app" {
		t.Errorf("app: key %q cwd %q; want the transcript's cwd", app.Key, app.Cwd)
	}
	if got := strings.Join(app.Files, ","); got != "feedback_testing.md,project_deploy.md,user_role.md" {
		t.Errorf("app files (MEMORY.md left out): %s", got)
	}
	if broken.Cwd != "" {
		t.Errorf("broken has no transcript, got cwd %q", broken.Cwd)
	}
	if got := strings.Join(broken.Files, ","); got != "bad.md,reference_docs.md" {
		t.Errorf("broken files (notes.txt left out): %s", got)
	}
}

// Both front-matter shapes, and the newer keys.
func TestParseShapes(t *testing.T) {
	dir := "testdata/claude/projects/-home-ann-src-app/memory/"
	for file, want := range map[string]Memory{
		"user_role.md":        {Name: "User role", Description: "Ann is a backend engineer who prefers Go", Type: TypeUser},
		"feedback_testing.md": {Name: "Testing feedback", Description: "run the integration tests against a real database", Type: TypeFeedback},
		"project_deploy.md": {Name: "Deploy", Description: "deploys go through the canary first", Type: TypeProject,
			Modified: "2026-08-01T12:00:00Z", OriginSessionID: "6b1f6c1e-1f0a-4a44-9d0e-2f7f1c3d9a11"},
	} {
		m, err := ParseFile(dir + file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m.Name != want.Name || m.Description != want.Description || m.Type != want.Type || m.Modified != want.Modified || m.OriginSessionID != want.OriginSessionID {
			t.Errorf("%s: got %+v, want %+v", file, m, want)
		}
		if m.Body == "" || strings.HasPrefix(m.Body, "---") || m.Size == 0 || m.ModTime.IsZero() {
			t.Errorf("%s: body %q size %d mtime %v", file, m.Body, m.Size, m.ModTime)
		}
	}
}

// Invalid YAML is the file's error, never a panic; other odd shapes parse.
func TestParseTolerant(t *testing.T) {
	if _, err := ParseFile("testdata/claude/projects/-home-ann-src-broken/memory/bad.md"); err == nil || !strings.Contains(err.Error(), "bad.md") {
		t.Errorf("invalid YAML must be an error naming the file, got %v", err)
	}
	for _, tc := range []struct {
		in      string
		body    string
		typ     string
		wantErr bool
	}{
		{"just a body\n", "just a body", "", false},
		{"---\n---\nbody\n", "body", "", false},
		{"---\ntype: Feedback\r\n---\r\nwindows\r\n", "windows", TypeFeedback, false},
		{"---\ntype: node\n---\nx", "x", "", false},
		{"---\n- a list\n---\nx", "", "", true},
		{"---\nname: unterminated\nbody without end", "---\nname: unterminated\nbody without end", "", false},
		{"---\nmetadata: [1, 2]\ntype: user\n---\nx", "x", TypeUser, false},
		{"---\nname: {a: b}\n---\nx", "x", "", false},
	} {
		m, err := Parse([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if err == nil && (m.Body != tc.body || m.Type != tc.typ) {
			t.Errorf("%q: body %q type %q; want %q %q", tc.in, m.Body, m.Type, tc.body, tc.typ)
		}
	}
}

func TestAutoMemoryDirectory(t *testing.T) {
	cfg, home := t.TempDir(), t.TempDir()
	custom := filepath.Join(home, "shared-memory")
	os.MkdirAll(custom, 0o755)
	os.WriteFile(filepath.Join(custom, "a.md"), []byte("---\nname: A\ntype: user\n---\nA body\n"), 0o644)
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"autoMemoryDirectory": "~/shared-memory"}`), 0o644)
	dirs, err := Find(ctx, cfg, home)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 1 || dirs[0].Path != custom || !dirs[0].Custom || len(dirs[0].Files) != 1 {
		t.Fatalf("autoMemoryDirectory not honoured: %+v", dirs)
	}
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"autoMemoryDirectory": ".claude/memory"}`), 0o644)
	if d, err := AutoMemoryDirectory(cfg, home); err != nil || d != "" {
		t.Errorf("a relative directory (a project setting's) is not ours to resolve: %q %v", d, err)
	}
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{not json`), 0o644)
	if _, err := Find(ctx, cfg, home); err == nil || !strings.Contains(err.Error(), "settings.json") {
		t.Errorf("broken settings.json must be an error naming it, got %v", err)
	}
}

func TestConfigDir(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if d := ConfigDir("/home/u", get); d != "/home/u/.claude" {
		t.Error(d)
	}
	env["CLAUDE_CONFIG_DIR"] = "/etc/cc"
	if d := ConfigDir("/home/u", get); d != "/etc/cc" {
		t.Error(d)
	}
}

// An overlong first line is skipped, and the cwd after it still found.
func TestTranscriptCwdLongLine(t *testing.T) {
	dir := t.TempDir()
	long := `{"type":"user","message":"` + strings.Repeat("x", maxLine+10) + `"}`
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(long+"\n"+`{"cwd":"/w/app"}`+"\n"), 0o644)
	if cwd, err := TranscriptCwd(ctx, dir); err != nil || cwd != "/w/app" {
		t.Errorf("cwd %q %v", cwd, err)
	}
}

// WriteExport writes a topic file per memory and a marked section of
// MEMORY.md after Claude's lines, with a description clipped at a word;
// exporting again without a memory removes its file and line, and an
// empty export leaves Claude's lines alone.
func TestWriteExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	long := strings.Repeat("word ", 40) + "\nsecond line"
	mems := []Export{
		{ID: "01HZZZZZZZZZZZZZZZZZAAAAAA", Title: "Run [tests]", Body: long, Type: "feedback", MachineID: "desk"},
		{ID: "01HZZZZZZZZZZZZZZZZZBBBBBB", Title: "Quiet logs", Body: "Keep logs at warn.", Type: "project", MachineID: "desk"},
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, IndexFile), []byte("- [Mine](mine.md): Claude's own"), 0o644)
	res, err := WriteExport(dir, mems, false)
	if err != nil || len(res.Written) != 2 || res.Exported != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	m, err := ParseFile(res.Written[0])
	if err != nil || m.Exported != mems[0].ID || m.Type != "feedback" || m.Name != "Run [tests]" {
		t.Fatalf("topic file: %+v %v", m, err)
	}
	if n := len([]rune(m.Description)); n > descriptionRunes || !strings.HasSuffix(m.Description, "word…") {
		t.Errorf("description of %d runes: %q", n, m.Description)
	}
	index, _ := os.ReadFile(filepath.Join(dir, IndexFile))
	if !strings.HasPrefix(string(index), "- [Mine](mine.md): Claude's own\n"+exportBegin+"\n- [Run (tests)](") || !strings.HasSuffix(string(index), exportEnd+"\n") {
		t.Errorf("MEMORY.md:\n%s", index)
	}
	res, err = WriteExport(dir, mems[1:], false)
	if err != nil || len(res.Removed) != 1 || !strings.Contains(res.Removed[0], "run_tests") {
		t.Fatalf("second export: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, exportFileName(mems[0]))); err == nil {
		t.Error("the gone memory's file stayed")
	}
	if _, err := WriteExport(dir, nil, false); err != nil {
		t.Fatal(err)
	}
	if index, _ := os.ReadFile(filepath.Join(dir, IndexFile)); string(index) != "- [Mine](mine.md): Claude's own\n" {
		t.Errorf("MEMORY.md after an empty export: %q", index)
	}
}
