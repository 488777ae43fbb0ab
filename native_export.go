package anamnesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/claudecode"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/index"
	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/nativemem"
	"github.com/anamnesis-memory/anamnesis/note"
	"go.yaml.in/yaml/v3"
)

// Claude Code loads the first 200 lines or 25 KB of MEMORY.md at session
// start; an export stays under both.
const (
	memoryIndexMaxLines = 200
	memoryIndexMaxBytes = 25 << 10
)

// The export's section of MEMORY.md: everything between the two markers
// is ours and rewritten by each export; the rest is Claude's.
const (
	exportBegin = "<!-- anamnesis: memories from your other machines (anamnesis native export); this section is rewritten by it -->"
	exportEnd   = "<!-- /anamnesis -->"
)

// ExportOptions say where ExportNative writes.
type ExportOptions struct {
	// Dir is a directory of the project (its git root, or the directory,
	// names Claude Code's memory directory for it).
	Dir string
	// ConfigDir and UserHome as in NativeOptions.
	ConfigDir, UserHome string
	// DryRun plans without writing.
	DryRun bool
}

// ExportReport says what ExportNative did (`native export --json`).
type ExportReport struct {
	Project   string   `json:"project"`
	MemoryDir string   `json:"memory_dir"`
	Written   []string `json:"written"`  // topic files written or rewritten
	Removed   []string `json:"removed"`  // earlier exports whose note is gone
	Kept      []string `json:"kept"`     // files Claude wrote where an export would go: left alone
	LeftOut   []string `json:"left_out"` // notes whose MEMORY.md line did not fit Claude Code's limits
	DryRun    bool     `json:"dry_run,omitempty"`
	Index     string   `json:"index"` // MEMORY.md
	Exported  int      `json:"exported"`
	Available int      `json:"available"` // the other machines' memories of the project
}

// ExportNative writes the memories other machines' Claude recorded for
// the project of opts.Dir into this machine's Claude Code memory
// directory for it, as Claude Code's own files: one topic file per
// memory (front matter name, description, type, and anamnesis_note naming
// the note, which marks the file as ours), and a line for each in a
// marked section of MEMORY.md, within Claude Code's limits (200 lines, 25
// KB). A file without our marker is Claude's and is never overwritten;
// files of earlier exports whose note is gone are removed. Nothing is
// written unless the user runs it: Claude Code owns these files.
func (s *Store) ExportNative(ctx context.Context, opts ExportOptions) (ExportReport, error) {
	var rep ExportReport
	rep.DryRun = opts.DryRun
	userHome, configDir, err := claudeDirs(opts.UserHome, opts.ConfigDir)
	if err != nil {
		return rep, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return rep, fmt.Errorf("project directory %s: %w", opts.Dir, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return rep, invalidf("project directory %s is not a directory", opts.Dir)
	}
	rep.Project = claudecode.ProjectKey(dir, userHome)
	memDir, err := nativemem.AutoMemoryDirectory(configDir, userHome)
	if err != nil {
		return rep, err
	}
	if memDir == "" {
		memDir = filepath.Join(configDir, "projects", claudeProjectSlug(gitRoot(dir)), "memory")
	}
	rep.MemoryDir = memDir
	rep.Index = filepath.Join(memDir, nativemem.IndexFile)
	hits, err := s.List(ctx, index.Filter{Project: rep.Project, ProvSource: NativeSource, Live: true})
	if err != nil {
		return rep, err
	}
	hits = slices.DeleteFunc(hits, func(h index.Hit) bool { return h.MachineID == s.machineID })
	rep.Available = len(hits)
	rep.Written, rep.Removed, rep.Kept, rep.LeftOut = []string{}, []string{}, []string{}, []string{}

	existing, err := exportedFiles(memDir)
	if err != nil {
		return rep, err
	}
	// The export rewrites MEMORY.md by a rename, which would replace a
	// link there with a file (never write through it): refused instead,
	// as the link is someone's choice.
	if fi, err := os.Lstat(rep.Index); err == nil && platform.IsLink(fi) {
		target, _ := os.Readlink(rep.Index)
		return rep, fmt.Errorf("%s is a symlink (to %s); native export does not write through links: make it a regular file to export", rep.Index, target)
	}
	indexText, err := readOptional(rep.Index)
	if err != nil {
		return rep, err
	}
	claude, _ := splitExportSection(indexText)
	budgetLines := memoryIndexMaxLines - countLines(claude) - 2
	budgetBytes := memoryIndexMaxBytes - len(claude) - len(exportBegin) - len(exportEnd) - 3
	var lines []string
	want := map[string]bool{}
	for _, h := range hits {
		name := exportFileName(h)
		path := filepath.Join(memDir, name)
		if id, ok := existing[name]; !ok || id != h.ID {
			// Lstat: a link there (even a dangling one) is not ours either.
			if _, err := os.Lstat(path); err == nil && !ok {
				rep.Kept = append(rep.Kept, path) // Claude's file: never overwritten
				continue
			}
		}
		line := fmt.Sprintf("- [%s](%s): %s (from %s)", markdownText(h.Title), name, markdownText(firstLine(h.Body)), h.MachineID)
		if len(lines)+1 > budgetLines || joinedLen(lines)+len(line)+1 > budgetBytes {
			rep.LeftOut = append(rep.LeftOut, h.ID)
			continue
		}
		lines = append(lines, line)
		want[name] = true
		if !opts.DryRun {
			if err := os.MkdirAll(memDir, 0o700); err != nil {
				return rep, fmt.Errorf("create %s: %w", memDir, err)
			}
			if err := note.WriteFileAtomicIn(memDir, path, exportFile(h)); err != nil {
				return rep, err
			}
		}
		rep.Written = append(rep.Written, path)
	}
	for name := range existing {
		if !want[name] {
			path := filepath.Join(memDir, name)
			if !opts.DryRun {
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return rep, fmt.Errorf("remove earlier export %s: %w", path, err)
				}
			}
			rep.Removed = append(rep.Removed, path)
		}
	}
	slices.Sort(rep.Removed)
	rep.Exported = len(lines)
	newIndex := claude
	if len(lines) > 0 {
		if newIndex != "" && !strings.HasSuffix(newIndex, "\n") {
			newIndex += "\n"
		}
		newIndex += exportBegin + "\n" + strings.Join(lines, "\n") + "\n" + exportEnd + "\n"
	}
	if !opts.DryRun && newIndex != indexText && (len(lines) > 0 || indexText != "") {
		if err := os.MkdirAll(memDir, 0o700); err != nil {
			return rep, fmt.Errorf("create %s: %w", memDir, err)
		}
		if err := note.WriteFileAtomicIn(memDir, rep.Index, []byte(newIndex)); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// claudeProjectSlug is Claude Code's projects/<key> name for a directory:
// its absolute path with every character but ASCII letters and digits
// replaced by "-" (/home/ann/src/app -> -home-ann-src-app).
func claudeProjectSlug(dir string) string {
	return regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(dir, "-")
}

// gitRoot is the work tree root of the repository dir is in
// ([gitsync.Toplevel]: Claude Code keys auto memory by the repository, so
// subdirectories share it), else dir.
func gitRoot(dir string) string {
	if root, ok := gitsync.Toplevel(dir); ok {
		return root
	}
	return dir
}

// exportedFiles maps the topic files in memDir that an export wrote (they
// carry anamnesis_note) to that note id.
func exportedFiles(memDir string) (map[string]string, error) {
	out := map[string]string{}
	entries, err := os.ReadDir(memDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", memDir, err)
	}
	for _, e := range entries {
		// A link is never ours (an export writes regular files), so it
		// is never rewritten or removed.
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".md") || e.Name() == nativemem.IndexFile {
			continue
		}
		m, err := nativemem.ParseFile(filepath.Join(memDir, e.Name()))
		if err == nil && m.Exported != "" {
			out[e.Name()] = m.Exported
		}
	}
	return out, nil
}

// exportFileName is a topic file name for h: the machine, a slug of the
// title, and the note id's tail (unique, and stable across exports).
func exportFileName(h index.Hit) string {
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(h.Title), "_"), "_")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "_")
	}
	machine := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(h.MachineID), "_"), "_")
	return fmt.Sprintf("anamnesis_%s_%s_%s.md", machine, slug, strings.ToLower(h.ID[len(h.ID)-6:]))
}

// exportFile is the topic file of h, in Claude Code's memory format.
func exportFile(h index.Hit) []byte {
	typ := "project"
	for _, t := range h.Tags {
		if k, ok := strings.CutPrefix(t, NativeTag+":"); ok {
			typ = k
		}
	}
	fm, _ := yaml.Marshal(map[string]string{
		"name":                   h.Title,
		"description":            firstLine(h.Body),
		"type":                   typ,
		nativemem.ExportKey:      h.ID,
		"anamnesis_from_machine": h.MachineID,
	})
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(fm)
	b.WriteString("---\n")
	b.WriteString(strings.TrimSpace(h.Body))
	b.WriteString("\n")
	return b.Bytes()
}

// splitExportSection returns MEMORY.md without our section, and our section.
func splitExportSection(text string) (claude, ours string) {
	i := strings.Index(text, exportBegin)
	if i < 0 {
		return text, ""
	}
	j := strings.Index(text[i:], exportEnd)
	if j < 0 {
		return text[:i], text[i:]
	}
	end := i + j + len(exportEnd)
	if end < len(text) && text[end] == '\n' {
		end++
	}
	return text[:i] + text[end:], text[i:end]
}

func readOptional(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(data), nil
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func joinedLen(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	return n
}

// firstLine is a body's first non-empty line, at most 150 runes.
func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 150 {
				l = string(r[:149]) + "…"
			}
			return l
		}
	}
	return ""
}

// markdownText keeps a title or description from breaking the index
// line's link syntax.
func markdownText(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", "\n", " ").Replace(note.Escape(s))
}
