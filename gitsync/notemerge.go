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
	// copyPath/copyData are set when both sides changed the same thing
	// (lines of the body, or one frontmatter value) in different ways:
	// the version that did not become the note is kept whole as a
	// conflict copy.
	copyPath string
	copyData []byte
}

// mergeNote merges two versions a and b of the file at p from their
// common version base (nil when the file did not exist there). It is a
// pure function of base and the unordered pair {a, b}, so two machines
// merging each other's changes produce the same bytes.
//
// Which side is "newer" (updated_at) only decides which version the note
// keeps where both sides disagree; it never decides what is thrown away,
// because updated_at comes from a machine's clock, and a clock that runs
// ahead would otherwise win every merge and silently drop the edits of
// correctly-clocked machines. Whatever the note does not keep of the
// other side goes to a conflict copy.
func mergeNote(p string, base, a, b []byte) noteMerge {
	return mergeNoteBy(p, base, a, b, "", "")
}

// Frontmatter keys of a conflict copy naming the machine that made its
// version and the one that made the version the note kept (empty when
// the history does not say), so a reader can tell whose edit is whose.
const (
	ConflictMachineKey   = "conflict_machine"
	ConflictOfMachineKey = "conflict_of_machine"
)

// mergeNoteBy is mergeNote knowing which machine made a and b (madeA,
// madeB: "" unknown), which the conflict copy then names. Still a pure
// function of the unordered pairs {(a, madeA), (b, madeB)}.
func mergeNoteBy(p string, base, a, b []byte, madeA, madeB string) noteMerge {
	na, errA := note.Parse(a)
	nb, errB := note.Parse(b)
	var nbase *note.Note
	if base != nil {
		nbase, _ = note.Parse(base)
	}
	if errA != nil || errB != nil || (base != nil && nbase == nil) {
		return mergeText(p, base, a, b)
	}
	win, lose, loseRaw := na, nb, b
	winBy, loseBy := madeA, madeB
	if newer(nb, na, b, a) {
		win, lose, loseRaw = nb, na, a
		winBy, loseBy = madeB, madeA
	}
	m, frontConflict := mergeFrontmatter(nbase, win, lose)
	var bodyBase string
	if nbase != nil {
		bodyBase = nbase.Body + "\n"
	}
	body, clean := Merge3(bodyBase, win.Body+"\n", lose.Body+"\n")
	if clean {
		m.Body = strings.TrimSuffix(body, "\n")
	} else {
		m.Body = win.Body
	}
	out := noteMerge{merged: note.Marshal(m)}
	if !clean || frontConflict {
		out.copyPath, out.copyData = conflictPath(p, loseRaw), conflictCopy(lose, loseRaw, loseBy, winBy)
	}
	return out
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
// its content, so it is the same on every machine), conflict_of naming
// the note it disagrees with, and the machines that made it (madeBy) and
// the kept version (keptBy) when both are known.
func conflictCopy(lose *note.Note, raw []byte, madeBy, keptBy string) []byte {
	c := *lose
	c.Extra = append([]note.Field(nil), lose.Extra...)
	c.SetExtra(ConflictKey, lose.ID)
	if madeBy != "" && keptBy != "" {
		c.SetExtra(ConflictMachineKey, madeBy)
		c.SetExtra(ConflictOfMachineKey, keptBy)
	}
	c.ID = contentID(blobHash(raw))
	return note.Marshal(&c)
}

// contentID derives a 26-character id (ULID alphabet) from a hash.
func contentID(h plumbing.Hash) string { return note.IDFromHash(h[:]) }

// mergeFrontmatter merges key by key, and reports whether both sides
// changed one key (relative to base) to different values: a conflict the
// caller keeps whole as a conflict copy of lose, while the merged note
// takes win's value. Nothing in a three-way merge can say which of two
// such edits came later: when one machine had seen the other's edit before
// making its own, the history says so and the merge base already holds
// the first edit (or there is no merge at all, a fast-forward), so only
// truly concurrent edits reach this point, and their timestamps come from
// two clocks that need not agree.
//
// The policy per key:
//   - updated_at: the later of the two, never a conflict. Every edit
//     stamps it, so two concurrent edits of anything always both change it;
//     a copy for it would be a copy for every concurrent edit, and it
//     records when, not what (a clock running ahead leaves its time here
//     until a later edit, which is harmless: nothing is decided by it but
//     which version the note shows first).
//   - tags and supersedes: sets, as before. A union (minus what a side
//     removed) keeps every tag either side added, so nothing is lost and
//     nothing to copy.
//   - every other known key (id, type, title, project, machine_id, scope,
//     user_id, workspace_id, prov_*, confidence, created_at) and every key
//     the note package does not model: one value, written by a person or
//     by a capture on purpose and not restamped by an ordinary edit, so a
//     concurrent change of it on both sides is a real disagreement. The
//     note takes win's value, lose's survives in the copy.
//   - comment blocks are text a person wrote: the same rule, per block.
func mergeFrontmatter(base, win, lose *note.Note) (*note.Note, bool) {
	m := *win
	conflict := false
	hb := base != nil
	pick := func(b, w, l string) string {
		switch {
		case w == l:
			return w
		case hb && w == b:
			return l
		case hb && l == b:
			return w
		default:
			conflict = true // both changed it (or both added the file)
			return w
		}
	}
	var bn note.Note
	if hb {
		bn = *base
	}
	m.ID = pick(bn.ID, win.ID, lose.ID)
	m.Type = pick(bn.Type, win.Type, lose.Type)
	m.Title = pick(bn.Title, win.Title, lose.Title)
	m.Project = pick(bn.Project, win.Project, lose.Project)
	m.MachineID = pick(bn.MachineID, win.MachineID, lose.MachineID)
	m.Scope = pick(bn.Scope, win.Scope, lose.Scope)
	m.UserID = pick(bn.UserID, win.UserID, lose.UserID)
	m.WorkspaceID = pick(bn.WorkspaceID, win.WorkspaceID, lose.WorkspaceID)
	m.ProvSource = pick(bn.ProvSource, win.ProvSource, lose.ProvSource)
	m.ProvModel = pick(bn.ProvModel, win.ProvModel, lose.ProvModel)
	m.ProvSession = pick(bn.ProvSession, win.ProvSession, lose.ProvSession)
	m.CreatedAt = pick(bn.CreatedAt, win.CreatedAt, lose.CreatedAt)
	conf := pick(fmtF(bn.Confidence), fmtF(win.Confidence), fmtF(lose.Confidence))
	m.Confidence, _ = strconv.ParseFloat(conf, 64)
	m.UpdatedAt = win.UpdatedAt
	if lose.UpdatedAt > m.UpdatedAt {
		m.UpdatedAt = lose.UpdatedAt
	}
	m.Tags = mergeSet(bn.Tags, win.Tags, lose.Tags, hb)
	m.Supersedes = mergeSet(bn.Supersedes, win.Supersedes, lose.Supersedes, hb)
	var extraConflict, commentConflict bool
	m.Extra, extraConflict = mergeExtra(bn.Extra, win.Extra, lose.Extra)
	m.Comments, commentConflict = mergeComments(bn.Comments, win.Comments, lose.Comments)
	return &m, conflict || extraConflict || commentConflict
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
// edited, removed) takes that side's version; a key both changed to
// different values takes win's and is reported as a conflict. A key
// neither changed keeps the text of the side that changed its comments, if
// one did. Keys keep win's order, then lose's additions.
func mergeExtra(base, win, lose []note.Field) ([]note.Field, bool) {
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
	conflict := false
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
		case lc && wc && changed(w, okw, l, okl):
			conflict = true
		}
		if ok {
			out = append(out, f)
		}
	}
	return out, conflict
}

// mergeComments merges the comment block before each key (and after the
// last) as a unit: one side's edit wins over an untouched block; two
// different edits of one block are a conflict, and win's stays.
func mergeComments(base, win, lose note.Comments) (note.Comments, bool) {
	conflict := false
	pick := func(b, w, l []string) []string {
		switch {
		case slices.Equal(w, b):
			return l
		case !slices.Equal(l, b) && !slices.Equal(w, l):
			conflict = true
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
	return out, conflict
}
