package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `native import` imports the fixtures' memories, `list --source native`
// lists them, `status` counts them, and a sync with nothing new to import
// says nothing about it.
func TestNativeImportCommand(t *testing.T) {
	parallel(t)
	home := t.TempDir()
	cfg := t.TempDir()
	mem := filepath.Join(cfg, "projects", "-w-app", "memory")
	os.MkdirAll(mem, 0o755)
	os.WriteFile(filepath.Join(mem, "user_role.md"), []byte("---\nname: Role\ndescription: the user writes Go\ntype: user\n---\nGo every day.\n"), 0o644)
	os.WriteFile(filepath.Join(mem, "bad.md"), []byte("---\nname: [oops\n---\nx\n"), 0o644)
	env := append(os.Environ(), "ANAMNESIS_HOME="+home, "ANAMNESIS_MACHINE_ID=desk", "CLAUDE_CONFIG_DIR="+cfg)
	r := runCmd(t, env, "", "native", "import")
	if r.code != 0 || !strings.Contains(r.stdout, "1 imported") || !strings.Contains(r.stdout, "skipped") {
		t.Fatalf("native import: %+v", r)
	}
	r = runCmd(t, env, "", "native", "import", "--json")
	var rep struct {
		Imported []string `json:"imported"`
		Files    int      `json:"files"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Imported) != 0 || rep.Files != 2 {
		t.Fatalf("native import again: %+v", r)
	}
	r = runCmd(t, env, "", "list", "--source", "native")
	if r.code != 0 || !strings.Contains(r.stdout, "Role") || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Errorf("list --source native: %+v", r)
	}
	r = runCmd(t, env, "", "list", "--source", "human")
	if r.code != 0 || strings.Contains(r.stdout, "Role") {
		t.Errorf("list --source human: %+v", r)
	}
	r = runCmd(t, env, "", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "native:  1 memory imported from Claude Code's auto memory (-w-app from desk 1)") {
		t.Errorf("status: %+v", r)
	}
	os.WriteFile(filepath.Join(mem, "project_x.md"), []byte("---\nname: X\ntype: project\n---\nx is y\n"), 0o644)
	r = runCmd(t, env, "", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "sync: native: 3 memory files") || !strings.Contains(r.stdout, "1 imported") {
		t.Errorf("sync: %+v", r)
	}
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"native_import": false}`), 0o600)
	r = runCmd(t, env, "", "native", "import")
	if r.code != 0 || !strings.Contains(r.stdout, "off") {
		t.Errorf("native import when off: %+v", r)
	}
}
