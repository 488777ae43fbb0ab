package nativemem

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/anamnesis-memory/anamnesis/internal/platform"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
	"go.yaml.in/yaml/v3"
)

// Claude Code loads the first IndexMaxLines lines or IndexMaxBytes bytes
// of MEMORY.md at session start; an export stays under both.
const (
	IndexMaxLines = 200
	IndexMaxBytes = 25 << 10
)

// descriptionRunes bounds a memory's description (front matter, and its
// line in MEMORY.md): one line Claude reads at session start.
const descriptionRunes = 150

// The export's section of MEMORY.md: everything between the two markers
// is ours and rewritten by each export; the rest is Claude's.
const (
	exportBegin = "<!-- anamnesis: memories from your other machines (anamnesis native export); this section is rewritten by it -->"
	exportEnd   = "<!-- /anamnesis -->"
)

// ProjectSlug is Claude Code's projects/<key> name for a directory: its
// absolute path with every character but ASCII letters and digits
// replaced by "-" (/home/ann/src/app -> -home-ann-src-app).
func ProjectSlug(dir string) string {
	return regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(dir, "-")
}

// Export is a memory another machine's Claude recorded, as [WriteExport]
// writes it into this machine's memory directory.
type Export struct {
	ID        string // the note's id; ExportKey in the file marks it as ours
	Title     string
	Body      string
	Type      string // Claude Code's memory type: user, feedback, project, reference
	MachineID string // the machine whose Claude recorded it
}

// ExportResult says what WriteExport did, or with dryRun would do.
type ExportResult struct {
	Written  []string // topic files written or rewritten
	Removed  []string // earlier exports whose memory is gone
	Kept     []string // files Claude wrote where an export would go: left alone
	LeftOut  []string // ids of memories whose MEMORY.md line did not fit Claude Code's limits
	Exported int      // lines in MEMORY.md's section
}

// WriteExport writes mems into memDir as Claude Code's own files: one
// topic file per memory (front matter name, description, type, and
// ExportKey naming the note, which marks the file as ours), and a line
// for each in a marked section of MEMORY.md, within Claude Code's limits
// (IndexMaxLines, IndexMaxBytes; memories past them are left out). A file
// without our marker, or a link, is Claude's (or the user's) and is never
// overwritten; files of earlier exports not in mems are removed. A
// MEMORY.md that is a link is refused: rewriting it by a rename would
// replace the link with a file. With dryRun nothing is written.
func WriteExport(memDir string, mems []Export, dryRun bool) (ExportResult, error) {
	x := exporter{memDir: memDir, index: filepath.Join(memDir, IndexFile), dryRun: dryRun, want: map[string]bool{}}
	x.res = ExportResult{Written: []string{}, Removed: []string{}, Kept: []string{}, LeftOut: []string{}}
	var err error
	if x.existing, err = exportedFiles(memDir); err != nil {
		return x.res, err
	}
	if err := x.readIndex(); err != nil {
		return x.res, err
	}
	for _, m := range mems {
		if err := x.place(m); err != nil {
			return x.res, err
		}
	}
	if err := x.removeStale(); err != nil {
		return x.res, err
	}
	x.res.Exported = len(x.lines)
	return x.res, x.writeIndex()
}

// exporter is one WriteExport under way.
type exporter struct {
	memDir, index string
	dryRun        bool
	existing      map[string]string // our topic files there: name -> note id
	indexText     string            // MEMORY.md as it was
	claude        string            // MEMORY.md without our section
	budgetLines   int               // lines our section may hold
	budgetBytes   int               // bytes our section's lines may hold
	lines         []string          // our section's lines so far
	want          map[string]bool   // topic files this export keeps
	res           ExportResult
}

// readIndex reads MEMORY.md (refusing a link) and works out how much of
// Claude Code's limits Claude's own lines leave to the export.
func (x *exporter) readIndex() error {
	if fi, err := os.Lstat(x.index); err == nil && platform.IsLink(fi) {
		target, _ := os.Readlink(x.index)
		return fmt.Errorf("%s is a symlink (to %s); native export does not write through links: make it a regular file to export", x.index, target)
	}
	data, err := os.ReadFile(x.index)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", x.index, err)
	}
	x.indexText = string(data)
	x.claude, _ = splitExportSection(x.indexText)
	x.budgetLines = IndexMaxLines - countLines(x.claude) - 2
	x.budgetBytes = IndexMaxBytes - len(x.claude) - len(exportBegin) - len(exportEnd) - 3
	return nil
}

// place exports one memory: kept out when a file of Claude's has its
// name, left out when its line does not fit, else written.
func (x *exporter) place(m Export) error {
	name := exportFileName(m)
	path := filepath.Join(x.memDir, name)
	if id, ours := x.existing[name]; !ours || id != m.ID {
		// Lstat: a link there (even a dangling one) is not ours either.
		if _, err := os.Lstat(path); err == nil && !ours {
			x.res.Kept = append(x.res.Kept, path) // Claude's file: never overwritten
			return nil
		}
	}
	line := fmt.Sprintf("- [%s](%s): %s (from %s)", markdownText(m.Title), name, markdownText(description(m.Body)), m.MachineID)
	if len(x.lines)+1 > x.budgetLines || joinedLen(x.lines)+len(line)+1 > x.budgetBytes {
		x.res.LeftOut = append(x.res.LeftOut, m.ID)
		return nil
	}
	x.lines = append(x.lines, line)
	x.want[name] = true
	x.res.Written = append(x.res.Written, path)
	return x.write(path, topicFile(m))
}

// write writes one file into the memory directory (creating it), not at
// all on a dry run.
func (x *exporter) write(path string, data []byte) error {
	if x.dryRun {
		return nil
	}
	if err := os.MkdirAll(x.memDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", x.memDir, err)
	}
	return note.WriteFileAtomicIn(x.memDir, path, data)
}

// removeStale removes the topic files of earlier exports this one does
// not keep.
func (x *exporter) removeStale() error {
	for name := range x.existing {
		if x.want[name] {
			continue
		}
		path := filepath.Join(x.memDir, name)
		if !x.dryRun {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove earlier export %s: %w", path, err)
			}
		}
		x.res.Removed = append(x.res.Removed, path)
	}
	slices.Sort(x.res.Removed)
	return nil
}

// writeIndex rewrites MEMORY.md: Claude's lines, then our section (none
// when nothing is exported). An unchanged or absent-and-empty index is
// left alone.
func (x *exporter) writeIndex() error {
	text := x.claude
	if len(x.lines) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += exportBegin + "\n" + strings.Join(x.lines, "\n") + "\n" + exportEnd + "\n"
	}
	if text == x.indexText || (len(x.lines) == 0 && x.indexText == "") {
		return nil
	}
	return x.write(x.index, []byte(text))
}

// exportedFiles maps the topic files in memDir that an export wrote (they
// carry ExportKey) to that note id.
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
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".md") || e.Name() == IndexFile {
			continue
		}
		m, err := ParseFile(filepath.Join(memDir, e.Name()))
		if err == nil && m.Exported != "" {
			out[e.Name()] = m.Exported
		}
	}
	return out, nil
}

// exportFileName is a topic file name for m: the machine, a slug of the
// title, and the note id's tail (unique, and stable across exports).
func exportFileName(m Export) string {
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(m.Title), "_"), "_")
	if len(slug) > 40 {
		slug = strings.TrimRight(slug[:40], "_")
	}
	machine := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(m.MachineID), "_"), "_")
	tail := m.ID
	if len(tail) > 6 {
		tail = tail[len(tail)-6:]
	}
	return fmt.Sprintf("anamnesis_%s_%s_%s.md", machine, slug, strings.ToLower(tail))
}

// topicFile is m's topic file, in Claude Code's memory format.
func topicFile(m Export) []byte {
	fm, _ := yaml.Marshal(map[string]string{
		"name":                   m.Title,
		"description":            description(m.Body),
		"type":                   m.Type,
		ExportKey:                m.ID,
		"anamnesis_from_machine": m.MachineID,
	})
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(fm)
	b.WriteString("---\n")
	b.WriteString(strings.TrimSpace(m.Body))
	b.WriteString("\n")
	return b.Bytes()
}

// description is a memory's one-line gist: its body's first line,
// clipped at a word.
func description(body string) string {
	return textfmt.Clip(textfmt.FirstLine(body), descriptionRunes)
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

// markdownText keeps a title or description from breaking the index
// line's link syntax.
func markdownText(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", "\n", " ").Replace(note.Escape(s))
}
