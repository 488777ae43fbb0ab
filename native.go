package anamnesis

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/logfile"
	"github.com/anamnesis-memory/anamnesis/nativemem"
	"github.com/anamnesis-memory/anamnesis/note"
)

// NativeSource is the prov_source of notes imported from Claude Code's
// auto memory (`list --source native`).
const NativeSource = note.ProvClaudeMemory

// Tags and frontmatter keys of an imported memory. native_machine names
// the machine whose Claude wrote the memory, native_file the file inside
// its memory directory: the source stays on the note.
const (
	NativeTag        = "native"
	nativeMachineKey = "native_machine"
	nativeFileKey    = "native_file"
	nativeStateFile  = "native.json"
	nativeStateV     = 1
	nativeCustomProj = note.DefaultProject
)

// nativeTypes maps Claude Code's memory types to note types. Feedback
// ("do it this way, not that way") is how to work: procedural, as the
// Python tool mapped it. A user's role and preferences, project facts and
// pointers to references are facts: semantic. The Claude type is kept as
// the tag native:<type>, so nothing of it is lost; a file with no known
// type is semantic and tagged only "native".
var nativeTypes = map[string]string{
	nativemem.TypeUser:      note.TypeSemantic,
	nativemem.TypeFeedback:  note.TypeProcedural,
	nativemem.TypeProject:   note.TypeSemantic,
	nativemem.TypeReference: note.TypeSemantic,
}

// NativeOptions tune ImportNative. The zero value reads the user's real
// Claude Code directory.
type NativeOptions struct {
	// ConfigDir is Claude Code's configuration directory; "" means
	// $CLAUDE_CONFIG_DIR, else <UserHome>/.claude.
	ConfigDir string
	// UserHome is the user's home directory (for ~/.claude, a ~ in
	// autoMemoryDirectory, and project keys); "" means os.UserHomeDir.
	UserHome string
	// ProjectKey turns a session's cwd into a project key; nil means
	// claudecode.ProjectKey, the key capture and the hooks use.
	ProjectKey func(cwd string) string
}

// NativeReport says what ImportNative did (`native import --json`).
type NativeReport struct {
	// Off is set when config.json's native_import is false; nothing else
	// was done.
	Off bool `json:"off,omitempty"`
	// Dirs are the memory directories found, Files the memory files in
	// them, Read the files read (the rest were unchanged by size and mtime).
	Dirs int `json:"dirs"`
	// SkippedProjects are the projects native_import_skip left out.
	SkippedProjects []string `json:"skipped_projects,omitempty"`
	Files           int      `json:"files"`
	Read            int      `json:"read"`
	// Imported, Updated and Removed are note ids.
	Imported []string `json:"imported"`
	Updated  []string `json:"updated"`
	Removed  []string `json:"removed"`
	// Skipped are memory files that could not be imported, and why.
	Skipped []SkippedFile `json:"skipped"`
	// Committed says the changes were committed to memory/.
	Committed bool `json:"committed"`
}

// Changed says whether the import wrote or removed a note.
func (r NativeReport) Changed() bool {
	return len(r.Imported)+len(r.Updated)+len(r.Removed) > 0
}

// nativeState is <home>/state/native.json: per source file (absolute
// path) its size and mtime when last imported and its note's id, so an
// import reads only files that changed.
type nativeState struct {
	Version int                    `json:"version"`
	Files   map[string]nativeEntry `json:"files"`
}

type nativeEntry struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	ID      string `json:"id"`
	Dir     string `json:"dir"` // the memory directory
}

// ImportNative turns each Claude Code auto-memory file on this machine
// into a portable note of its project (see nativeTypes for the types),
// redacted as capture redacts, and commits what changed in one commit.
//
// A memory belongs to the machine whose Claude wrote it: its id is a hash
// of (machine id, project key, file name), so importing again gives the
// same id, and two machines importing the same project never write the
// same note (the Python tool's ids collided and conflicted forever). The
// project is keyed from the cwd of the transcripts beside the memory
// directory (ProjectKey), else the directory's name; autoMemoryDirectory's
// directory is global.
//
// A file whose size or mtime changed is read again and its note rewritten
// if the note would differ (tags and keys added to the note in anamnesis
// are kept); a file gone from a directory that is still there removes its
// note. Notes of a directory that is not found at all are kept: a
// CLAUDE_CONFIG_DIR set differently for one run must not delete them.
// Files that cannot be read or parsed are reported and skipped.
func (s *Store) ImportNative(ctx context.Context, opts NativeOptions) (NativeReport, error) {
	rep := NativeReport{Imported: []string{}, Updated: []string{}, Removed: []string{}, Skipped: []SkippedFile{}}
	if s.config.NativeImportOff {
		rep.Off = true
		return rep, nil
	}
	if err := s.writable("import Claude Code's memory"); err != nil {
		return rep, err
	}
	userHome, configDir, err := claudeDirs(opts.UserHome, opts.ConfigDir)
	if err != nil {
		return rep, err
	}
	projectKey := opts.ProjectKey
	if projectKey == nil {
		projectKey = func(cwd string) string { return claudecode.ProjectKey(cwd, userHome) }
	}
	dirs, err := nativemem.Find(ctx, configDir, userHome)
	if err != nil {
		return rep, err
	}
	st, err := s.loadNativeState()
	if err != nil {
		return rep, err
	}
	imp := nativeImport{s: s, rep: &rep, st: st, claimed: map[string]string{}, seen: map[string]bool{}}
	for _, d := range dirs {
		imp.total += len(d.Files)
	}
	rep.Dirs = len(dirs)
	for _, d := range dirs {
		if err := imp.dir(ctx, d, nativeProject(d, projectKey)); err != nil {
			return rep, err
		}
	}
	if err := imp.removeGone(ctx, dirs); err != nil {
		return rep, err
	}
	if imp.total >= nativeProgressFiles {
		s.progress("", 0, 0)
	}
	if err := imp.finish(ctx); err != nil {
		return rep, err
	}
	return rep, s.saveNativeState(st)
}

// nativeProgressFiles is how many memory files an import must read
// before it shows progress.
const nativeProgressFiles = 200

// nativeProject is the project a memory directory's notes belong to: the
// custom autoMemoryDirectory's own, else the key of its transcripts'
// cwd, else its directory name.
func nativeProject(d nativemem.Dir, projectKey func(cwd string) string) string {
	switch {
	case d.Custom:
		return nativeCustomProj
	case d.Cwd != "":
		return projectKey(d.Cwd)
	}
	return d.Key
}

// dir imports the memory files of one directory, unless the user opted
// its project out: its files are not read then, and what an earlier
// import took from it is removed (removeGone: not seen this run).
func (imp *nativeImport) dir(ctx context.Context, d nativemem.Dir, project string) error {
	rep := imp.rep
	if slices.Contains(imp.s.config.NativeImportSkip, project) {
		if !slices.Contains(rep.SkippedProjects, project) {
			rep.SkippedProjects = append(rep.SkippedProjects, project)
		}
		return nil
	}
	for _, f := range d.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if imp.total >= nativeProgressFiles {
			imp.s.progress("native import", rep.Files, imp.total)
		}
		rep.Files++
		if err := imp.file(ctx, d.Path, f, project); err != nil {
			return err
		}
	}
	return nil
}

// removeGone removes the notes of files gone from a directory this run
// scanned (a directory not found at all keeps its notes).
func (imp *nativeImport) removeGone(ctx context.Context, dirs []nativemem.Dir) error {
	scanned := map[string]bool{}
	for _, d := range dirs {
		scanned[filepath.Clean(d.Path)] = true
	}
	gone := make([]string, 0)
	for path, e := range imp.st.Files {
		if !imp.seen[path] && scanned[filepath.Clean(e.Dir)] {
			gone = append(gone, path)
		}
	}
	sort.Strings(gone)
	for _, path := range gone {
		if err := imp.remove(ctx, imp.st.Files[path].ID); err != nil {
			return err
		}
		delete(imp.st.Files, path)
	}
	return nil
}

// nativeImport is one ImportNative run's work in progress.
type nativeImport struct {
	s       *Store
	rep     *NativeReport
	st      *nativeState
	claimed map[string]string // note id -> source path, this run
	seen    map[string]bool   // source paths found
	total   int               // memory files in the directories found
	changes []index.Change
	rels    []string // memory/ paths written or removed
}

// file imports one memory file.
func (imp *nativeImport) file(ctx context.Context, dir, name, project string) error {
	s := imp.s
	path := filepath.Join(dir, name)
	imp.seen[path] = true
	fi, err := os.Stat(path)
	if err != nil {
		imp.rep.Skipped = append(imp.rep.Skipped, SkippedFile{Path: path, Error: err.Error()})
		return nil
	}
	id := nativeID(s.machineID, project, name)
	if other, ok := imp.claimed[id]; ok && other != path {
		// A second memory directory of the same project on this machine
		// (two clones of one repository) holds a file of the same name:
		// its id also hashes the directory, so neither replaces the other.
		id = nativeID(s.machineID, project, dir+"/"+name)
	}
	imp.claimed[id] = path
	old, had := imp.st.Files[path]
	if had && old.ID == id && old.Size == fi.Size() && old.MtimeNS == fi.ModTime().UnixNano() {
		return nil
	}
	imp.rep.Read++
	m, err := nativemem.ParseFile(path)
	if err != nil {
		// Keep the note of the last good version; try again next time.
		imp.rep.Skipped = append(imp.rep.Skipped, SkippedFile{Path: path, Error: err.Error()})
		return nil
	}
	if m.Exported != "" {
		// Written by `anamnesis native export`: another machine's memory,
		// already a note here; never this machine's.
		return nil
	}
	if had && old.ID != id {
		// The project key changed (an origin was added, say): the note
		// moves to its new id.
		if err := imp.remove(ctx, old.ID); err != nil {
			return err
		}
	}
	want := nativeNote(m, name, project, s.machineID, s.now())
	want.ID = id
	if err := imp.put(ctx, want); err != nil {
		return err
	}
	imp.st.Files[path] = nativeEntry{Size: m.Size, MtimeNS: m.ModTime.UnixNano(), ID: id, Dir: dir}
	return nil
}

// nativeNote is the note a memory becomes (without its id).
func nativeNote(m nativemem.Memory, file, project, machine string, now time.Time) *note.Note {
	title := m.Name
	if title == "" {
		title = strings.TrimSuffix(file, ".md")
	}
	title = strings.Join(strings.FieldsFunc(claudecode.Redact(title), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(title); len(r) > note.MaxTitle {
		title = string(r[:note.MaxTitle])
	}
	if title == "" {
		title = "memory"
	}
	body := m.Body
	if m.Description != "" {
		body = strings.TrimSpace(m.Description + "\n\n" + body)
	}
	if body == "" {
		body = title
	}
	body = claudecode.Redact(body)
	if len(body) > note.MaxBody {
		body = body[:note.MaxBody]
	}
	typ, ok := nativeTypes[m.Type]
	if !ok {
		typ = note.TypeSemantic
	}
	tags := []string{NativeTag}
	if m.Type != "" {
		tags = append(tags, NativeTag+":"+m.Type)
	}
	n := note.New(typ, title, body, now)
	n.Project, n.MachineID, n.ProvSource, n.Tags = project, machine, NativeSource, tags
	n.SetExtra(nativeMachineKey, machine)
	n.SetExtra(nativeFileKey, file)
	return n
}

// put writes want (new, or over the note with its id) unless the note
// already says the same.
func (imp *nativeImport) put(ctx context.Context, want *note.Note) error {
	s := imp.s
	now := note.Now(s.now())
	cur, homePath, err := s.Get(ctx, want.ID)
	if errors.Is(err, ErrNotFound) {
		want.CreatedAt, want.UpdatedAt = now, now
		t := s.memory
		rel, err := t.Write(want)
		if err != nil {
			return fmt.Errorf("import native memory %s: %w", want.ID, err)
		}
		imp.changed(t, rel)
		imp.rep.Imported = append(imp.rep.Imported, want.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up imported memory %s: %w", want.ID, err)
	}
	if nativeSame(cur, want) {
		return nil
	}
	// Rewrite what the memory decides; keep what was added in anamnesis
	// (tags, supersedes, other keys) and the file it lives in.
	cur.Type, cur.Title, cur.Body, cur.Project, cur.MachineID, cur.ProvSource = want.Type, want.Title, want.Body, want.Project, want.MachineID, want.ProvSource
	tags := slices.Clone(want.Tags)
	for _, tg := range cur.Tags {
		if !strings.HasPrefix(tg, NativeTag+":") && !slices.Contains(tags, tg) {
			tags = append(tags, tg)
		}
	}
	cur.Tags = tags
	for _, f := range want.Extra {
		v, _ := want.ExtraValue(f.Key)
		cur.SetExtra(f.Key, v)
	}
	cur.UpdatedAt = now
	if err := cur.Validate(); err != nil {
		return fmt.Errorf("update imported memory %s: %w", cur.ID, err)
	}
	scope, rel, _ := note.SplitHomePath(homePath)
	t := s.tree(scope)
	if err := t.WriteFile(rel, note.Marshal(cur)); err != nil {
		return fmt.Errorf("update imported memory %s: %w", cur.ID, err)
	}
	imp.changed(t, rel)
	imp.rep.Updated = append(imp.rep.Updated, cur.ID)
	return nil
}

// nativeSame says whether cur already says what the memory says.
func nativeSame(cur, want *note.Note) bool {
	if cur.Type != want.Type || cur.Title != want.Title || cur.Body != want.Body || cur.Project != want.Project ||
		cur.MachineID != want.MachineID || cur.ProvSource != want.ProvSource {
		return false
	}
	for _, tg := range want.Tags {
		if !slices.Contains(cur.Tags, tg) {
			return false
		}
	}
	for _, tg := range cur.Tags {
		if strings.HasPrefix(tg, NativeTag+":") && !slices.Contains(want.Tags, tg) {
			return false
		}
	}
	for _, f := range want.Extra {
		w, _ := want.ExtraValue(f.Key)
		if c, ok := cur.ExtraValue(f.Key); !ok || c != w {
			return false
		}
	}
	return true
}

// remove deletes the note with id, if this store holds it.
func (imp *nativeImport) remove(ctx context.Context, id string) error {
	s := imp.s
	cur, homePath, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up imported memory %s: %w", id, err)
	}
	if cur.MachineID != s.machineID {
		return nil // another machine's memory is that machine's to remove
	}
	scope, rel, _ := note.SplitHomePath(homePath)
	if err := s.tree(scope).Remove(rel); err != nil {
		return fmt.Errorf("remove imported memory %s: %w", homePath, err)
	}
	imp.changes = append(imp.changes, index.Change{File: index.File{Path: homePath}, Delete: true})
	if scope == note.ScopePortable {
		imp.rels = append(imp.rels, rel)
	}
	imp.rep.Removed = append(imp.rep.Removed, id)
	return nil
}

func (imp *nativeImport) changed(t note.Tree, rel string) {
	imp.changes = append(imp.changes, imp.s.readChange(t, rel))
	if t.Scope == note.ScopePortable {
		imp.rels = append(imp.rels, rel)
	}
}

// finish indexes every change in one transaction and commits them in one
// commit (a first import of 1,000 memories is one commit, not 1,000).
func (imp *nativeImport) finish(ctx context.Context) error {
	if len(imp.changes) == 0 {
		return nil
	}
	s := imp.s
	indexErr := s.guard(ctx, func() error {
		_, err := s.idx().Apply(ctx, imp.changes)
		return err
	})
	if indexErr != nil {
		s.notice(fmt.Sprintf("Claude Code memories imported but not indexed yet (%v); `anamnesis reindex` indexes them", indexErr))
	}
	if len(imp.rels) == 0 {
		return nil
	}
	if err := s.commitNotes(ctx, imp.rels, indexErr == nil, fmt.Sprintf("import %d Claude Code memory files", len(imp.rels))); err != nil {
		s.notice(fmt.Sprintf("Claude Code memories imported but not committed: %v; the next `anamnesis sync` commits them", err))
		return nil
	}
	imp.rep.Committed = true
	return nil
}

// nativeID is an imported memory's note id: the first 128 bits of
// sha256("claude-auto-memory" NUL machine NUL project NUL file) in
// Crockford base32, 26 characters like a ULID. It depends on where the
// memory comes from, never on its content, so an edit keeps the id, and
// on the machine, so two machines never write the same note.
func nativeID(machine, project, file string) string {
	sum := sha256.Sum256([]byte(NativeSource + "\x00" + machine + "\x00" + project + "\x00" + file))
	return note.IDFromHash(sum[:])
}

func (s *Store) nativeStatePath() string {
	return filepath.Join(s.home, "state", nativeStateFile)
}

// loadNativeState reads state/native.json; a missing or unreadable one
// is an empty state (every file is read again and compared with its note,
// which changes nothing that is already imported).
func (s *Store) loadNativeState() (*nativeState, error) {
	st := &nativeState{Version: nativeStateV, Files: map[string]nativeEntry{}}
	data, err := os.ReadFile(s.nativeStatePath())
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read native import state: %w", err)
	}
	var got nativeState
	if json.Unmarshal(data, &got) != nil || got.Version != nativeStateV || got.Files == nil {
		return st, nil
	}
	return &got, nil
}

func (s *Store) saveNativeState(st *nativeState) error {
	dir := filepath.Dir(s.nativeStatePath())
	if err := logfile.PrivateDir(dir); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode native import state: %w", err)
	}
	if err := note.WritePrivateFileAtomicIn(s.home, s.nativeStatePath(), data); err != nil {
		return fmt.Errorf("save native import state: %w", err)
	}
	return nil
}

// claudeDirs fills in the user's home directory and Claude Code's
// configuration directory ($CLAUDE_CONFIG_DIR, else ~/.claude) where the
// caller left them empty.
func claudeDirs(userHome, configDir string) (string, string, error) {
	if userHome == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("find the home directory for Claude Code's memory: %w", err)
		}
		userHome = h
	}
	if configDir == "" {
		configDir = nativemem.ConfigDir(userHome, os.Getenv)
	}
	return userHome, configDir, nil
}
