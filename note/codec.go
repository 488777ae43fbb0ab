package note

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ErrMalformed marks a file that is not a readable note. Callers skip such
// files and report them; they never stop a reindex.
var ErrMalformed = errors.New("malformed note")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// validExtraKey reports whether key may be written as a plain front-matter
// key (^[A-Za-z_][A-Za-z0-9_-]{0,63}$): a loop, not a regexp compiled by
// every process at start-up.
func validExtraKey(key string) bool {
	if len(key) < 1 || len(key) > 64 {
		return false
	}
	if c := key[0]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_') {
		return false
	}
	return allNameBytes(key[1:])
}

const (
	fmOpen  = "---\n"
	fmClose = "\n---\n"
)

// Parse reads a note file: "---\n<YAML frontmatter>\n---\n<body>\n". Only
// id, type and title are required; missing keys take the Python tool's
// defaults. Values are normalized to strings whatever YAML type they would
// resolve to (an unquoted timestamp stays the text that was written).
// The returned Scope is the frontmatter's; callers that know the tree
// override it.
func Parse(data []byte) (*Note, error) {
	if !utf8.Valid(data) {
		return nil, malformed("not valid UTF-8 (at byte %d)", invalidUTF8Offset(data))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, malformed("contains a NUL byte")
	}
	if line, ok := conflictMarkerLine(data); ok {
		return nil, malformed("contains a git conflict marker at line %d", line)
	}
	text := string(data)
	if !strings.HasPrefix(text, fmOpen) {
		return nil, malformed("missing YAML frontmatter (the file must start with a --- line)")
	}
	front, body, ok := splitFront(text)
	if !ok {
		return nil, malformed("frontmatter is not closed by a --- line")
	}
	n, err := parseFrontmatter(front)
	if err != nil {
		return nil, err
	}
	n.Body = body
	return n, nil
}

// splitFront cuts a note file into its frontmatter and its body; ok is
// false when the text does not open with a --- line or the frontmatter
// is not closed.
func splitFront(text string) (front, body string, ok bool) {
	rest, opened := strings.CutPrefix(text, fmOpen)
	if !opened {
		return "", "", false
	}
	if strings.HasPrefix(rest, "---\n") {
		front, body = "", rest[4:]
	} else if i := strings.Index(rest, fmClose); i >= 0 {
		front, body = rest[:i+1], rest[i+len(fmClose):]
	} else if strings.HasSuffix(rest, "\n---") {
		front, body = rest[:len(rest)-3], ""
	} else {
		return "", "", false
	}
	return front, strings.TrimSuffix(body, "\n"), true
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// conflictMarkerLine finds leftover merge markers. Only the opening and
// closing markers count: a line of "=======" alone is a Markdown heading
// underline.
func conflictMarkerLine(data []byte) (int, bool) {
	line := 1
	for len(data) > 0 {
		end := bytes.IndexByte(data, '\n')
		cur := data
		if end >= 0 {
			cur = data[:end]
		}
		if (bytes.HasPrefix(cur, []byte("<<<<<<<")) || bytes.HasPrefix(cur, []byte(">>>>>>>"))) &&
			(len(cur) == 7 || cur[7] == ' ' || cur[7] == '\r') {
			return line, true
		}
		if end < 0 {
			break
		}
		data = data[end+1:]
		line++
	}
	return 0, false
}

// parseFrontmatter reads a note's frontmatter. Almost every file is in the
// exact form Marshal writes (this tool and the Python one write it so),
// and parseCanonical reads that form without a YAML parser, which cost a
// full reindex more time than anything but SQLite; everything else goes
// through the YAML parser.
func parseFrontmatter(front string) (*Note, error) {
	if n, ok := parseCanonical(front); ok {
		return n, nil
	}
	return parseYAML(front)
}

func parseYAML(front string) (*Note, error) {
	root, err := frontmatterMapping(front)
	if err != nil {
		return nil, err
	}
	n := &Note{
		Project: DefaultProject, MachineID: DefaultMachineID, Scope: ScopePortable,
		UserID: DefaultUserID, WorkspaceID: DefaultWorkspaceID, ProvSource: DefaultProvSource,
		Confidence: 1.0, Tags: []string{},
	}
	seen := map[string]bool{}
	unknown := map[int]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, malformed("frontmatter has a non-scalar key at line %d", k.Line)
		}
		key := k.Value
		if seen[key] {
			return nil, malformed("frontmatter key %q appears twice", key)
		}
		seen[key] = true
		if !isKnownKey(key) {
			unknown[i/2] = true
			continue
		}
		if err := n.setField(key, v); err != nil {
			return nil, err
		}
	}
	if err := n.checkRequired(seen); err != nil {
		return nil, err
	}
	n.keepSource(front, root, unknown)
	return n, nil
}

// frontmatterMapping parses front as YAML and returns its mapping, refusing
// anything else and anchors.
func frontmatterMapping(front string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		return nil, malformed("frontmatter is not valid YAML: %v", err)
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root == nil || root.Kind != yaml.MappingNode {
		if root != nil && root.Kind == yaml.ScalarNode && root.Tag == "!!null" || root == nil {
			return nil, malformed("frontmatter is empty (id, type and title are required)")
		}
		return nil, malformed("frontmatter is not a mapping")
	}
	if err := rejectAliases(root, 0); err != nil {
		return nil, err
	}
	return root, nil
}

// checkRequired checks that id, type and title were given and valid.
func (n *Note) checkRequired(seen map[string]bool) error {
	for _, req := range []string{"id", "type", "title"} {
		if !seen[req] {
			return malformed("frontmatter is missing %q", req)
		}
	}
	if !ValidID(n.ID) {
		return malformed("id %q is not a valid note id", n.ID)
	}
	if !ValidType(n.Type) {
		return malformed("type %q is not one of %s", n.Type, strings.Join(Types(), ", "))
	}
	return nil
}

// parseCanonical reads a frontmatter written exactly as Marshal writes
// one: every known key in Marshal's order, values plain or single-quoted,
// no other keys, no comments. It reads the lines in that form, then
// renders the note it read with Marshal, and only if that gives back
// front byte for byte is the note the answer; ok is false otherwise, and
// the YAML parser decides. The check makes the shortcut exact without
// proving the reading right: the YAML parser reads Marshal's output back
// to the note it was made from (FuzzParse holds both paths to it), so
// front, being that output, means that note.
func parseCanonical(front string) (*Note, bool) {
	n := &Note{Tags: []string{}}
	var seen [16]bool
	for rest, ok := front, true; rest != ""; {
		if rest, ok = n.canonicalEntry(rest, &seen); !ok {
			return nil, false
		}
	}
	if !ValidID(n.ID) || !ValidType(n.Type) {
		return nil, false
	}
	out := Marshal(n)
	if len(out) != len(fmOpen)+len(front)+len("---\n\n") || string(out[len(fmOpen):len(fmOpen)+len(front)]) != front {
		return nil, false
	}
	return n, true
}

// canonicalEntry reads the key at the start of front and its value into
// n, and returns what follows.
func (n *Note) canonicalEntry(front string, seen *[16]bool) (rest string, ok bool) {
	line, rest, _ := strings.Cut(front, "\n")
	key, val, ok := strings.Cut(line, ":")
	k := canonicalKeys[key]
	if !ok || k == 0 || seen[k-1] {
		return "", false
	}
	seen[k-1] = true
	if key == "tags" || key == "supersedes" {
		var items []string
		if items, rest, ok = canonicalList(val, rest); !ok {
			return "", false
		}
		if key == "tags" {
			n.Tags = items
		} else {
			n.Supersedes = items
		}
		return rest, true
	}
	v, ok := strings.CutPrefix(val, " ")
	if !ok {
		return "", false
	}
	if v, rest, ok = canonicalScalar(v, rest, "  "); !ok || !n.setCanonical(key, v) {
		return "", false
	}
	return rest, true
}

// canonicalKeys numbers the 16 keys Marshal writes (from 1).
var canonicalKeys = map[string]int{
	"id": 1, "type": 2, "title": 3, "project": 4, "machine_id": 5, "scope": 6, "user_id": 7,
	"workspace_id": 8, "prov_source": 9, "confidence": 10, "prov_model": 11, "prov_session": 12,
	"supersedes": 13, "created_at": 14, "updated_at": 15, "tags": 16,
}

// setCanonical sets a scalar key read by parseCanonical.
func (n *Note) setCanonical(key, v string) bool {
	if key == "confidence" {
		f, err := strconv.ParseFloat(v, 64)
		n.Confidence = f
		return err == nil
	}
	*n.stringField(key) = v
	return true
}

// stringField is the field of a known key with a string value, nil for
// another key.
func (n *Note) stringField(key string) *string {
	switch key {
	case "id":
		return &n.ID
	case "type":
		return &n.Type
	case "title":
		return &n.Title
	case "project":
		return &n.Project
	case "machine_id":
		return &n.MachineID
	case "scope":
		return &n.Scope
	case "user_id":
		return &n.UserID
	case "workspace_id":
		return &n.WorkspaceID
	case "prov_source":
		return &n.ProvSource
	case "prov_model":
		return &n.ProvModel
	case "prov_session":
		return &n.ProvSession
	case "created_at":
		return &n.CreatedAt
	case "updated_at":
		return &n.UpdatedAt
	}
	return nil
}

// canonicalList reads a list value: " []", or nothing on the key's line
// and then "- item" lines.
func canonicalList(val, rest string) (items []string, after string, ok bool) {
	if val == " []" {
		return []string{}, rest, true
	}
	if val != "" {
		return nil, rest, false
	}
	for strings.HasPrefix(rest, "- ") {
		line, more, _ := strings.Cut(rest, "\n")
		item, more, ok := canonicalScalar(line[2:], more, "  ")
		if !ok {
			return nil, rest, false
		}
		items, rest = append(items, item), more
	}
	return items, rest, len(items) > 0
}

// canonicalScalar reads a plain or single-quoted scalar that starts with
// first and may go on over lines of rest indented by indent (PyYAML folds
// long scalars at a space: the line break reads back as that space).
// Anything else (double quotes, blank or more deeply indented lines) is
// left to the YAML parser.
func canonicalScalar(first, rest, indent string) (v, after string, ok bool) {
	v = first
	for strings.HasPrefix(rest, indent) {
		line, more, _ := strings.Cut(rest, "\n")
		cont := line[len(indent):]
		if cont == "" || cont[0] == ' ' {
			return "", rest, false
		}
		v, rest = v+" "+cont, more
	}
	if v == "" || v[0] == '"' {
		return "", rest, false
	}
	if v[0] != '\'' {
		return v, rest, true
	}
	if len(v) < 2 || v[len(v)-1] != '\'' {
		return "", rest, false
	}
	return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), rest, true
}

// rejectAliases refuses anchors/aliases (the billion-laughs shape) and
// absurd nesting: a note's frontmatter is flat.
func rejectAliases(nd *yaml.Node, depth int) error {
	if depth > 8 {
		return malformed("frontmatter is nested too deeply")
	}
	if nd.Kind == yaml.AliasNode || nd.Anchor != "" {
		return malformed("frontmatter uses YAML anchors or aliases (line %d)", nd.Line)
	}
	for _, c := range nd.Content {
		if err := rejectAliases(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func isNull(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.Tag == "!!null" }

func scalarString(key string, v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", malformed("%s must be a single value (line %d)", key, v.Line)
	}
	return v.Value, nil
}

func stringList(key string, v *yaml.Node) ([]string, error) {
	switch {
	case isNull(v):
		return []string{}, nil
	case v.Kind == yaml.ScalarNode:
		if v.Value == "" {
			return []string{}, nil
		}
		return []string{v.Value}, nil
	case v.Kind == yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				return nil, malformed("%s must be a list of values (line %d)", key, item.Line)
			}
			out = append(out, item.Value)
		}
		return out, nil
	}
	return nil, malformed("%s must be a list (line %d)", key, v.Line)
}

func (n *Note) setField(key string, v *yaml.Node) error {
	if p := n.stringField(key); p != nil {
		if isNull(v) {
			return nil // absent: keep the default
		}
		s, err := scalarString(key, v)
		if err != nil {
			return err
		}
		*p = s
		return nil
	}
	switch key {
	case "confidence":
		if isNull(v) {
			return nil
		}
		s, err := scalarString(key, v)
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return malformed("confidence %q is not a number", s)
		}
		n.Confidence = f
	case "tags":
		l, err := stringList(key, v)
		if err != nil {
			return err
		}
		n.Tags = l
	case "supersedes":
		l, err := stringList(key, v)
		if err != nil {
			return err
		}
		n.Supersedes = l
	}
	return nil
}

// Marshal renders a note exactly as the Python writer does:
// "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) +
// "---\n" + body + "\n". Keys the note does not model follow, as their
// source text, and whole-line comments stand before the key they preceded.
func Marshal(n *Note) []byte {
	var buf bytes.Buffer
	buf.WriteString(fmOpen)
	e := &emitter{buf: &buf, whitespace: true, indention: true}
	var pending []string
	// comments writes the comment lines that go before key, and those of
	// keys left out before it (an empty prov_model).
	comments := func(k string) {
		pending = append(pending, n.Comments.Before[k]...)
		for _, l := range pending {
			if e.started {
				buf.WriteByte('\n')
			}
			buf.WriteString(l)
			e.started = true
		}
		pending = pending[:0]
	}
	skip := func(k string) { pending = append(pending, n.Comments.Before[k]...) }
	str := func(k, v string) {
		comments(k)
		e.key(k)
		e.scalar(v)
	}
	list := func(k string, l []string) {
		comments(k)
		e.key(k)
		if len(l) == 0 {
			e.buf.WriteString(" []")
			e.column += 3
			return
		}
		for _, item := range l {
			e.sequenceItem()
			e.scalar(item)
		}
	}
	str("id", n.ID)
	str("type", n.Type)
	str("title", n.Title)
	str("project", n.Project)
	str("machine_id", n.MachineID)
	str("scope", n.Scope)
	str("user_id", n.UserID)
	str("workspace_id", n.WorkspaceID)
	str("prov_source", n.ProvSource)
	comments("confidence")
	e.key("confidence")
	e.scalarTagged(pyFloatRepr(n.Confidence), true)
	if n.ProvModel != "" {
		str("prov_model", n.ProvModel)
	} else {
		skip("prov_model")
	}
	if n.ProvSession != "" {
		str("prov_session", n.ProvSession)
	} else {
		skip("prov_session")
	}
	if len(n.Supersedes) > 0 {
		list("supersedes", n.Supersedes)
	} else {
		skip("supersedes")
	}
	str("created_at", n.CreatedAt)
	str("updated_at", n.UpdatedAt)
	list("tags", n.Tags)
	for _, f := range n.Extra {
		if f.text == "" || isKnownKey(f.Key) {
			continue // a Field not made by this package; nothing to write
		}
		comments(f.Key)
		buf.WriteByte('\n')
		buf.WriteString(f.text)
	}
	pending = append(pending, n.Comments.End...)
	for _, l := range pending {
		buf.WriteByte('\n')
		buf.WriteString(l)
	}
	buf.WriteString("\n---\n")
	buf.WriteString(n.Body)
	buf.WriteString("\n")
	return buf.Bytes()
}
