package note

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// Note types, as the Python tool defines them.
const (
	TypeProcedural = "procedural" // verified how-tos, decisions, fixes
	TypeSemantic   = "semantic"   // facts, preferences, conventions
	TypeEpisodic   = "episodic"   // what happened in a session
)

// Scopes. The tree a note sits in decides its scope.
const (
	ScopePortable     = "portable"      // memory/, synced between machines
	ScopeMachineLocal = "machine-local" // local/, never leaves this machine
)

// Defaults applied when a frontmatter key is absent (Python inventory §4.1).
const (
	DefaultProject     = "global"
	DefaultMachineID   = "unknown"
	DefaultUserID      = "self"
	DefaultWorkspaceID = "personal"
	DefaultProvSource  = "human"
	// ProvClaudeMemory marks a note imported from Claude Code's own auto
	// memory (prov_source).
	ProvClaudeMemory = "claude-auto-memory"
)

// MaxTitle bounds a title written here (in characters). Titles are one
// line of a note's frontmatter; reading accepts longer ones.
const MaxTitle = 1000

// MaxFileSize bounds a note file. Larger files are reported, never indexed:
// a note is a paragraph of memory, and a runaway file must not stall a
// reindex or a hook.
const MaxFileSize = 1 << 20

// MaxBody bounds a note's body: a file's limit less room for its
// frontmatter. Every writer (CLI, MCP, hooks) is held to it by Validate.
const MaxBody = MaxFileSize - 4096

// Types lists the valid note types in a stable order; the slice is fresh
// on each call, so no caller can change what is valid.
func Types() []string { return []string{TypeProcedural, TypeSemantic, TypeEpisodic} }

// Note is one memory note. Field order mirrors the frontmatter key order.
type Note struct {
	ID          string
	Type        string
	Title       string
	Project     string
	MachineID   string
	Scope       string
	UserID      string
	WorkspaceID string
	ProvSource  string
	Confidence  float64
	ProvModel   string
	ProvSession string
	Supersedes  []string
	CreatedAt   string
	UpdatedAt   string
	Tags        []string
	// Extra keeps frontmatter keys this package does not know (such as
	// conflict_of on merge conflict copies, or a user's own keys) with
	// their YAML source text, so a rewrite writes them back unchanged.
	Extra []Field
	// Comments keeps the frontmatter's whole-line comments (see Comments).
	Comments Comments
	Body     string
}

// ExtraValue returns the value of an extra frontmatter key that holds a
// single non-null scalar.
func (n *Note) ExtraValue(key string) (string, bool) {
	for _, f := range n.Extra {
		if f.Key == key && f.isScalar {
			return f.scalar, true
		}
	}
	return "", false
}

// SetExtra sets (or replaces) an extra frontmatter key to a string value,
// written as PyYAML would write it.
func (n *Note) SetExtra(key, value string) {
	f := stringField(key, value)
	for i, g := range n.Extra {
		if g.Key == key {
			n.Extra[i] = f
			return
		}
	}
	n.Extra = append(n.Extra, f)
}

// ValidID reports whether s is shaped like a note id: letters, digits, '-'
// and '_', at most 128 characters, starting with a letter or digit
// (^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$). Anything else (dots, slashes) could
// name a path, so it is refused before it reaches the file system or the
// index. A loop, not a regexp: compiling {0,127} cost every process about
// a thousand allocations at start-up.
func ValidID(s string) bool {
	return len(s) >= 1 && len(s) <= 128 && isAlnum(s[0]) && allNameBytes(s[1:])
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// allNameBytes reports whether s holds only letters, digits, '_' and '-'.
func allNameBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// IDFromHash derives a note id from the first 16 bytes of a hash (sum
// must hold at least 16): 26 characters of the ULID alphabet (Crockford
// base32, the last of them padded), for ids that every machine must derive
// alike, such as a merge conflict copy's or an imported memory's.
func IDFromHash(sum []byte) string {
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var out [26]byte
	var acc uint64
	bits, j := 0, 0
	for _, by := range sum[:16] {
		acc = acc<<8 | uint64(by)
		bits += 8
		for bits >= 5 {
			out[j] = crockford[(acc>>(bits-5))&31]
			bits -= 5
			j++
		}
	}
	out[j] = crockford[(acc<<(5-bits))&31] // 128 bits: 25 characters and 3 bits
	return string(out[:])
}

// NewID returns a fresh ULID (26 characters, Crockford base32, uppercase),
// the id format of the Python tool.
func NewID(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}

// Now formats t as the Python tool stamps notes: UTC, to the second, with a
// literal +00:00 offset.
func Now(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05+00:00") }

// ValidType reports whether t is one of the three note types.
func ValidType(t string) bool {
	return t == TypeProcedural || t == TypeSemantic || t == TypeEpisodic
}

// ValidScope reports whether s is a scope name.
func ValidScope(s string) bool { return s == ScopePortable || s == ScopeMachineLocal }

// New returns a note with defaults filled in, a fresh id and both
// timestamps set to now.
func New(typ, title, body string, now time.Time) *Note {
	ts := Now(now)
	return &Note{
		ID: NewID(now), Type: typ, Title: title, Body: body,
		Project: DefaultProject, MachineID: DefaultMachineID, Scope: ScopePortable,
		UserID: DefaultUserID, WorkspaceID: DefaultWorkspaceID, ProvSource: DefaultProvSource,
		Confidence: 1.0, CreatedAt: ts, UpdatedAt: ts, Tags: []string{},
	}
}

// Validate checks what a writer must guarantee before a note reaches disk.
// Errors name the offending field.
func (n *Note) Validate() error {
	if !ValidID(n.ID) {
		return fmt.Errorf("id %q is not a valid note id", n.ID)
	}
	if !ValidType(n.Type) {
		return fmt.Errorf("type %q is not one of %s", n.Type, strings.Join(Types(), ", "))
	}
	if strings.TrimSpace(n.Title) == "" {
		return fmt.Errorf("title is empty")
	}
	if c := utf8.RuneCountInString(n.Title); c > MaxTitle {
		return fmt.Errorf("title is %d characters; a title is one line of at most %d (put the rest in the body)", c, MaxTitle)
	}
	for _, f := range [...]struct{ name, value string }{{"title", n.Title}, {"project", n.Project}} {
		if r, ok := ControlIn(f.value); ok {
			return fmt.Errorf("%s contains the control character %s (%s); a %s is one line of visible text", f.name, Escape(string(r)), fmt.Sprintf("%U", r), f.name)
		}
	}
	if len(n.Body) > MaxBody {
		return fmt.Errorf("body is %d bytes; a note's body is at most %d", len(n.Body), MaxBody)
	}
	if !ValidScope(n.Scope) {
		return fmt.Errorf("scope %q is not %s or %s", n.Scope, ScopePortable, ScopeMachineLocal)
	}
	for _, id := range n.Supersedes {
		if !ValidID(id) {
			return fmt.Errorf("supersedes: %q is not a valid note id", id)
		}
	}
	// A confidence is a probability; NaN would also be written as .nan,
	// which no reader parses back.
	if !(n.Confidence >= 0 && n.Confidence <= 1) {
		return fmt.Errorf("confidence %v is not a number between 0 and 1", n.Confidence)
	}
	return nil
}

// RelPath is the note's path inside its tree: <type>/<id>.md.
func (n *Note) RelPath() string { return n.Type + "/" + n.ID + ".md" }
