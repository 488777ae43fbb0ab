package anamnesis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/anamnesis-memory/anamnesis/nativemem"
	"github.com/anamnesis-memory/anamnesis/note"
)

// copyFixtures copies nativemem's fixtures (a Claude Code config dir) so
// a test can edit them.
func copyFixtures(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, src, dst)
	return dst
}

func head(t *testing.T, s *Store) string {
	t.Helper()
	r, err := s.repo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func nativeNotes(t *testing.T, s *Store) map[string]Hit {
	t.Helper()
	hits, err := s.List(ctx, Filter{ProvSource: NativeSource})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Hit{}
	for _, h := range hits {
		out[h.Title] = h
	}
	return out
}

// The fixtures: both front-matter shapes, a file with invalid YAML, a
// memory directory with a transcript (project from its cwd) and one
// without (project from the directory name). Importing twice makes no new
// commit; an edit updates the note under the same id; a deletion removes
// it.
func TestImportNativeFixtures(t *testing.T) {
	cfg := copyFixtures(t, "nativemem/testdata/claude")
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "desk", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := NativeOptions{ConfigDir: cfg, UserHome: t.TempDir(), ProjectKey: func(cwd string) string {
		if cwd == "/home/ann/src/app" {
			return "github.com/ann/app"
		}
		return "unexpected:" + cwd
	}}
	rep, err := s.ImportNative(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Imported) != 4 || len(rep.Skipped) != 1 || !strings.HasSuffix(rep.Skipped[0].Path, "bad.md") || !rep.Committed || rep.Dirs != 2 || rep.Files != 5 {
		t.Fatalf("first import: %+v", rep)
	}
	notes := nativeNotes(t, s)
	for title, want := range map[string]struct{ typ, project, tag, file string }{
		"User role":        {note.TypeSemantic, "github.com/ann/app", "native:user", "user_role.md"},
		"Testing feedback": {note.TypeProcedural, "github.com/ann/app", "native:feedback", "feedback_testing.md"},
		"Deploy":           {note.TypeSemantic, "github.com/ann/app", "native:project", "project_deploy.md"},
		"Docs":             {note.TypeSemantic, "-home-ann-src-broken", "native:reference", "reference_docs.md"},
	} {
		h, ok := notes[title]
		if !ok {
			t.Errorf("%s not imported: %v", title, notes)
			continue
		}
		if h.Type != want.typ || h.Project != want.project || !slices.Contains(h.Tags, "native") || !slices.Contains(h.Tags, want.tag) || h.MachineID != "desk" {
			t.Errorf("%s: type %s project %s tags %v machine %s", title, h.Type, h.Project, h.Tags, h.MachineID)
		}
		n, _, err := s.Get(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := n.ExtraValue("native_file"); f != want.file {
			t.Errorf("%s: native_file %q", title, f)
		}
		if m, _ := n.ExtraValue("native_machine"); m != "desk" {
			t.Errorf("%s: native_machine %q", title, m)
		}
		if n.ProvSource != NativeSource {
			t.Errorf("%s: prov_source %q", title, n.ProvSource)
		}
	}
	if b := notes["Deploy"].Body; strings.Contains(b, "ghp_") || !strings.HasPrefix(b, "deploys go through the canary first\n\n") {
		t.Errorf("Deploy's body is description + body, redacted: %q", b)
	}

	before := head(t, s)
	rep, err = s.ImportNative(ctx, opts)
	if err != nil || rep.Changed() || rep.Read != 1 || rep.Committed { // bad.md is read again each time
		t.Fatalf("second import: %+v %v", rep, err)
	}
	if head(t, s) != before {
		t.Error("importing again made a commit")
	}

	// Lost state: every file is read again, nothing changes.
	os.Remove(filepath.Join(s.Home(), "state", "native.json"))
	if rep, err = s.ImportNative(ctx, opts); err != nil || rep.Changed() || head(t, s) != before {
		t.Fatalf("import without state: %+v %v", rep, err)
	}

	mem := filepath.Join(cfg, "projects", "-home-ann-src-app", "memory")
	edited := "---\nname: Deploy\ndescription: deploys go through the canary first\ntype: project\n---\nThe canary now runs 45 minutes.\n"
	os.WriteFile(filepath.Join(mem, "project_deploy.md"), []byte(edited), 0o644)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(filepath.Join(mem, "project_deploy.md"), later, later)
	rep, err = s.ImportNative(ctx, opts)
	if err != nil || len(rep.Updated) != 1 || rep.Updated[0] != notes["Deploy"].ID || len(rep.Imported)+len(rep.Removed) != 0 {
		t.Fatalf("import after an edit: %+v %v", rep, err)
	}
	if b := nativeNotes(t, s)["Deploy"].Body; !strings.Contains(b, "45 minutes") {
		t.Errorf("edit not imported: %q", b)
	}
	if head(t, s) == before {
		t.Error("the update was not committed")
	}

	os.Remove(filepath.Join(mem, "user_role.md"))
	rep, err = s.ImportNative(ctx, opts)
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0] != notes["User role"].ID {
		t.Fatalf("import after a deletion: %+v %v", rep, err)
	}
	if _, _, err := s.Get(ctx, notes["User role"].ID); err == nil {
		t.Error("the deleted memory's note is still there")
	}
	if _, err := os.Stat(filepath.Join(s.Home(), notes["User role"].Path)); err == nil {
		t.Error("the deleted memory's note file is still there")
	}
	if st, err := s.Status(ctx); err != nil || st.Sync.Dirty {
		t.Errorf("the removal was not committed: %+v %v", st.Sync, err)
	}

	// A whole directory gone (another CLAUDE_CONFIG_DIR for one run, say)
	// keeps its notes.
	os.RemoveAll(filepath.Join(cfg, "projects", "-home-ann-src-broken"))
	if rep, err = s.ImportNative(ctx, opts); err != nil || len(rep.Removed) != 0 {
		t.Fatalf("a missing directory removed notes: %+v %v", rep, err)
	}
}

// native_import: false turns the import off.
func TestImportNativeOff(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"native_import": false}`), 0o600)
	s, err := Open(ctx, home, Options{MachineID: "desk", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.ImportNative(ctx, NativeOptions{ConfigDir: copyFixtures(t, "nativemem/testdata/claude"), UserHome: t.TempDir()})
	if err != nil || !rep.Off || rep.Changed() {
		t.Fatalf("%+v %v", rep, err)
	}
}

// claudeProject makes a Claude Code project directory: a transcript whose
// cwd is a git checkout with the given origin, and memory files.
func claudeProject(t *testing.T, cfg, key, cwd, origin string, memories map[string]string) {
	t.Helper()
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, cwd, "init", "-q")
	testutil.Git(t, cwd, "remote", "add", "origin", origin)
	dir := filepath.Join(cfg, "projects", key)
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"type":"user","cwd":%q,"sessionId":"s","message":{"role":"user","content":"hi"}}`, cwd)
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(rec+"\n"), 0o644)
	for name, text := range memories {
		os.WriteFile(filepath.Join(dir, "memory", name), []byte(text), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "memory", "MEMORY.md"), []byte("- index\n"), 0o644)
}

// Two machines with the same project at different absolute paths (so
// different projects/<key> names) and the same origin, each with a memory
// of the same file name: both memories reach both machines under the
// project's key, with no conflict copy; an edit and a deletion on one
// reach the other.
func TestImportNativeTwoMachines(t *testing.T) {
	a, b := machines(t)
	cfgA, cfgB := t.TempDir(), t.TempDir()
	homeA, homeB := t.TempDir(), t.TempDir()
	mem := func(desc, body string) string {
		return "---\nname: Build\ndescription: " + desc + "\nmetadata:\n  type: project\n---\n" + body + "\n"
	}
	claudeProject(t, cfgA, "-home-ann-src-app", filepath.Join(homeA, "src", "app"), "git@github.com:ann/app.git",
		map[string]string{"project_build.md": mem("desk builds with make", "make build")})
	claudeProject(t, cfgB, "-Users-ann-work-app", filepath.Join(homeB, "work", "app"), "https://github.com/ann/app",
		map[string]string{"project_build.md": mem("laptop builds with go", "go build ./...")})
	optsA := NativeOptions{ConfigDir: cfgA, UserHome: homeA}
	optsB := NativeOptions{ConfigDir: cfgB, UserHome: homeB}
	for _, x := range []struct {
		s    *Store
		opts NativeOptions
	}{{a, optsA}, {b, optsB}} {
		if rep, err := x.s.ImportNative(ctx, x.opts); err != nil || len(rep.Imported) != 1 {
			t.Fatalf("import: %+v %v", rep, err)
		}
	}
	if _, _, err := b.Write(ctx, WriteRequest{Type: "procedural", Title: "Release", Body: "make ship", Project: "github.com/ann/app"}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b, a)
	for _, s := range []*Store{a, b} {
		hits, err := s.List(ctx, Filter{ProvSource: NativeSource, Project: "github.com/ann/app"})
		if err != nil {
			t.Fatal(err)
		}
		machines := map[string]bool{}
		for _, h := range hits {
			machines[h.MachineID] = true
		}
		if len(hits) != 2 || !machines["desk"] || !machines["laptop"] {
			t.Errorf("%s: want both machines' memory of github.com/ann/app, got %d: %v", s.machineID, len(hits), machines)
		}
		if cs, err := s.Conflicts(ctx); err != nil || len(cs) != 0 {
			t.Errorf("%s: conflicts %+v %v", s.machineID, cs, err)
		}
		if st, err := s.Status(ctx); err != nil || len(st.Sync.ConflictCopies) != 0 {
			t.Errorf("%s: conflict copies %+v %v", s.machineID, st.Sync.ConflictCopies, err)
		}
	}

	// At SessionStart each machine is given the other machine's Claude
	// memory, after the project's own notes, and not its own (Claude Code
	// loads that itself).
	notes, _, _, err := b.Inject(ctx, "github.com/ann/app", 40)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range notes {
		switch {
		case h.ProvSource == NativeSource:
			order = append(order, "native:"+h.MachineID)
		case h.Project == "github.com/ann/app":
			order = append(order, "project")
		}
	}
	if fmt.Sprint(order) != "[project native:desk]" {
		t.Errorf("laptop's SessionStart selection: %v, want the project's note, then desk's Claude memory only", order)
	}

	st, err := b.Status(ctx)
	if err != nil || len(st.Native) != 2 || st.Native[0].Project != "github.com/ann/app" || st.Native[0].MachineID != "desk" || st.Native[1].MachineID != "laptop" || st.Native[0].Notes != 1 {
		t.Errorf("status counts of native memories: %+v %v", st.Native, err)
	}

	// Importing again on both and syncing changes nothing.
	headA := head(t, a)
	for _, x := range []struct {
		s    *Store
		opts NativeOptions
	}{{a, optsA}, {b, optsB}} {
		if rep, err := x.s.ImportNative(ctx, x.opts); err != nil || rep.Changed() {
			t.Fatalf("re-import: %+v %v", rep, err)
		}
	}
	mustSync(t, a, b, a)
	if head(t, a) != headA {
		t.Error("importing again on both machines made a commit")
	}

	// An edit on the desk reaches the laptop; then a deletion does.
	pA := filepath.Join(cfgA, "projects", "-home-ann-src-app", "memory", "project_build.md")
	os.WriteFile(pA, []byte(mem("desk builds with make", "make build && make test")), 0o644)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(pA, later, later)
	if rep, err := a.ImportNative(ctx, optsA); err != nil || len(rep.Updated) != 1 {
		t.Fatalf("import of the edit: %+v %v", rep, err)
	}
	mustSync(t, a, b)
	found := false
	for _, h := range nativeNotes2(t, b) {
		found = found || h.MachineID == "desk" && strings.Contains(h.Body, "make test")
	}
	if !found {
		t.Error("the desk's edit did not reach the laptop")
	}
	os.Remove(pA)
	if rep, err := a.ImportNative(ctx, optsA); err != nil || len(rep.Removed) != 1 {
		t.Fatalf("import of the deletion: %+v %v", rep, err)
	}
	mustSync(t, a, b)
	left := nativeNotes2(t, b)
	if len(left) != 1 || left[0].MachineID != "laptop" {
		t.Errorf("after the desk's deletion the laptop holds %d native notes: %+v", len(left), left)
	}
}

func nativeNotes2(t *testing.T, s *Store) []Hit {
	t.Helper()
	hits, err := s.List(ctx, Filter{ProvSource: NativeSource})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Ids depend on machine, project and file only.
func TestNativeID(t *testing.T) {
	a := nativeID("desk", "github.com/ann/app", "x.md")
	if a != nativeID("desk", "github.com/ann/app", "x.md") || !note.ValidID(a) || len(a) != 26 {
		t.Errorf("id %q", a)
	}
	for _, other := range []string{nativeID("laptop", "github.com/ann/app", "x.md"), nativeID("desk", "github.com/ann/lib", "x.md"), nativeID("desk", "github.com/ann/app", "y.md")} {
		if other == a {
			t.Errorf("ids collide: %s", a)
		}
	}
}

// Importing 1,000 memory files: the first import (one commit), then an
// import with nothing changed (what every sync pays).
func TestImportNative1000(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1,000 notes")
	}
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "projects", "-home-ann-src-big", "memory")
	os.MkdirAll(dir, 0o755)
	for i := range 1000 {
		text := fmt.Sprintf("---\nname: Memory %d\ndescription: fact number %d about the big project\ntype: %s\n---\nThe value of setting %d is %d.\n",
			i, i, []string{"user", "feedback", "project", "reference"}[i%4], i, i*7)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), []byte(text), 0o644)
	}
	s, err := Open(ctx, t.TempDir(), Options{MachineID: "desk", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := NativeOptions{ConfigDir: cfg, UserHome: t.TempDir()}
	start := time.Now()
	rep, err := s.ImportNative(ctx, opts)
	first := time.Since(start)
	if err != nil || len(rep.Imported) != 1000 || !rep.Committed {
		t.Fatalf("%d imported, %v", len(rep.Imported), err)
	}
	start = time.Now()
	rep, err = s.ImportNative(ctx, opts)
	again := time.Since(start)
	if err != nil || rep.Changed() || rep.Read != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
	t.Logf("1,000 memory files: first import %v, import with nothing changed %v", first.Round(time.Millisecond), again.Round(time.Millisecond))
}

// A project in native_import_skip is not imported, and what an earlier
// import took from it goes; other projects are untouched.
func TestImportNativeSkipsAProject(t *testing.T) {
	home, cfg, userHome := t.TempDir(), t.TempDir(), t.TempDir()
	mem := "---\nname: Secret\ndescription: d\ntype: project\n---\nbody\n"
	claudeProject(t, cfg, "-secret", filepath.Join(userHome, "secret"), "git@github.com:ann/secret.git", map[string]string{"project_a.md": mem})
	claudeProject(t, cfg, "-open", filepath.Join(userHome, "open"), "git@github.com:ann/open.git", map[string]string{"project_b.md": mem})
	opts := NativeOptions{ConfigDir: cfg, UserHome: userHome}
	open := func() *Store {
		s, err := Open(ctx, home, Options{MachineID: "desk", Create: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if rep, err := s.ImportNative(ctx, opts); err != nil || len(rep.Imported) != 2 {
		t.Fatalf("first import: %+v %v", rep, err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"machine_id": "desk", "native_import_skip": ["github.com/ann/secret"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	rep, err := s.ImportNative(ctx, opts)
	if err != nil || len(rep.Removed) != 1 || len(rep.Imported) != 0 || fmt.Sprint(rep.SkippedProjects) != "[github.com/ann/secret]" {
		t.Fatalf("import after opting out: %+v %v", rep, err)
	}
	hits, _ := s.List(ctx, Filter{ProvSource: NativeSource})
	if len(hits) != 1 || hits[0].Project != "github.com/ann/open" {
		t.Errorf("left: %v", hits)
	}
	var native *Check
	checks := s.Doctor(ctx, Install{Problem: "not checked here"})
	for i := range checks {
		if checks[i].Name == "claude code memory" {
			native = &checks[i]
		}
	}
	if native == nil || native.Detail != "1 memory imported from Claude Code's auto memory" || fmt.Sprint(native.Items) != "[github.com/ann/open: 1 memory from desk]" {
		t.Errorf("doctor: %+v", native)
	}
	os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"native_import_skip": "github.com/ann/secret"}`), 0o600)
	if _, err := LoadConfig(home); err == nil || !strings.Contains(err.Error(), "native_import_skip") {
		t.Errorf("a string for the list: %v", err)
	}
}

// native export writes the other machine's memories as Claude Code's own
// files, in its limits, never over a file Claude wrote; the import does
// not take them back as this machine's; a gone note's file goes.
func TestExportNative(t *testing.T) {
	a, b := machines(t)
	cfgA, cfgB := t.TempDir(), t.TempDir()
	homeA, homeB := t.TempDir(), t.TempDir()
	mem := func(name, desc string) string {
		return "---\nname: " + name + "\ndescription: " + desc + "\ntype: feedback\n---\nThe details of " + name + ".\n"
	}
	claudeProject(t, cfgA, "-a-app", filepath.Join(homeA, "app"), "git@github.com:ann/app.git",
		map[string]string{"feedback_tests.md": mem("Run tests first", "Always run go test before pushing"),
			"feedback_logs.md": mem("Quiet logs", "Keep logs at warn")})
	laptopDir := filepath.Join(homeB, "work", "app")
	claudeProject(t, cfgB, "-b-app", laptopDir, "https://github.com/ann/app", nil)
	if _, err := a.ImportNative(ctx, NativeOptions{ConfigDir: cfgA, UserHome: homeA}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, b)
	memDir := filepath.Join(cfgB, "projects", nativemem.ProjectSlug(laptopDir), "memory")
	os.MkdirAll(memDir, 0o755)
	claudes := "- [Mine](mine.md): Claude's own\n"
	os.WriteFile(filepath.Join(memDir, "MEMORY.md"), []byte(claudes), 0o644)
	opts := ExportOptions{Dir: filepath.Join(laptopDir), ConfigDir: cfgB, UserHome: homeB}
	if rep, err := b.ExportNative(ctx, ExportOptions{Dir: opts.Dir, ConfigDir: cfgB, UserHome: homeB, DryRun: true}); err != nil || len(rep.Written) != 2 {
		t.Fatalf("dry run: %+v %v", rep, err)
	} else if _, err := os.Stat(rep.Written[0]); err == nil {
		t.Fatal("--print wrote a file")
	}
	rep, err := b.ExportNative(ctx, opts)
	if err != nil || rep.Project != "github.com/ann/app" || len(rep.Written) != 2 || rep.Exported != 2 {
		t.Fatalf("export: %+v %v", rep, err)
	}
	index, _ := os.ReadFile(filepath.Join(memDir, "MEMORY.md"))
	if !strings.HasPrefix(string(index), claudes) || !strings.Contains(string(index), "<!-- anamnesis: memories from your other machines") || strings.Count(string(index), "(from desk)") != 2 {
		t.Errorf("MEMORY.md:\n%s", index)
	}
	data, _ := os.ReadFile(rep.Written[0])
	if m, err := nativemem.Parse(data); err != nil || m.Exported == "" || m.Type != "feedback" || m.Name == "" {
		t.Errorf("topic file %s: %+v %v", data, m, err)
	}
	// The laptop's own import must not take them for the laptop's.
	if r, err := b.ImportNative(ctx, NativeOptions{ConfigDir: cfgB, UserHome: homeB}); err != nil || len(r.Imported) != 0 {
		t.Errorf("import after export: %+v %v", r, err)
	}
	// A file Claude wrote where an export would go is never overwritten.
	claudeFile := rep.Written[1]
	os.WriteFile(claudeFile, []byte("---\nname: Claude's\n---\nmine\n"), 0o644)
	if rep, err := b.ExportNative(ctx, opts); err != nil || len(rep.Kept) != 1 || rep.Kept[0] != claudeFile {
		t.Errorf("re-export over Claude's file: %+v %v", rep, err)
	}
	if data, _ := os.ReadFile(claudeFile); string(data) != "---\nname: Claude's\n---\nmine\n" {
		t.Error("a file Claude wrote was overwritten")
	}
	// Claude Code's limits: a MEMORY.md of 199 lines leaves no room.
	os.WriteFile(filepath.Join(memDir, "MEMORY.md"), []byte(strings.Repeat("- line\n", 199)), 0o644)
	if rep, err := b.ExportNative(ctx, opts); err != nil || len(rep.LeftOut) != 1 || rep.Exported != 0 {
		t.Errorf("at the limit: %+v %v", rep, err)
	}
	if data, _ := os.ReadFile(filepath.Join(memDir, "MEMORY.md")); strings.Count(string(data), "\n") > nativemem.IndexMaxLines {
		t.Errorf("MEMORY.md over %d lines", nativemem.IndexMaxLines)
	}
	// An export's file replaced by a link to a file elsewhere, even one
	// that reads as an export, is not ours: kept, never rewritten (nor
	// replaced by a file). A linked MEMORY.md is refused, its target and
	// the link left as they are.
	os.WriteFile(filepath.Join(memDir, "MEMORY.md"), []byte(claudes), 0o644)
	exported := rep.Written[0]
	outside := filepath.Join(t.TempDir(), "elsewhere.md")
	data, _ = os.ReadFile(exported)
	os.WriteFile(outside, data, 0o644)
	os.Remove(exported)
	if err := os.Symlink(outside, exported); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	if rep, err := b.ExportNative(ctx, opts); err != nil || !slices.Contains(rep.Kept, exported) {
		t.Errorf("export over a linked topic file: %+v %v", rep, err)
	}
	if fi, err := os.Lstat(exported); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked topic file was replaced: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(outside); string(got) != string(data) {
		t.Errorf("export wrote through a link: %s", got)
	}
	mdTarget := filepath.Join(t.TempDir(), "MEMORY.md")
	os.WriteFile(mdTarget, []byte(claudes), 0o644)
	os.Remove(filepath.Join(memDir, "MEMORY.md"))
	os.Symlink(mdTarget, filepath.Join(memDir, "MEMORY.md"))
	if _, err := b.ExportNative(ctx, opts); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("export with a linked MEMORY.md: %v", err)
	}
	if got, _ := os.ReadFile(mdTarget); string(got) != claudes {
		t.Errorf("export changed what MEMORY.md links to: %s", got)
	}
}
