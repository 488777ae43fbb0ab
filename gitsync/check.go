package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
)

// What a memory store's history may hold. Everything a hub or a peer
// serves is checked against these before any of it reaches the worktree,
// the git index or main (see verifyIncoming): a store is notes in type
// directories, so anything else is refused rather than interpreted.
const (
	// MaxPathDepth is the most path components a file may have. Notes are
	// <type>/<id>.md; four leaves room for a hand-made subdirectory or
	// two without letting a crafted tree nest thousands deep.
	MaxPathDepth = 4
	// MaxNameBytes is the longest name of one tree entry (the common file
	// system limit).
	MaxNameBytes = 255
	// MaxTreeFiles is the most files one commit's tree may list, and the
	// most entries of one directory. A store of 100,000 notes with their
	// conflict copies is far below it; a merge never holds more paths
	// than this (about 200 bytes each) in memory.
	MaxTreeFiles = 500_000
)

// ErrRefused marks content a hub or peer served that this machine will
// not take: see RefusedError.
var ErrRefused = errors.New("refused")

// RefusedError is one commit a hub or peer served that breaks the rules
// above. Nothing of it was written: not to the worktree, the git index or
// main; the objects stay unreachable in .git until git gc.
type RefusedError struct {
	Commit Hash
	Path   string // the offending entry, "" when the commit itself is bad
	Reason string
}

func (e *RefusedError) Error() string {
	c := e.Commit.String()[:12]
	if e.Path != "" {
		return fmt.Sprintf("commit %s refused: %s (%q)", c, e.Reason, e.Path)
	}
	return fmt.Sprintf("commit %s refused: %s", c, e.Reason)
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// incoming is what verifyIncoming learnt of tip against head.
type incoming struct {
	upToDate    bool          // tip is in head's history: nothing to merge
	fastForward bool          // head is in tip's history
	base        plumbing.Hash // the merge base (zero: unrelated histories)
}

// verifyIncoming checks every commit reachable from tip that head's
// history does not already hold: each commit object and each tree it
// names. The same walk tells whether tip is already in head's history,
// whether head is in tip's (a fast-forward) and, otherwise, the merge
// base, so Merge walks no history of its own.
//
// Trusted is head's history: commits made here, and commits that passed
// this check when they were merged. Remote-tracking refs are not trusted:
// they are set by fetches whose content may have been refused.
//
// Commits are checked oldest first, each tree against the tree at the
// same path in the commit's first parent (trusted or checked just
// before): entries that are the same there were checked already, so a
// commit costs reading the trees it changed and looking hard only at
// the entries it added. File sizes are checked where files are read
// (readBlob) and, for a checkout, before anything is written.
func (g *Repo) verifyIncoming(ctx context.Context, objs *objects, head, tip plumbing.Hash) (incoming, error) {
	ours := map[plumbing.Hash][]plumbing.Hash{}
	if !head.IsZero() {
		if err := history(ctx, objs, head, ours); err != nil {
			return incoming{}, err
		}
	}
	if _, ok := ours[tip]; ok {
		return incoming{upToDate: true, base: tip}, nil
	}
	v := &verifier{g: g, objs: objs, trees: map[plumbing.Hash]bool{}, ours: ours,
		commits: map[plumbing.Hash]commitInfo{}, done: map[plumbing.Hash]bool{}}
	order, boundary, err := v.walkNew(ctx, tip)
	if err != nil {
		return incoming{}, err
	}
	// Discovery order is children before parents, breadth first from
	// tip: checking from its end starts with the oldest commits.
	for i := len(order) - 1; i >= 0; i-- {
		if err := v.checkChain(ctx, order[i]); err != nil {
			return incoming{}, err
		}
	}
	_, ff := boundary[head]
	return incoming{fastForward: ff, base: bestBase(boundary, ours)}, nil
}

// commitInfo is a new commit's tree and parents.
type commitInfo struct {
	tree    plumbing.Hash
	parents []plumbing.Hash
}

// walkNew reads (and checks) each commit object reachable from tip that
// head's history lacks. It returns them children before parents, and
// the boundary: the commits of head's history that new commits name as
// parents, which are the common ancestors nearest to tip.
func (v *verifier) walkNew(ctx context.Context, tip plumbing.Hash) ([]plumbing.Hash, map[plumbing.Hash]bool, error) {
	var order []plumbing.Hash
	boundary := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{tip}
	v.commits[tip] = commitInfo{}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c := queue[0]
		queue = queue[1:]
		tree, parents, err := v.commit(c)
		if err != nil {
			return nil, nil, err
		}
		v.commits[c] = commitInfo{tree, parents}
		order = append(order, c)
		for _, p := range parents {
			if _, trusted := v.ours[p]; trusted {
				boundary[p] = true
				continue
			}
			if _, queued := v.commits[p]; !queued {
				v.commits[p] = commitInfo{}
				queue = append(queue, p)
			}
		}
	}
	return order, boundary, nil
}

// checkChain checks the trees of c and of its unchecked ancestors,
// parents first. Iterative on the first parent, which is the long
// chain; other parents recurse (merges are few and shallow in a store).
// A parent is discovered after every child that names it (breadth first
// from tip) except across merges of unequal depth, so the order is
// settled here.
func (v *verifier) checkChain(ctx context.Context, c plumbing.Hash) error {
	var chain []plumbing.Hash
	for cur := c; ; {
		if _, trusted := v.ours[cur]; trusted || v.done[cur] {
			break
		}
		v.done[cur] = true
		chain = append(chain, cur)
		ps := v.commits[cur].parents
		for _, p := range ps[min(1, len(ps)):] {
			if err := v.checkChain(ctx, p); err != nil {
				return err
			}
		}
		if len(ps) == 0 {
			break
		}
		cur = ps[0]
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		base, err := v.firstParentTree(chain[i])
		if err != nil {
			return err
		}
		if err := v.tree(ctx, chain[i], v.commits[chain[i]].tree, base, "", 1); err != nil {
			return err
		}
	}
	return nil
}

// firstParentTree is the tree of c's first parent, checked before c or
// trusted (zero for a root commit).
func (v *verifier) firstParentTree(c plumbing.Hash) (plumbing.Hash, error) {
	ps := v.commits[c].parents
	if len(ps) == 0 {
		return plumbing.ZeroHash, nil
	}
	if p, ok := v.commits[ps[0]]; ok {
		return p.tree, nil
	}
	t, _, err := v.objs.commit(ps[0])
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read history: %w", err)
	}
	v.trees[t] = true // head's history is trusted
	return t, nil
}

// bestBase is the merge base of head and tip from the boundary of tip's
// new commits in head's history (ours: every commit of it with its
// parents). Every common ancestor is a boundary commit or an ancestor
// of one, so the best common ancestors are the boundary commits no
// other boundary commit reaches; of several (a criss-cross), the least
// by hash, so both machines of a merge pick the same. Zero when the
// histories share nothing.
func bestBase(boundary map[plumbing.Hash]bool, ours map[plumbing.Hash][]plumbing.Hash) plumbing.Hash {
	var best []plumbing.Hash
	if len(boundary) > 1 {
		// One walk below all of them: a boundary commit it reaches is
		// an ancestor of another.
		seen := map[plumbing.Hash]bool{}
		var stack []plumbing.Hash
		for b := range boundary {
			stack = append(stack, ours[b]...)
		}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !seen[c] {
				seen[c] = true
				stack = append(stack, ours[c]...)
			}
		}
		for b := range boundary {
			if !seen[b] {
				best = append(best, b)
			}
		}
	} else {
		for b := range boundary {
			best = append(best, b)
		}
	}
	if len(best) == 0 {
		return plumbing.ZeroHash
	}
	return slices.MinFunc(best, func(a, b plumbing.Hash) int { return strings.Compare(a.String(), b.String()) })
}

// history adds h and every commit reachable from it to set, each with
// its parents.
func history(ctx context.Context, objs *objects, h plumbing.Hash, set map[plumbing.Hash][]plumbing.Hash) error {
	stack := []plumbing.Hash{h}
	set[h] = nil
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		_, parents, err := objs.commit(c)
		if err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		set[c] = parents
		for _, p := range parents {
			if _, seen := set[p]; !seen {
				set[p] = nil
				stack = append(stack, p)
			}
		}
	}
	return nil
}

// rawObject reads an object's content through the Repo's own storage,
// refusing one of another type or larger than limit before reading it.
func (g *Repo) rawObject(h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	return readObject(g.r.Storer, h, t, limit)
}

// verifier holds what one verifyIncoming call has already checked.
type verifier struct {
	g     *Repo
	objs  *objects
	trees map[plumbing.Hash]bool // checked (or trusted) tree objects
	// ours is head's history (each commit with its parents), trusted.
	ours map[plumbing.Hash][]plumbing.Hash
	// commits are the new commits, done those whose trees were checked.
	commits map[plumbing.Hash]commitInfo
	done    map[plumbing.Hash]bool
	// folded holds case-folded names while a tree with many new entries
	// is checked.
	folded map[uint64][]byte
	// parsed holds the most recently read trees (recent, oldest first).
	parsed map[plumbing.Hash][]treeEntry
	recent []plumbing.Hash
}

// commit checks one commit object the way git fsck does (header order,
// hashes, identities) and returns its tree and parents.
func (v *verifier) commit(c plumbing.Hash) (plumbing.Hash, []plumbing.Hash, error) {
	data, err := v.objs.raw(c, plumbing.CommitObject, MaxCommitBytes)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return plumbing.ZeroHash, nil, &RefusedError{Commit: Hash(c), Reason: "the hub did not send it or one of its objects"}
		}
		return plumbing.ZeroHash, nil, &RefusedError{Commit: Hash(c), Reason: err.Error()}
	}
	tree, parents, err := parseCommitHeader(data)
	if err != nil {
		return plumbing.ZeroHash, nil, &RefusedError{Commit: Hash(c), Reason: err.Error()}
	}
	return tree, parents, nil
}

// parseCommitHeader reads a commit's tree and parents and checks the
// rest of its header as fsck would: author and committer present, in
// order, each "name <email> seconds ±hhmm".
func parseCommitHeader(data []byte) (plumbing.Hash, []plumbing.Hash, error) {
	var tree plumbing.Hash
	var parents []plumbing.Hash
	line := func() (string, bool) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return "", false
		}
		l := string(data[:i])
		data = data[i+1:]
		return l, true
	}
	l, ok := line()
	t, found := strings.CutPrefix(l, "tree ")
	if !ok || !found || !isHex40(t) {
		return tree, nil, errors.New("bad tree line in commit")
	}
	tree = plumbing.NewHash(t)
	for {
		if l, ok = line(); !ok {
			return tree, nil, errors.New("commit ends in its header")
		}
		p, isParent := strings.CutPrefix(l, "parent ")
		if !isParent {
			break
		}
		if !isHex40(p) {
			return tree, nil, errors.New("bad parent line in commit")
		}
		parents = append(parents, plumbing.NewHash(p))
	}
	a, isAuthor := strings.CutPrefix(l, "author ")
	if !isAuthor || !validIdent(a) {
		return tree, nil, errors.New("bad author line in commit")
	}
	if l, ok = line(); !ok {
		return tree, nil, errors.New("commit ends in its header")
	}
	cm, isCommitter := strings.CutPrefix(l, "committer ")
	if !isCommitter || !validIdent(cm) {
		return tree, nil, errors.New("bad committer line in commit")
	}
	return tree, parents, nil
}

func isHex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validIdent checks "name <email> 1234567890 +0100" as fsck's
// fsck_ident does: one '<' and one '>', digits for the time, a sign and
// four digits for the zone.
func validIdent(s string) bool {
	lt := strings.IndexByte(s, '<')
	gt := strings.IndexByte(s, '>')
	if lt < 0 || gt < lt || strings.Count(s, "<") != 1 || strings.Count(s, ">") != 1 {
		return false
	}
	if lt > 0 && s[lt-1] != ' ' {
		return false
	}
	rest, ok := strings.CutPrefix(s[gt+1:], " ")
	if !ok {
		return false
	}
	secs, zone, ok := strings.Cut(rest, " ")
	if !ok || secs == "" || len(secs) > 20 || len(zone) != 5 || (zone[0] != '+' && zone[0] != '-') {
		return false
	}
	if len(secs) > 1 && secs[0] == '0' {
		return false // fsck: zero-padded date
	}
	for _, c := range secs + zone[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Raw tree entry modes a store may hold: a directory, a file, an
// executable file, spelled exactly as git writes them (fsck warns on
// zero-padded modes, and a hub that checks objects refuses them).
const (
	modeDir  = "40000"
	modeFile = "100644"
	modeExec = "100755"
)

// treeEntry is one entry of a raw tree object, its name and mode
// pointing into the object's bytes.
type treeEntry struct {
	mode, name []byte
	hash       plumbing.Hash
	dir        bool
}

// parseTree splits a raw tree object into entries without copying names
// (parseRawTreeEntry), keeping each mode as spelled: git writes one
// spelling of each, and fsck refuses the others.
func parseTree(data []byte, out []treeEntry) ([]treeEntry, bool) {
	out = out[:0]
	for off := 0; off < len(data); {
		e, err := parseRawTreeEntry(data, off)
		if err != nil {
			return out, false
		}
		mode := data[off : e.next-20-1-len(e.name)-1]
		out = append(out, treeEntry{mode: mode, name: e.name, hash: e.hash, dir: string(mode) == modeDir})
		off = e.next
	}
	return out, true
}

// entries reads and parses tree h, from the few most recent trees when it
// is one of them: the base of a commit's tree is the tree the commit
// before it brought, just read.
func (v *verifier) entries(h plumbing.Hash) ([]treeEntry, error) {
	if es, ok := v.parsed[h]; ok {
		return es, nil
	}
	data, err := v.objs.raw(h, plumbing.TreeObject, MaxTreeBytes)
	if err != nil {
		return nil, err
	}
	es, ok := parseTree(data, make([]treeEntry, 0, len(data)/32+1))
	if !ok {
		return nil, errors.New("malformed tree")
	}
	if v.parsed == nil {
		v.parsed = map[plumbing.Hash][]treeEntry{}
	}
	if len(v.recent) == 32 {
		delete(v.parsed, v.recent[0])
		v.recent = v.recent[1:]
	}
	v.parsed[h] = es
	v.recent = append(v.recent, h)
	return es, nil
}

// tree checks the tree object h, found at dir (depth = components of a
// file directly in it), and every tree below it; base is the tree at the
// same path in the parent commit (zero if none), already checked or
// trusted, whose unchanged entries need no second look.
func (v *verifier) tree(ctx context.Context, c, h, base plumbing.Hash, dir string, depth int) error {
	if v.trees[h] {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	refuse := func(name []byte, reason string) error {
		return &RefusedError{Commit: Hash(c), Path: dir + string(name), Reason: reason}
	}
	if depth > MaxPathDepth {
		return &RefusedError{Commit: Hash(c), Path: strings.TrimSuffix(dir, "/"),
			Reason: fmt.Sprintf("directories nest deeper than a store needs (at most %d path components)", MaxPathDepth)}
	}
	entries, err := v.entries(h)
	switch {
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return refuse(nil, "a tree the hub did not send")
	case err != nil:
		return refuse(nil, err.Error())
	case len(entries) > MaxTreeFiles:
		return refuse(nil, fmt.Sprintf("a directory of more than %d entries", MaxTreeFiles))
	}
	var old []treeEntry
	if !base.IsZero() {
		old, _ = v.entries(base)
	}
	fresh, err := freshEntries(entries, old, refuse)
	if err != nil {
		return err
	}
	if err := v.caseTwins(entries, len(fresh), func(i int) []byte { return fresh[i].e.name }, refuse); err != nil {
		return err
	}
	for _, a := range fresh {
		if a.e.dir {
			if err := v.tree(ctx, c, a.e.hash, a.base, dir+string(a.e.name)+"/", depth+1); err != nil {
				return err
			}
		}
	}
	v.trees[h] = true
	return nil
}

// addedEntry is an entry new in a tree (absent from its base, or changed
// there), with the base's entry of the same name when both are
// directories.
type addedEntry struct {
	e    treeEntry
	base plumbing.Hash
}

// freshEntries checks a tree's entries for order and duplicates, and the
// entries that are not as in old (the same directory in the parent
// commit, checked before) for their names and modes; it returns those.
func freshEntries(entries, old []treeEntry, refuse func([]byte, string) error) ([]addedEntry, error) {
	var fresh []addedEntry
	j := 0
	for i, e := range entries {
		// git sorts a directory as its name followed by '/'; fsck refuses
		// a tree out of that order and any name given twice (a file and
		// a directory of one name are not always neighbours: "a", "a.b",
		// "a/"; caseTwins catches those).
		if i > 0 {
			switch cmp := compareTreeKeys(e.name, e.dir, entries[i-1].name, entries[i-1].dir); {
			case cmp == 0:
				return nil, refuse(e.name, "a name given twice in one directory")
			case cmp < 0:
				return nil, refuse(e.name, "tree entries out of order")
			}
		}
		for j < len(old) && compareTreeKeys(old[j].name, old[j].dir, e.name, e.dir) < 0 {
			j++
		}
		var was *treeEntry
		if j < len(old) && bytes.Equal(old[j].name, e.name) {
			was = &old[j]
		}
		if was != nil && was.hash == e.hash && bytes.Equal(was.mode, e.mode) {
			continue // as in the parent: checked there
		}
		if why := badEntry(e); why != "" {
			return nil, refuse(e.name, why)
		}
		a := addedEntry{e: e}
		if was != nil && was.dir && e.dir {
			a.base = was.hash
		}
		fresh = append(fresh, a)
	}
	return fresh, nil
}

// badEntry says why a tree entry must never reach a worktree (its name,
// or a mode other than a directory's or a regular file's), or "".
func badEntry(e treeEntry) string {
	if why := badName(e.name); why != "" {
		return why
	}
	switch string(e.mode) {
	case modeDir, modeFile, modeExec:
		return ""
	case "120000":
		return "a symlink (a store holds regular files only)"
	case "160000":
		return "a submodule (a store holds regular files only)"
	}
	return fmt.Sprintf("file mode %q (a store holds directories and regular files only)", e.mode)
}

// caseTwins refuses a tree in which a new entry's name equals another
// entry's but for case (both cannot exist on macOS and Windows, nor the
// same name twice anywhere). Few new entries are compared with every
// entry; many are checked through a set of folded names.
func (v *verifier) caseTwins(entries []treeEntry, n int, name func(int) []byte, refuse func([]byte, string) error) error {
	twin := func(a, b []byte) error {
		if bytes.Equal(a, b) {
			return refuse(a, "a name given twice in one directory")
		}
		return refuse(a, fmt.Sprintf("its name differs only in case from %q (both cannot exist on macOS and Windows)", b))
	}
	if n == 0 {
		return nil
	}
	if n <= 8 {
		for k := 0; k < n; k++ {
			nk := name(k)
			seen := false
			for _, e := range entries {
				if len(e.name) != len(nk) || !bytes.EqualFold(e.name, nk) {
					continue
				}
				if !seen && bytes.Equal(e.name, nk) {
					seen = true // itself, once
					continue
				}
				return twin(nk, e.name)
			}
		}
		return nil
	}
	if v.folded == nil {
		v.folded = map[uint64][]byte{}
	}
	clear(v.folded)
	for _, e := range entries {
		k := foldHash(e.name)
		if other, ok := v.folded[k]; ok && bytes.EqualFold(other, e.name) {
			return twin(e.name, other)
		}
		v.folded[k] = e.name
	}
	return nil
}

// foldHash is FNV-1a of the name's case-folded bytes (ASCII folded, and
// other runes through unicode's simple folding as bytes.EqualFold does).
func foldHash(name []byte) uint64 {
	h := uint64(14695981039346656037)
	for len(name) > 0 {
		r, size := rune(name[0]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(name)
			r = unicode.ToLower(r)
		} else if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		name = name[size:]
		h ^= uint64(r)
		h *= 1099511628211
	}
	return h
}

// badName says why a tree entry's name must never reach a worktree, or
// "" if it may. These are fsck's rules (with core.protectNTFS and
// core.protectHFS, which git turns on for every checkout that may reach
// such a machine) plus the files that change how git writes others.
func badName(name []byte) string {
	switch {
	case len(name) == 0:
		return "an empty name"
	case len(name) > MaxNameBytes:
		return fmt.Sprintf("a name over %d bytes", MaxNameBytes)
	case string(name) == "." || string(name) == "..":
		return "a name that is . or .."
	}
	plain, why := nameBytes(name)
	if why != "" {
		return why
	}
	// A plain name can mean .git & co only if it starts like one (".git",
	// "git~1", "gitmod~1"): a note's ULID name skips the slow look.
	if plain && name[0] != '.' && name[0] != 'g' && name[0] != 'G' {
		return ""
	}
	if !utf8.Valid(name) {
		return "a name that is not UTF-8"
	}
	switch base := dotGitBase(string(name)); base {
	case ".git":
		return "a .git entry (it would take over the repository)"
	case ".gitmodules", ".gitattributes":
		return "a " + base + " file (it would change how files are written)"
	}
	return ""
}

// nameBytes says why a name's bytes are refused ("" if they are not),
// and whether it is plain: ASCII letters, digits, '-', '_' and '.'.
func nameBytes(name []byte) (plain bool, why string) {
	plain = true
	for _, c := range name {
		switch {
		case c < 0x20 || c == 0x7f:
			return false, "a name with a control character"
		case c == '/' || c == '\\':
			return false, "a name with a path separator"
		case c == ':':
			return false, "a name with ':' (an NTFS stream)"
		case !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'):
			plain = false
		}
	}
	return plain, ""
}

// dotGitBase returns ".git", ".gitmodules" or ".gitattributes" when name
// means that file on some machine of the user: any case, with the
// characters HFS+ ignores, with the trailing dots and spaces NTFS drops,
// and as an NTFS short name (GIT~1, GITMOD~1, GITATT~1).
func dotGitBase(name string) string {
	n := strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	n = strings.ToLower(strings.TrimRight(n, ". "))
	switch {
	case n == ".git" || strings.HasPrefix(n, "git~"):
		return ".git"
	case n == ".gitmodules" || strings.HasPrefix(n, "gitmod~"):
		return ".gitmodules"
	case n == ".gitattributes" || strings.HasPrefix(n, "gitatt~"):
		return ".gitattributes"
	}
	return ""
}

// hfsIgnorable lists the code points HFS+ drops when it compares names
// (the ones git's is_hfs_dotgit skips).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// packFiles lists the pack files in .git/objects/pack by name.
func (g *Repo) packFiles() map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir(filepath.Join(g.gitDir, "objects", "pack"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".pack") {
			out[strings.TrimSuffix(e.Name(), ".pack")] = true
		}
	}
	return out
}

// removeOrphanPackFiles removes what a fetch killed half way left in
// .git/objects/pack: go-git writes a pack's .idx in place and only then
// renames the pack beside it, so a kill in between leaves an .idx with no
// .pack, possibly truncated. A later fetch that brings the same pack
// (the same sync run again: the same checksum) finds that .idx, keeps it
// as it is and renames the pack next to it, and objects of the pack then
// cannot be read ("object not found" in the repository's own history).
// An .idx with no pack serves nothing, so it goes; so do go-git's
// temporary pack files. The caller holds the lock.
func (g *Repo) removeOrphanPackFiles() {
	dir := filepath.Join(g.gitDir, "objects", "pack")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	packs := g.packFiles()
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "tmp_pack_") || strings.HasPrefix(name, "tmp_idx_") || strings.HasPrefix(name, "tmp_spool_"):
			os.Remove(filepath.Join(dir, name))
		case strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, ".rev"):
			if !packs[strings.TrimSuffix(strings.TrimSuffix(name, ".idx"), ".rev")] {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
}

// discardRefused removes the packs that appeared since before and hold
// the refused fetch's tip: what a refused hub or peer sent never stays
// in .git (git fsck would report its objects, and nothing may ever read
// them). Each fetch writes one pack, so a pack holding the tip holds
// nothing else that main needs. Best effort: a pack that cannot be
// removed (Windows, while open) stays unreachable until git gc.
func (g *Repo) discardRefused(before map[string]bool, tip plumbing.Hash) {
	dir := filepath.Join(g.gitDir, "objects", "pack")
	removed := false
	for name := range g.packFiles() {
		if before[name] {
			continue
		}
		idx, err := readPackIdx(filepath.Join(dir, name+".idx"))
		if err != nil {
			continue
		}
		if _, ok := idx.find(tip); !ok {
			continue
		}
		if removePack(dir, name) == nil {
			removed = true
		}
	}
	if removed {
		g.reindexPacks()
	}
}
