package note

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file keeps the parts of a note's frontmatter this package does not
// model: keys it does not know and whole-line comments. Users add their
// own keys (priority: 5, enabled: true, nested maps) and other tools add
// theirs; a merge, a conflict copy or a capture update that rewrote them
// as strings, or dropped them, would lose data the user never asked us to
// touch. So an unknown key is kept as its exact YAML source and written
// back unchanged, and merges compare such keys by value (with YAML types),
// not by text.

// Field is a frontmatter key outside the known set, kept as YAML source.
type Field struct {
	Key string
	// text is the key's entry as it was written: "key: value" and every
	// further line of the value (nested maps, lists, block scalars, the
	// comments on and inside them), without the final newline.
	text string
	// canon renders the value with its YAML types, so two spellings of one
	// value (0.50 and 0.5) compare equal and 5 and '5' do not.
	canon    string
	scalar   string // the value, when it is a single non-null scalar
	isScalar bool
}

// Text is the key's entry as YAML source, as it is written back.
func (f Field) Text() string { return f.text }

// SameValue reports whether f and g are the same key with the same value,
// whatever their formatting and comments.
func (f Field) SameValue(g Field) bool { return f.Key == g.Key && f.canon == g.canon }

// Comments are the whole-line comments of a frontmatter. A comment block
// belongs to the key on the line after it, and moves with that key when
// the known keys are written back in the Python tool's order; End holds
// the comments after the last key. Comments at the end of a known key's
// line, or inside its value, are not kept: known values are rewritten in
// the canonical form. Blank lines between keys are not kept either.
type Comments struct {
	Before map[string][]string
	End    []string
}

// IsZero reports whether there are no comments.
func (c Comments) IsZero() bool { return len(c.Before) == 0 && len(c.End) == 0 }

func (c *Comments) setBefore(key string, lines []string) {
	if c.Before == nil {
		c.Before = map[string][]string{}
	}
	c.Before[key] = lines
}

// isKnownKey reports whether key is one of the keys Note models; an extra
// field with such a key would write a duplicate.
func isKnownKey(key string) bool {
	switch key {
	case "id", "type", "title", "project", "machine_id", "scope", "user_id", "workspace_id", "prov_source",
		"confidence", "prov_model", "prov_session", "supersedes", "created_at", "updated_at", "tags":
		return true
	}
	return false
}

// stringField is key: value written as PyYAML writes a string, so a
// conflict copy made here is byte-identical to one made before fields
// kept their source.
func stringField(key, value string) Field {
	if validExtraKey(key) {
		var buf bytes.Buffer
		e := &emitter{buf: &buf, whitespace: true, indention: true}
		e.key(key)
		e.scalar(value)
		if f, ok := entryField(buf.String(), nil, nil); ok {
			return f
		}
	}
	f, _ := encodedField(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
	return f
}

// keepSource records, for a frontmatter already parsed into n, the source
// text of its unknown keys (the pairs of root whose index is in unknown)
// and its whole-line comments.
func (n *Note) keepSource(front string, root *yaml.Node, unknown map[int]bool) {
	if len(unknown) == 0 && !strings.Contains(front, "#") {
		return // the common case: nothing here that Marshal would not rewrite
	}
	pairs := len(root.Content) / 2
	lines := strings.Split(strings.TrimSuffix(front, "\n"), "\n")
	starts := make([]int, pairs)
	// Slicing the source by key lines needs a block mapping with every key
	// at the start of its own line (or after the "?" of an explicit key);
	// anything else (a flow mapping) is rare enough to be written back by
	// the YAML encoder instead, which keeps types and values but not
	// formatting or comments.
	layout := root.Style&yaml.FlowStyle == 0 && !otherBreaks(front)
	for i := 0; layout && i < pairs; i++ {
		k := root.Content[2*i]
		starts[i] = k.Line - 1
		if starts[i] < 0 || starts[i] >= len(lines) || (i > 0 && starts[i] <= starts[i-1]) ||
			(k.Column != 1 && !strings.HasPrefix(lines[starts[i]], "?")) { // "? key" puts the key in column 3
			layout = false
		}
	}
	if !layout {
		for i := 0; i < pairs; i++ {
			if unknown[i] {
				if f, ok := encodedField(root.Content[2*i], root.Content[2*i+1]); ok {
					n.Extra = append(n.Extra, f)
				}
			}
		}
		return
	}
	var lead []string
	if pairs > 0 {
		lead = commentLines(lines[:starts[0]])
	}
	for i := 0; i < pairs; i++ {
		k, v := root.Content[2*i], root.Content[2*i+1]
		end := len(lines)
		if i+1 < pairs {
			end = starts[i+1]
		}
		entry := lines[starts[i]:end]
		// Comment lines after a value belong to the next key, unless they
		// are part of the value (a block scalar keeps blank lines, and its
		// indented "#" lines are text): parsing the entry without them
		// must give the same value.
		body, trail := entry, []string(nil)
		for len(body) > 1 && isCommentOrBlank(body[len(body)-1]) {
			body = body[:len(body)-1]
		}
		if len(body) < len(entry) {
			trail = entry[len(body):]
		}
		var f Field
		have := false
		if len(trail) > 0 || unknown[i] {
			f, have = entryField(strings.Join(body, "\n"), k, v)
			if !have && len(trail) > 0 {
				body, trail = entry, nil
				if unknown[i] {
					f, have = entryField(strings.Join(body, "\n"), k, v)
				}
			}
		}
		if len(lead) > 0 {
			n.Comments.setBefore(k.Value, lead)
		}
		lead = commentLines(trail)
		if unknown[i] {
			if !have {
				f, have = encodedField(k, v)
			}
			if have {
				n.Extra = append(n.Extra, f)
			}
		}
	}
	n.Comments.End = lead
}

// otherBreaks reports whether front holds a line break other than "\n"
// and "\r\n": a lone "\r", NEL, or the Unicode line and paragraph
// separators. The YAML parser counts each as a line, so its key lines
// no longer match the lines split here: a comment "#\rat: 1" is a
// comment and a key "at" to it, and kept as one line it wrote "at" twice.
func otherBreaks(front string) bool {
	for i := 0; i < len(front); i++ {
		switch {
		case front[i] == '\r' && (i+1 == len(front) || front[i+1] != '\n'):
			return true
		case front[i] == 0xc2 && i+1 < len(front) && front[i+1] == 0x85, // NEL
			front[i] == 0xe2 && i+2 < len(front) && front[i+1] == 0x80 && (front[i+2] == 0xa8 || front[i+2] == 0xa9):
			return true
		}
	}
	return false
}

func isCommentOrBlank(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return t == "" || t == "\r" || t[0] == '#'
}

// commentLines keeps the comment lines of ls, moved to column 1: Marshal
// may write a comment after a different key than the one it followed in
// the file, and an indented comment after a block scalar would become
// the scalar's text.
func commentLines(ls []string) []string {
	var out []string
	for _, l := range ls {
		if t := strings.TrimLeft(l, " \t"); t != "" && t[0] == '#' {
			out = append(out, t)
		}
	}
	return out
}

// entryField parses text, one frontmatter entry, on its own. When k and v
// are given, the entry must hold that same key and value; it is written
// back among other keys, so it must not depend on what surrounds it.
func entryField(text string, k, v *yaml.Node) (Field, bool) {
	for _, l := range strings.Split(text, "\n") {
		// Document markers and directives would end or confuse the
		// frontmatter document when the entry is written elsewhere.
		if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "...") || strings.HasPrefix(l, "%") {
			return Field{}, false
		}
	}
	var doc yaml.Node
	// The newline the entry had in the file: a block scalar that keeps its
	// trailing newlines ("|+") reads differently without it.
	if err := yaml.Unmarshal([]byte(text+"\n"), &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return Field{}, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0 || len(root.Content) != 2 || rejectAliases(root, 0) != nil {
		return Field{}, false
	}
	gk, gv := root.Content[0], root.Content[1]
	if gk.Kind != yaml.ScalarNode {
		return Field{}, false
	}
	// Keys compare by typed value too: the encoder spells a null key
	// "null" where the source may have left it empty ("?" alone).
	if k != nil && (canonical(gk) != canonical(k) || canonical(gv) != canonical(v)) {
		return Field{}, false
	}
	f := Field{Key: gk.Value, text: text, canon: canonical(gv)}
	if gv.Kind == yaml.ScalarNode && !isNull(gv) {
		f.scalar, f.isScalar = gv.Value, true
	}
	return f, true
}

// encodedField writes key and value with the YAML encoder, for entries
// whose source cannot be reused. Types and values survive; formatting and
// comments do not. It fails only if the encoder's text would not read
// back as the same key and value, and then the key is not kept.
func encodedField(k, v *yaml.Node) (Field, bool) {
	m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{withoutComments(k), withoutComments(v)}}
	data, err := yaml.Marshal(m)
	if err != nil {
		return Field{}, false
	}
	return entryField(strings.TrimSuffix(string(data), "\n"), k, v)
}

func withoutComments(nd *yaml.Node) *yaml.Node {
	c := *nd
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" && c.Value == "" {
		c.Value = "null" // the encoder writes an empty null as '' (a string)
	}
	if c.Kind == yaml.MappingNode {
		c.Style &^= yaml.FlowStyle // a block entry reads the same wherever it stands
	}
	c.Content = make([]*yaml.Node, len(nd.Content))
	for i, ch := range nd.Content {
		c.Content[i] = withoutComments(ch)
	}
	return &c
}

// canonical renders a value with its YAML types: a tagged scalar decoded
// to its Go value, lists in order, mappings sorted by key.
func canonical(nd *yaml.Node) string {
	var b strings.Builder
	writeCanonical(&b, nd)
	return b.String()
}

func writeCanonical(b *strings.Builder, nd *yaml.Node) {
	switch nd.Kind {
	case yaml.DocumentNode:
		for _, c := range nd.Content {
			writeCanonical(b, c)
		}
	case yaml.ScalarNode:
		tag := nd.ShortTag()
		b.WriteString(tag)
		b.WriteByte('(')
		switch tag {
		case "!!str":
			b.WriteString(strconv.Quote(nd.Value))
		case "!!null":
		default:
			var v any
			if err := nd.Decode(&v); err == nil {
				b.WriteString(strconv.Quote(fmt.Sprintf("%T %v", v, v)))
			} else {
				b.WriteString(strconv.Quote(nd.Value))
			}
		}
		b.WriteByte(')')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for _, c := range nd.Content {
			writeCanonical(b, c)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case yaml.MappingNode:
		pairs := make([]string, 0, len(nd.Content)/2)
		for i := 0; i+1 < len(nd.Content); i += 2 {
			pairs = append(pairs, canonical(nd.Content[i])+":"+canonical(nd.Content[i+1]))
		}
		sort.Strings(pairs)
		b.WriteByte('{')
		for _, p := range pairs {
			b.WriteString(p)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		b.WriteString(strconv.Quote(nd.Value))
	}
}
