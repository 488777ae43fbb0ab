package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/anamnesis-memory/anamnesis/note"
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
	// MaxTreeFiles is the most files one commit's tree may list. A store
	// of 100,000 notes with their conflict copies is far below it; a hub
	// that serves more is refused before its tree is flattened, so the
	// memory a merge takes stays bounded (about 200 bytes a path).
	MaxTreeFiles = 500_000
	// MaxBlobSize is the largest file a checkout writes: a note is at
	// most note.MaxFileSize, and a larger blob is refused before it is
	// read into memory.
	MaxBlobSize = note.MaxFileSize
	// maxCommitSize bounds one commit object (a message and a few lines
	// of headers; the Python tool's messages are one line).
	maxCommitSize = 1 << 20
)

// ErrRefused marks content a hub or peer served that this machine will
// not take: see RefusedError.
var ErrRefused = errors.New("refused")

// RefusedError is one commit a hub or peer served that breaks the rules
// above. Nothing of it was written: not to the worktree, the git index or
// main; the objects stay unreachable in .git until git gc.
type RefusedError struct {
	Commit plumbing.Hash
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

// verifyIncoming checks every commit reachable from tip that head's
// history does not already hold: each commit object, each tree it names
// (every tree object once per call) and the size of each file that is new
// in it. It returns whether tip is already in head's history (nothing to
// merge) and whether head is in tip's (a fast-forward), which the walk
// learns on the way, so Merge needs no ancestry walks of its own.
//
// Trusted is head's history: commits made here, and commits that passed
// this check when they were merged. Remote-tracking refs are not trusted:
// they are set by fetches whose content may have been refused.
func (g *Repo) verifyIncoming(ctx context.Context, head, tip plumbing.Hash) (upToDate, fastForward bool, err error) {
	ours := map[plumbing.Hash]bool{}
	if !head.IsZero() {
		if err := g.ancestors(ctx, head, ours); err != nil {
			return false, false, err
		}
	}
	if ours[tip] {
		return true, false, nil
	}
	v := &verifier{g: g, trees: map[plumbing.Hash]bool{}, blobs: map[plumbing.Hash]bool{}}
	seen := map[plumbing.Hash]bool{tip: true}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return false, false, err
		}
		c := queue[0]
		queue = queue[1:]
		tree, parents, err := v.commit(c)
		if err != nil {
			return false, false, err
		}
		if err := v.tree(ctx, c, tree, "", 1); err != nil {
			return false, false, err
		}
		if v.files > MaxTreeFiles {
			return false, false, &RefusedError{Commit: c, Reason: fmt.Sprintf("its tree lists more than %d files", MaxTreeFiles)}
		}
		v.files = 0
		for _, p := range parents {
			if p == head {
				fastForward = true
			}
			if ours[p] || seen[p] {
				continue
			}
			seen[p] = true
			queue = append(queue, p)
		}
	}
	return false, fastForward, nil
}

// ancestors adds h and every commit reachable from it to set.
func (g *Repo) ancestors(ctx context.Context, h plumbing.Hash, set map[plumbing.Hash]bool) error {
	set[h] = true
	stack := []plumbing.Hash{h}
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		data, err := g.rawObject(c, plumbing.CommitObject, maxCommitSize)
		if err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		_, parents, err := parseCommitHeader(data)
		if err != nil {
			return fmt.Errorf("read history: commit %s: %w", c, err)
		}
		for _, p := range parents {
			if !set[p] {
				set[p] = true
				stack = append(stack, p)
			}
		}
	}
	return nil
}

// rawObject reads an object's content, refusing one of another type or
// larger than limit before reading it.
func (g *Repo) rawObject(h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	obj, err := g.r.Storer.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	if obj.Type() != t {
		return nil, fmt.Errorf("object %s is a %s, not a %s", h, obj.Type(), t)
	}
	if obj.Size() > limit {
		return nil, fmt.Errorf("%s %s is %d bytes, over the %d byte limit", t, h, obj.Size(), limit)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s is over the %d byte limit", t, h, limit)
	}
	return data, nil
}

// verifier holds what one verifyIncoming call has already checked.
type verifier struct {
	g     *Repo
	trees map[plumbing.Hash]bool // checked tree objects
	blobs map[plumbing.Hash]bool // blobs whose size was checked
	files int                    // files of the commit being checked
	// filesIn counts the files under each checked tree, so a tree met
	// again adds its count without being read again.
	filesIn map[plumbing.Hash]int
}

// commit checks one commit object the way git fsck does (header order,
// hashes, identities) and returns its tree and parents.
func (v *verifier) commit(c plumbing.Hash) (plumbing.Hash, []plumbing.Hash, error) {
	data, err := v.g.rawObject(c, plumbing.CommitObject, maxCommitSize)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return plumbing.ZeroHash, nil, &RefusedError{Commit: c, Reason: "the hub did not send it or one of its objects"}
		}
		return plumbing.ZeroHash, nil, &RefusedError{Commit: c, Reason: err.Error()}
	}
	tree, parents, err := parseCommitHeader(data)
	if err != nil {
		return plumbing.ZeroHash, nil, &RefusedError{Commit: c, Reason: err.Error()}
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

// tree checks the tree object h, found at dir (depth = components of a
// file directly in it), and every tree below it.
func (v *verifier) tree(ctx context.Context, c, h plumbing.Hash, dir string, depth int) error {
	if v.trees[h] {
		v.files += v.filesIn[h]
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	refuse := func(path, reason string) error { return &RefusedError{Commit: c, Path: path, Reason: reason} }
	if depth > MaxPathDepth {
		return refuse(strings.TrimSuffix(dir, "/"), fmt.Sprintf("directories nest deeper than a store needs (at most %d path components)", MaxPathDepth))
	}
	// A tree of MaxTreeFiles entries of maximal names is about 140 MB;
	// a store's largest real tree (one type directory) is a few MB.
	data, err := v.g.rawObject(h, plumbing.TreeObject, int64(MaxTreeFiles)*64)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return refuse(dir, "a tree the hub did not send")
		}
		return refuse(dir, err.Error())
	}
	before := v.files
	folded := map[string]string{}
	var prev string
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return refuse(dir, "malformed tree")
		}
		mode := string(data[:sp])
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return refuse(dir, "malformed tree")
		}
		name := string(data[:nul])
		var eh plumbing.Hash
		copy(eh[:], data[nul+1:nul+21])
		data = data[nul+21:]
		p := dir + name
		if why := badName(name); why != "" {
			return refuse(p, why)
		}
		isDir := mode == modeDir
		switch mode {
		case modeDir, modeFile, modeExec:
		case "120000":
			return refuse(p, "a symlink (a store holds regular files only)")
		case "160000":
			return refuse(p, "a submodule (a store holds regular files only)")
		default:
			return refuse(p, fmt.Sprintf("file mode %s (a store holds directories and regular files only)", mode))
		}
		// git sorts a directory as its name followed by '/'; fsck refuses
		// a tree out of that order and any name given twice.
		key := name
		if isDir {
			key += "/"
		}
		if prev != "" && key <= prev {
			if key == prev {
				return refuse(p, "a name given twice in one directory")
			}
			return refuse(p, "tree entries out of order")
		}
		prev = key
		f := foldName(name)
		if other, dup := folded[f]; dup {
			if other == name {
				return refuse(p, "a name given twice in one directory")
			}
			return refuse(p, fmt.Sprintf("its name differs only in case from %q (both cannot exist on macOS and Windows)", other))
		}
		folded[f] = name
		if isDir {
			if err := v.tree(ctx, c, eh, p+"/", depth+1); err != nil {
				return err
			}
			continue
		}
		v.files++
		if v.files > MaxTreeFiles {
			return &RefusedError{Commit: c, Reason: fmt.Sprintf("its tree lists more than %d files", MaxTreeFiles)}
		}
		if !v.blobs[eh] {
			if err := v.blobSize(c, eh, p); err != nil {
				return err
			}
			v.blobs[eh] = true
		}
	}
	v.trees[h] = true
	if v.filesIn == nil {
		v.filesIn = map[plumbing.Hash]int{}
	}
	v.filesIn[h] = v.files - before
	return nil
}

// blobSize refuses a file over MaxBlobSize by its header, without
// inflating it.
func (v *verifier) blobSize(c, h plumbing.Hash, p string) error {
	obj, err := v.g.r.Storer.EncodedObject(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return &RefusedError{Commit: c, Path: p, Reason: "a file the hub did not send"}
	}
	if err != nil {
		return &RefusedError{Commit: c, Path: p, Reason: err.Error()}
	}
	if obj.Type() != plumbing.BlobObject {
		return &RefusedError{Commit: c, Path: p, Reason: fmt.Sprintf("a %s where a file belongs", obj.Type())}
	}
	size := obj.Size()
	if size > MaxBlobSize {
		return &RefusedError{Commit: c, Path: p, Reason: fmt.Sprintf("a file of %d bytes (a note is at most %d)", size, MaxBlobSize)}
	}
	return nil
}

// badName says why a tree entry's name must never reach a worktree, or
// "" if it may. These are fsck's rules (with core.protectNTFS and
// core.protectHFS, which git turns on for every checkout that may reach
// such a machine) plus the files that change how git writes others.
func badName(name string) string {
	switch {
	case name == "":
		return "an empty name"
	case name == "." || name == "..":
		return "a name that is . or .."
	case len(name) > MaxNameBytes:
		return fmt.Sprintf("a name over %d bytes", MaxNameBytes)
	case strings.ContainsAny(name, "/\\"):
		return "a name with a path separator"
	case strings.ContainsRune(name, ':'):
		return "a name with ':' (an NTFS stream)"
	case !utf8.ValidString(name):
		return "a name that is not UTF-8"
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return "a name with a control character"
		}
	}
	switch base := dotGitBase(name); base {
	case ".git":
		return "a .git entry (it would take over the repository)"
	case ".gitmodules", ".gitattributes":
		return "a " + base + " file (it would change how files are written)"
	}
	return ""
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

// foldName is the name as a case-insensitive file system compares it.
func foldName(name string) string { return strings.ToLower(name) }

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
		f, err := os.Open(filepath.Join(dir, name+".idx"))
		if err != nil {
			continue
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(idx)
		f.Close()
		if err != nil {
			continue
		}
		if ok, _ := idx.Contains(tip); !ok {
			continue
		}
		for _, ext := range []string{".keep", ".idx", ".rev", ".pack"} {
			os.Remove(filepath.Join(dir, name+ext))
		}
		removed = true
	}
	if fs, ok := g.r.Storer.(*filesystem.Storage); ok && removed {
		fs.Reindex()
	}
}
