package note

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPyYAMLGolden replays frontmatter that the real PyYAML produced for
// tricky titles, projects, tags and confidences (scripts/gen_yaml_golden.py).
func TestPyYAMLGolden(t *testing.T) {
	f, err := os.Open("testdata/pyyaml_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var total, failed int
	for sc.Scan() {
		var c struct {
			Title, Project, YAML string
			Tags                 []string
			Confidence           float64
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		total++
		n := &Note{ID: "01M8096W5Y5VJW7T5A4YN4196Z", Type: "semantic", Title: c.Title, Project: c.Project,
			MachineID: "desk", Scope: "portable", UserID: "self", WorkspaceID: "personal", ProvSource: "human",
			Confidence: c.Confidence, CreatedAt: "2026-11-22T00:06:32+00:00", UpdatedAt: "2026-11-22T00:06:32+00:00",
			Tags: c.Tags}
		got := string(Marshal(n))
		want := "---\n" + c.YAML + "---\n\n"
		if got != want {
			failed++
			if failed <= 5 {
				t.Errorf("title %q project %q tags %q conf %v:\n got: %q\nwant: %q", c.Title, c.Project, c.Tags, c.Confidence, got, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if total < 1000 {
		t.Fatalf("only %d golden cases read", total)
	}
	if failed > 0 {
		t.Errorf("%d of %d golden cases differ", failed, total)
	}
}

// TestPythonStoreRoundTrip: every file the Python tool wrote parses and
// re-serializes to identical bytes.
func TestPythonStoreRoundTrip(t *testing.T) {
	root := filepath.Join("..", "testdata", "python-store")
	var n int
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		n++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		parsed, err := Parse(data)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if got := Marshal(parsed); string(got) != string(data) {
			t.Errorf("%s: round trip differs:\n got: %q\nwant: %q", p, got, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("walked only %d fixture notes", n)
	}
}

func TestParseDefaultsAndLegacyShapes(t *testing.T) {
	src := "---\nid: 01ABC\ntype: semantic\ntitle: yes\nsupersedes: OLD1\ncreated_at: 2026-01-01T00:00:00Z\n---\nbody\n"
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if n.Title != "yes" || n.Project != "global" || n.MachineID != "unknown" || n.UserID != "self" ||
		n.WorkspaceID != "personal" || n.ProvSource != "human" || n.Confidence != 1.0 || n.Body != "body" {
		t.Errorf("defaults not applied: %+v", n)
	}
	if len(n.Supersedes) != 1 || n.Supersedes[0] != "OLD1" {
		t.Errorf("scalar supersedes not read as a list: %q", n.Supersedes)
	}
	if n.CreatedAt != "2026-01-01T00:00:00Z" {
		t.Errorf("unquoted timestamp not kept as text: %q", n.CreatedAt)
	}
}

func TestParseKeepsUnknownKeys(t *testing.T) {
	n := New(TypeSemantic, "t", "b", fixedTime)
	n.SetExtra("conflict_of", "01ORIGINAL")
	back, err := Parse(Marshal(n))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := back.ExtraValue("conflict_of"); !ok || v != "01ORIGINAL" {
		t.Errorf("conflict_of lost: %+v", back.Extra)
	}
	if string(Marshal(back)) != string(Marshal(n)) {
		t.Error("round trip with an extra key is not stable")
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	ok := "---\nid: 01ABC\ntype: semantic\ntitle: t\n---\nbody\n"
	cases := map[string]string{
		"no frontmatter":     "just text\n",
		"unclosed":           "---\nid: 01ABC\ntype: semantic\ntitle: t\nbody\n",
		"broken yaml":        "---\nid: [01ABC\ntype: semantic\ntitle: t\n---\n",
		"conflict markers":   strings.Replace(ok, "body", "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> theirs", 1),
		"not utf8":           "---\nid: 01ABC\ntype: semantic\ntitle: \xff\xfe\n---\n",
		"wrong type":         strings.Replace(ok, "semantic", "opinion", 1),
		"missing id":         "---\ntype: semantic\ntitle: t\n---\n",
		"missing title":      "---\nid: 01ABC\ntype: semantic\n---\n",
		"path-like id":       strings.Replace(ok, "01ABC", "../../etc/passwd", 1),
		"alias":              "---\nid: &a 01ABC\ntype: semantic\ntitle: *a\n---\n",
		"nul byte":           "---\nid: 01ABC\ntype: semantic\ntitle: t\x00\n---\n",
		"list title":         "---\nid: 01ABC\ntype: semantic\ntitle: [a, b]\n---\n",
		"bad confidence":     "---\nid: 01ABC\ntype: semantic\ntitle: t\nconfidence: high\n---\n",
		"duplicate key":      "---\nid: 01ABC\nid: 01ABD\ntype: semantic\ntitle: t\n---\n",
		"frontmatter a list": "---\n- a\n- b\n---\n",
		"empty frontmatter":  "---\n---\nbody\n",
		"deeply nested":      "---\nid: 01ABC\ntype: semantic\ntitle: t\nx: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n---\n",
	}
	for name, src := range cases {
		if _, err := Parse([]byte(src)); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: want ErrMalformed, got %v", name, err)
		}
	}
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("control case failed: %v", err)
	}
	// A setext heading underline is not a conflict marker.
	if _, err := Parse([]byte(strings.Replace(ok, "body", "Title\n=======\ntext", 1))); err != nil {
		t.Errorf("==== line rejected: %v", err)
	}
}

func TestBillionLaughsIsRefusedQuickly(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nid: 01ABC\ntype: semantic\ntitle: t\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		b.WriteString(string(c) + ": &" + string(c) + " [")
		for i := 0; i < 9; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = string(c)
	}
	b.WriteString("---\n")
	if _, err := Parse([]byte(b.String())); !errors.Is(err, ErrMalformed) {
		t.Fatalf("want ErrMalformed, got %v", err)
	}
}

func TestPyFloatRepr(t *testing.T) {
	a, b := 0.1, 0.2 // at run time, so the sum is the float64 sum, not the exact constant
	if got := pyFloatRepr(a + b); got != "0.30000000000000004" {
		t.Errorf("pyFloatRepr(0.1+0.2) = %q", got)
	}
	cases := map[float64]string{1.0: "1.0", 0.6: "0.6", 1e-07: "1.0e-07",
		1.5e-07: "1.5e-07", 1e16: "1.0e+16", 1e15: "1000000000000000.0", 0.0001: "0.0001", 0.00001: "1.0e-05", 0: "0.0"}
	for f, want := range cases {
		if got := pyFloatRepr(f); got != want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestCanonicalAgreesWithYAML: for the frontmatter PyYAML wrote for 1,257
// tricky values (quoted, folded, unicode, numbers-as-strings) and for the
// Python tool's own files, the shortcut for canonical frontmatter reads
// the same note as the YAML parser. It is taken for every file of the
// Python store and for the golden values that need no double quotes or
// line breaks (else it would speed nothing up).
func TestCanonicalAgreesWithYAML(t *testing.T) {
	f, err := os.Open("testdata/pyyaml_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fast, total := 0, 0
	for sc.Scan() {
		var c struct{ YAML string }
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		total++
		if compareCanonical(t, c.YAML) {
			fast++
		}
	}
	t.Logf("%d of %d golden frontmatters read without the YAML parser", fast, total)
	if fast < total*4/10 {
		t.Errorf("only %d of %d golden frontmatters took the shortcut", fast, total)
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "python-store", "*", "*", "*.md"))
	if len(files) == 0 {
		t.Fatal("no Python store files")
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		front, _, ok := splitFront(string(data))
		if !ok {
			t.Fatalf("%s: no frontmatter", p)
		}
		if !compareCanonical(t, front) {
			t.Errorf("%s: the Python tool's file did not take the shortcut", p)
		}
	}
}

// compareCanonical fails t if parseCanonical accepts front and reads it
// differently from the YAML parser, and reports whether it accepted it.
func compareCanonical(t *testing.T, front string) bool {
	t.Helper()
	n, ok := parseCanonical(front)
	if !ok {
		return false
	}
	want, err := parseYAML(front)
	if err != nil {
		t.Fatalf("the shortcut read a frontmatter the YAML parser refuses (%v):\n%q", err, front)
	}
	if !reflect.DeepEqual(n, want) {
		t.Fatalf("the shortcut and the YAML parser disagree:\n%q\n%#v\n%#v", front, n, want)
	}
	return true
}
