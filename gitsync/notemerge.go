package gitsync

import (
	"bytes"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/anamnesis-memory/anamnesis/note"
	"github.com/go-git/go-git/v5/plumbing"
)

// ConflictKey is the frontmatter key a conflict copy carries: the id of
// the note it is an alternative version of.
const ConflictKey = "conflict_of"

// noteMerge is the outcome of merging two versions of one note file.
type noteMerge struct {
	merged []byte
	// copyPath/copyData are set when both sides edited the same lines of
	// the body: the older version is kept whole as a conflict copy.
	copyPath string
	copyData []byte
}

// mergeNote merges two versions a and b of the file at p from their
// common version base (nil when the file did not exist there). It is a
// pure function of base and the unordered pair {a, b}, so two machines
// merging each other's changes produce the same bytes.
func mergeNote(p string, base, a, b []byte) noteMerge {
	na, errA := note.Parse(a)
	nb, errB := note.Parse(b)
	var nbase *note.Note
	if base != nil {
		nbase, _ = note.Parse(base)
	}
	if errA != nil || errB != nil || (base != nil && nbase == nil) {
		return mergeText(p, base, a, b)
	}
	win, lose := na, nb
	winRaw, loseRaw := a, b
	if newer(nb, na, b, a) {
		win, lose, winRaw, loseRaw = nb, na, b, a
	}
	m := mergeFrontmatter(nbase, win, lose)
	var bodyBase string
	if nbase != nil {
		bodyBase = nbase.Body + "\n"
	}
	body, clean := Merge3(bodyBase, win.Body+"\n", lose.Body+"\n")
	if clean {
		m.Body = strings.TrimSuffix(body, "\n")
		return noteMerge{merged: note.Marshal(m)}
	}
	m.Body = win.Body
	_ = winRaw
	return noteMerge{merged: note.Marshal(m), copyPath: conflictPath(p, loseRaw), copyData: conflictCopy(lose, loseRaw)}
}

// newer reports whether x is the newer of two versions: later updated_at,
// and on a tie the larger bytes (any rule both machines agree on will do;
// "ours wins" would not, since each machine is "ours" to itself).
func newer(x, y *note.Note, xRaw, yRaw []byte) bool {
	if x.UpdatedAt != y.UpdatedAt {
		return x.UpdatedAt > y.UpdatedAt
	}
	return bytes.Compare(xRaw, yRaw) > 0
}

// mergeText handles files that are not readable notes: a clean line merge
// when there is one, else the larger version stays and the other becomes
// a conflict copy, byte for byte.
func mergeText(p string, base, a, b []byte) noteMerge {
	merged, clean := Merge3(string(base), string(a), string(b))
	if clean {
		return noteMerge{merged: []byte(merged)}
	}
	win, lose := a, b
	if bytes.Compare(b, a) > 0 {
		win, lose = b, a
	}
	return noteMerge{merged: win, copyPath: conflictPath(p, lose), copyData: lose}
}

// conflictPath names the copy after the content it holds, so both
// machines name it alike: <stem>.conflict-<8 hex of its blob>.md.
func conflictPath(p string, data []byte) string {
	ext := path.Ext(p)
	stem := strings.TrimSuffix(p, ext)
	if ext == "" {
		ext = ".md"
	}
	return stem + ".conflict-" + blobHash(data).String()[:8] + ext
}

// conflictCopy is the losing version with an id of its own (derived from
// its content, so it is the same on every machine) and conflict_of naming
// the note it disagrees with.
func conflictCopy(lose *note.Note, raw []byte) []byte {
	c := *lose
	c.Extra = append([]note.Field(nil), lose.Extra...)
	c.SetExtra(ConflictKey, lose.ID)
	c.ID = contentID(blobHash(raw))
	return note.Marshal(&c)
}

// contentID derives a 26-character id (ULID alphabet) from a hash.
func contentID(h plumbing.Hash) string { return note.IDFromHash(h[:]) }

// mergeFrontmatter merges key by key: a value only one side changed wins;
// both changed to different values, the newer note's value wins; tags and
// supersedes merge as sets; updated_at is the later of the two.
func mergeFrontmatter(base, win, lose *note.Note) *note.Note {
	m := *win
	pick := func(b, w, l string, hasBase bool) string {
		switch {
		case w == l:
			return w
		case hasBase && w == b:
			return l
		default:
			return w // lose changed nothing, or both changed: the newer value
		}
	}
	hb := base != nil
	var bn note.Note
	if hb {
		bn = *base
	}
	m.ID = pick(bn.ID, win.ID, lose.ID, hb)
	m.Type = pick(bn.Type, win.Type, lose.Type, hb)
	m.Title = pick(bn.Title, win.Title, lose.Title, hb)
	m.Project = pick(bn.Project, win.Project, lose.Project, hb)
	m.MachineID = pick(bn.MachineID, win.MachineID, lose.MachineID, hb)
	m.Scope = pick(bn.Scope, win.Scope, lose.Scope, hb)
	m.UserID = pick(bn.UserID, win.UserID, lose.UserID, hb)
	m.WorkspaceID = pick(bn.WorkspaceID, win.WorkspaceID, lose.WorkspaceID, hb)
	m.ProvSource = pick(bn.ProvSource, win.ProvSource, lose.ProvSource, hb)
	m.ProvModel = pick(bn.ProvModel, win.ProvModel, lose.ProvModel, hb)
	m.ProvSession = pick(bn.ProvSession, win.ProvSession, lose.ProvSession, hb)
	m.CreatedAt = pick(bn.CreatedAt, win.CreatedAt, lose.CreatedAt, hb)
	conf := pick(fmtF(bn.Confidence), fmtF(win.Confidence), fmtF(lose.Confidence), hb)
	m.Confidence, _ = strconv.ParseFloat(conf, 64)
	m.UpdatedAt = win.UpdatedAt
	if lose.UpdatedAt > m.UpdatedAt {
		m.UpdatedAt = lose.UpdatedAt
	}
	m.Tags = mergeSet(bn.Tags, win.Tags, lose.Tags, hb)
	m.Supersedes = mergeSet(bn.Supersedes, win.Supersedes, lose.Supersedes, hb)
	m.Extra = mergeExtra(bn.Extra, win.Extra, lose.Extra)
	m.Comments = mergeComments(bn.Comments, win.Comments, lose.Comments)
	return &m
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// mergeSet merges lists as sets: kept if either side kept it, unless a
// side removed it from base; order is the newer side's, then the older
// side's additions.
func mergeSet(base, win, lose []string, hasBase bool) []string {
	switch {
	case slices.Equal(win, lose):
		return win
	case hasBase && slices.Equal(base, win):
		return lose
	case hasBase && slices.Equal(base, lose):
		return win
	}
	inBase := map[string]bool{}
	for _, t := range base {
		inBase[t] = true
	}
	inWin, inLose := map[string]bool{}, map[string]bool{}
	for _, t := range win {
		inWin[t] = true
	}
	for _, t := range lose {
		inLose[t] = true
	}
	removed := func(t string) bool { return inBase[t] && (!inWin[t] || !inLose[t]) }
	out := []string{}
	seen := map[string]bool{}
	for _, l := range [][]string{win, lose} {
		for _, t := range l {
			if !seen[t] && !removed(t) {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// mergeExtra merges the keys the note package does not model, key by
// key, by value with YAML types: a side that only reformatted a value
// (0.50 to 0.5) did not change it. A key only one side changed (added,
// edited, removed) takes that side's version; a key both changed takes the
// newer side's. A key neither changed keeps the text of the side that
// changed its comments, if one did. Keys keep the newer side's order,
// then the older side's additions.
func mergeExtra(base, win, lose []note.Field) []note.Field {
	get := func(fs []note.Field, k string) (note.Field, bool) {
		for _, f := range fs {
			if f.Key == k {
				return f, true
			}
		}
		return note.Field{}, false
	}
	changed := func(b note.Field, okb bool, x note.Field, okx bool) bool {
		return okb != okx || (okx && !b.SameValue(x))
	}
	var keys []string
	seen := map[string]bool{}
	for _, fs := range [][]note.Field{win, lose} {
		for _, f := range fs {
			if !seen[f.Key] {
				seen[f.Key] = true
				keys = append(keys, f.Key)
			}
		}
	}
	var out []note.Field
	for _, k := range keys {
		b, okb := get(base, k)
		w, okw := get(win, k)
		l, okl := get(lose, k)
		wc, lc := changed(b, okb, w, okw), changed(b, okb, l, okl)
		f, ok := w, okw
		switch {
		case lc && !wc:
			f, ok = l, okl
		case !lc && !wc && okb && w.Text() == b.Text():
			f, ok = l, okl
		}
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// mergeComments merges the comment block before each key (and after the
// last) as a unit: one side's edit wins over an untouched block, the
// newer side's over the older's.
func mergeComments(base, win, lose note.Comments) note.Comments {
	pick := func(b, w, l []string) []string {
		if slices.Equal(w, b) {
			return l
		}
		return w
	}
	out := note.Comments{End: pick(base.End, win.End, lose.End)}
	for _, m := range []map[string][]string{win.Before, lose.Before} {
		for k := range m {
			if _, done := out.Before[k]; done {
				continue
			}
			if lines := pick(base.Before[k], win.Before[k], lose.Before[k]); len(lines) > 0 {
				if out.Before == nil {
					out.Before = map[string][]string{}
				}
				out.Before[k] = lines
			}
		}
	}
	return out
}
