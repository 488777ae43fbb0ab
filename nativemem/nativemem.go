package nativemem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The four memory types Claude Code writes.
const (
	TypeUser      = "user"
	TypeFeedback  = "feedback"
	TypeProject   = "project"
	TypeReference = "reference"
)

// IndexFile is the index Claude Code keeps in each memory directory; it is
// not a memory.
const IndexFile = "MEMORY.md"

// MaxFileSize bounds a memory file read: Claude's memories are short, and
// a runaway file must not stall a sync.
const MaxFileSize = 512 << 10

// maxLine bounds a transcript line read while looking for a cwd (a pasted
// image can make one line megabytes long).
const maxLine = 1 << 20

// maxTranscriptLines bounds the lines read per transcript: the cwd is on
// the first records of a session.
const maxTranscriptLines = 200

// ExportKey is the front-matter key that marks a memory file written by
// `anamnesis native export`, naming the note it came from.
const ExportKey = "anamnesis_note"

// ConfigDir is Claude Code's configuration directory: $CLAUDE_CONFIG_DIR
// (getenv), else <userHome>/.claude.
func ConfigDir(userHome string, getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(userHome, ".claude")
}

// Dir is one auto-memory directory.
type Dir struct {
	// Path is the directory holding the memory files.
	Path string
	// Key is the projects/<key> directory name ("" for the
	// autoMemoryDirectory one).
	Key string
	// Cwd is the working directory of the first session transcript beside
	// the directory that names one; "" when none does.
	Cwd string
	// Custom marks the directory named by autoMemoryDirectory.
	Custom bool
	// Files are the memory files' names (MEMORY.md and non-.md files left
	// out), sorted.
	Files []string
}

// Find lists the auto-memory directories under configDir
// (projects/*/memory) and the one settings.json's autoMemoryDirectory
// names, if any. A configDir without projects/ has none. userHome expands
// a leading ~/ in autoMemoryDirectory.
func Find(ctx context.Context, configDir, userHome string) ([]Dir, error) {
	var out []Dir
	projects := filepath.Join(configDir, "projects")
	entries, err := os.ReadDir(projects)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list Claude Code projects %s: %w", projects, err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(projects, e.Name(), "memory")
		files, err := memoryFiles(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cwd, err := TranscriptCwd(ctx, filepath.Join(projects, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Dir{Path: p, Key: e.Name(), Cwd: cwd, Files: files})
	}
	custom, err := AutoMemoryDirectory(configDir, userHome)
	if err != nil {
		return nil, err
	}
	if custom != "" && !contains(out, custom) {
		files, err := memoryFiles(custom)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err == nil {
			out = append(out, Dir{Path: custom, Custom: true, Files: files})
		}
	}
	return out, nil
}

func contains(dirs []Dir, p string) bool {
	for _, d := range dirs {
		if filepath.Clean(d.Path) == filepath.Clean(p) {
			return true
		}
	}
	return false
}

// memoryFiles lists the memory files of one directory.
func memoryFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("list auto-memory directory %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".md") || strings.EqualFold(name, IndexFile) || strings.HasPrefix(name, ".") {
			continue
		}
		files = append(files, name)
	}
	sort.Strings(files)
	return files, nil
}

// AutoMemoryDirectory returns the directory settings.json's
// autoMemoryDirectory names (absolute, ~/ expanded), or "" when the
// setting is absent, empty or relative (a relative one is a project
// setting's, relative to a project this package does not know). A
// settings.json that is missing is no setting; one that is not JSON is an
// error naming it.
func AutoMemoryDirectory(configDir, userHome string) (string, error) {
	p := filepath.Join(configDir, "settings.json")
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read Claude Code settings %s: %w", p, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil
	}
	var s struct {
		AutoMemoryDirectory any `json:"autoMemoryDirectory"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return "", fmt.Errorf("parse Claude Code settings %s: %w", p, err)
	}
	d, _ := s.AutoMemoryDirectory.(string)
	d = strings.TrimSpace(d)
	switch {
	case d == "":
		return "", nil
	case d == "~" || strings.HasPrefix(d, "~/"):
		d = filepath.Join(userHome, d[1:])
	case !filepath.IsAbs(d):
		return "", nil
	}
	return filepath.Clean(d), nil
}

// TranscriptCwd returns the cwd of the first record naming one in the
// session transcripts (*.jsonl, by name) of a projects/<key> directory,
// or "" when none does. Broken and overlong lines are skipped.
func TranscriptCwd(ctx context.Context, projectDir string) (string, error) {
	names, err := filepath.Glob(filepath.Join(projectDir, "*.jsonl"))
	if err != nil {
		return "", fmt.Errorf("list transcripts in %s: %w", projectDir, err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		cwd, err := firstCwd(name)
		if err != nil {
			return "", err
		}
		if cwd != "" {
			return cwd, nil
		}
	}
	return "", nil
}

func firstCwd(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // removed since the listing
	}
	if err != nil {
		return "", fmt.Errorf("open transcript %s: %w", path, err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 64<<10)
	for i := 0; i < maxTranscriptLines; i++ {
		line, err := readLine(rd)
		if len(line) > 0 {
			var rec struct {
				Cwd string `json:"cwd"`
			}
			if json.Unmarshal(line, &rec) == nil && strings.TrimSpace(rec.Cwd) != "" {
				return strings.TrimSpace(rec.Cwd), nil
			}
		}
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("read transcript %s: %w", path, err)
		}
	}
	return "", nil
}

// readLine returns the next line; an overlong line is consumed and
// returned empty.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var buf []byte
	long := false
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if !long {
			buf = append(buf, chunk...)
			if len(buf) > maxLine {
				buf, long = nil, true
			}
		}
		if err != nil || !isPrefix {
			return buf, err
		}
	}
}

// Memory is one parsed memory file.
type Memory struct {
	Name        string
	Description string
	// Type is user, feedback, project or reference as the file says it
	// (lower-cased); "" when the file names none, or another word.
	Type            string
	Modified        string
	OriginSessionID string
	// Exported is the note id in a file `anamnesis native export` wrote
	// (front matter anamnesis_note): another machine's memory, which the
	// import must not take for this machine's.
	Exported string
	// Body is the text after the front matter.
	Body    string
	Size    int64
	ModTime time.Time
}

// ErrTooLarge is ParseFile's error for a file over MaxFileSize.
var ErrTooLarge = errors.New("larger than a memory file can be")

// ParseFile reads and parses one memory file.
func ParseFile(path string) (Memory, error) {
	f, err := os.Open(path)
	if err != nil {
		return Memory{}, fmt.Errorf("open memory file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Memory{}, fmt.Errorf("stat memory file %s: %w", path, err)
	}
	if fi.Size() > MaxFileSize {
		return Memory{}, fmt.Errorf("memory file %s: %w (%d bytes; at most %d)", path, ErrTooLarge, fi.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return Memory{}, fmt.Errorf("read memory file %s: %w", path, err)
	}
	m, err := Parse(data)
	if err != nil {
		return Memory{}, fmt.Errorf("memory file %s: %w", path, err)
	}
	m.Size, m.ModTime = fi.Size(), fi.ModTime()
	return m, nil
}

// Parse parses a memory file's bytes: optional YAML front matter between
// "---" lines, then the body. name, description, type, modified and
// originSessionId are read at the top level or under metadata: (the top
// level wins). A file without front matter is all body. Front matter that
// is not YAML, or not a mapping, is an error.
func Parse(data []byte) (Memory, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	fm, body, ok := splitFrontMatter(text)
	if !ok {
		return Memory{Body: strings.TrimSpace(text)}, nil
	}
	var top map[string]any
	if err := yaml.Unmarshal([]byte(fm), &top); err != nil {
		return Memory{}, fmt.Errorf("front matter is not valid YAML: %w", err)
	}
	if top == nil && strings.TrimSpace(fm) != "" {
		return Memory{}, errors.New("front matter is not a mapping of keys to values")
	}
	var meta map[string]any
	if v, ok := top["metadata"].(map[string]any); ok {
		meta = v
	}
	get := func(key string) string {
		for _, m := range []map[string]any{top, meta} {
			if s := scalar(m[key]); s != "" {
				return s
			}
		}
		return ""
	}
	m := Memory{
		Name:            get("name"),
		Description:     get("description"),
		Modified:        get("modified"),
		OriginSessionID: get("originSessionId"),
		Exported:        get(ExportKey),
		Body:            strings.TrimSpace(body),
	}
	switch t := strings.ToLower(get("type")); t {
	case TypeUser, TypeFeedback, TypeProject, TypeReference:
		m.Type = t
	}
	return m, nil
}

// splitFrontMatter splits "---\n<yaml>\n---\n<body>".
func splitFrontMatter(text string) (fm, body string, ok bool) {
	if !strings.HasPrefix(text, "---\n") {
		return "", "", false
	}
	rest := text[len("---\n"):]
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		return "", strings.TrimPrefix(rest, "---"), true
	}
	i := strings.Index(rest, "\n---\n")
	if i < 0 {
		if strings.HasSuffix(rest, "\n---") {
			return rest[:len(rest)-len("\n---")], "", true
		}
		return "", "", false
	}
	return rest[:i], rest[i+len("\n---\n"):], true
}

// scalar renders a YAML scalar as text (a time as RFC 3339); maps, lists
// and null are "".
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(x)
	default:
		return ""
	}
}
