package gitsync

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Reading the history. Callers outside gitsync see commits, trees and
// blobs only through the types here, so go-git stays an implementation
// detail of this package (CONTRIBUTING.md's layering table, checked by
// layout_test.go).

// Hash names a git object (a commit, tree or blob) by its SHA-1. The zero
// Hash stands for no object: the empty tree, an absent file, no commit yet.
type Hash [20]byte

// ParseHash reads a full hexadecimal object name, as [Hash.String] writes
// it.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return Hash{}, fmt.Errorf("object name %q: want %d hexadecimal digits", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, fmt.Errorf("object name %q: %w", s, err)
	}
	return h, nil
}

// String is the hash in lowercase hexadecimal.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports the zero Hash: no object.
func (h Hash) IsZero() bool { return h == Hash{} }

// ErrNoObject marks an object the repository does not have: beyond a
// shallow clone's boundary, or a name from elsewhere.
var ErrNoObject = errors.New("no such object")

// Commit is what the history says about one commit.
type Commit struct {
	Hash    Hash
	Tree    Hash // the root tree
	Parents []Hash
	// Machine is the author's machine id: the author email without
	// "anamnesis@", or the whole email of a commit made by hand.
	Machine string
	// Time is the committer time, in the committer's own zone.
	Time    time.Time
	Message string
}

func commitValue(c *object.Commit) Commit {
	out := Commit{Hash: Hash(c.Hash), Tree: Hash(c.TreeHash), Machine: strings.TrimPrefix(c.Author.Email, "anamnesis@"),
		Time: c.Committer.When, Message: c.Message}
	if len(c.ParentHashes) > 0 {
		out.Parents = make([]Hash, len(c.ParentHashes))
		for i, p := range c.ParentHashes {
			out.Parents[i] = Hash(p)
		}
	}
	return out
}

// CommitAt reads commit h; a commit the repository lacks is an error
// matching [ErrNoObject].
func (g *Repo) CommitAt(h Hash) (Commit, error) {
	c, err := g.r.CommitObject(plumbing.Hash(h))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return Commit{}, fmt.Errorf("commit %s: %w", h, ErrNoObject)
	}
	if err != nil {
		return Commit{}, fmt.Errorf("commit %s: %w", h, err)
	}
	return commitValue(c), nil
}

// WalkLog calls fn with main's commits, newest first by committer time,
// at most n of them, until fn asks to stop. complete reports that nothing
// was left unread: the history ended, or fn stopped the walk. An empty
// repository is complete at once.
func (g *Repo) WalkLog(ctx context.Context, n int, fn func(Commit) (stop bool, err error)) (complete bool, err error) {
	return g.walkLog(ctx, n, func(c *object.Commit) (bool, error) { return fn(commitValue(c)) })
}

// walkLog is [Repo.WalkLog] over go-git's commits, for this package's
// own walks that need more of a commit than [Commit] carries.
func (g *Repo) walkLog(ctx context.Context, n int, fn func(*object.Commit) (stop bool, err error)) (complete bool, err error) {
	head, err := g.head()
	if err != nil || head.IsZero() {
		return err == nil, err
	}
	iter, err := g.r.Log(&git.LogOptions{From: head, Order: git.LogOrderCommitterTime})
	if err != nil {
		return false, fmt.Errorf("read history: %w", err)
	}
	defer iter.Close()
	for i := 0; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		c, err := iter.Next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read history: %w", err)
		}
		if i == n {
			return false, nil // one more than asked for: the walk was cut short
		}
		if stop, err := fn(c); err != nil || stop {
			return err == nil, err
		}
	}
	return false, nil
}

// ErrBlobTooLarge marks a blob larger than its reader asked for.
var ErrBlobTooLarge = errors.New("blob over the size asked for")

// ReadBlob reads blob h. A blob over limit bytes is refused by its
// header, before it is read (an error matching [ErrBlobTooLarge]): a
// reader gets the whole file or none of it, never a cut one. A blob the
// repository lacks is an error matching [ErrNoObject].
func (g *Repo) ReadBlob(h Hash, limit int64) ([]byte, error) {
	data, err := readObject(g.r.Storer, plumbing.Hash(h), plumbing.BlobObject, limit)
	var big *tooLargeError
	switch {
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return nil, fmt.Errorf("blob %s: %w", h, ErrNoObject)
	case errors.As(err, &big):
		return nil, fmt.Errorf("blob %s is %d bytes, over the %d asked for: %w", h, big.size, limit, ErrBlobTooLarge)
	case err != nil:
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	return data, nil
}

// Trees reads the trees of a repository for walks over many commits,
// keeping the trees it read last decoded: consecutive commits share most
// of their directories, and decoding a directory of thousands of notes
// is what such a walk spends its time on. A Trees is not safe for
// concurrent use; make one per walk with [Repo.Trees].
type Trees struct {
	g     *Repo
	cache map[plumbing.Hash]*object.Tree
}

// treesKept bounds the trees a [Trees] keeps: enough for a commit and its
// parents at the depth of memory/'s directories, little memory even when
// each is a directory of 10,000 notes.
const treesKept = 64

// Trees starts a walk over this repository's trees.
func (g *Repo) Trees() *Trees {
	return &Trees{g: g, cache: map[plumbing.Hash]*object.Tree{}}
}

var emptyTree = &object.Tree{}

func (t *Trees) tree(h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return emptyTree, nil
	}
	if tr := t.cache[h]; tr != nil {
		return tr, nil
	}
	tr, err := t.g.r.TreeObject(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("tree %s: %w", h, ErrNoObject)
	}
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	if len(t.cache) >= treesKept {
		// Forgetting all at once is as good as an LRU here: a walk moves
		// on and rarely comes back to a tree 64 reads ago.
		clear(t.cache)
	}
	t.cache[h] = tr
	return tr, nil
}

// BlobAt finds path's blob in root tree (zero when it is absent or a
// directory). Any other entry counts as a file, as in
// [Trees.ChangedFiles], so the two agree on what a version is.
func (t *Trees) BlobAt(root Hash, path string) (Hash, error) {
	h := plumbing.Hash(root)
	for {
		tr, err := t.tree(h)
		if err != nil {
			return Hash{}, err
		}
		name, rest, more := strings.Cut(path, "/")
		var found *object.TreeEntry
		for i := range tr.Entries {
			if tr.Entries[i].Name == name {
				found = &tr.Entries[i]
				break
			}
		}
		if found == nil {
			return Hash{}, nil
		}
		if !more {
			if found.Mode == filemode.Dir {
				return Hash{}, nil
			}
			return Hash(found.Hash), nil
		}
		if found.Mode != filemode.Dir {
			return Hash{}, nil
		}
		h, path = found.Hash, rest
	}
}

// ChangedFiles calls fn for each file whose blob differs between root
// trees from and to (zero: the empty tree; a zero blob: the file is
// absent on that side), in git's order. It descends only into subtrees
// whose hashes differ, so a commit costs the directories it touched. An
// error from fn ends the walk and is returned.
func (t *Trees) ChangedFiles(from, to Hash, fn func(path string, from, to Hash) error) error {
	return t.diff(plumbing.Hash(from), plumbing.Hash(to), "", fn)
}

func (t *Trees) diff(a, b plumbing.Hash, prefix string, fn func(path string, from, to Hash) error) error {
	if a == b {
		return nil
	}
	ta, err := t.tree(a)
	if err != nil {
		return err
	}
	tb, err := t.tree(b)
	if err != nil {
		return err
	}
	// Entries are in git's order (a directory sorts as if its name ended
	// in "/"), so one merge pass pairs them without a map: a commit's
	// cost is this pass over the directories it touched.
	ea, eb := ta.Entries, tb.Entries
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *object.TreeEntry
		switch c := compareEntries(ea, i, eb, j); {
		case c < 0:
			x, i = &ea[i], i+1
		case c > 0:
			y, j = &eb[j], j+1
		default:
			x, y, i, j = &ea[i], &eb[j], i+1, j+1
		}
		if err := t.pair(prefix, x, y, fn); err != nil {
			return err
		}
	}
	return nil
}

// compareEntries orders a[i] and b[j] as git sorts a tree, a side that
// has ended coming last.
func compareEntries(a []object.TreeEntry, i int, b []object.TreeEntry, j int) int {
	switch {
	case i == len(a):
		return 1
	case j == len(b):
		return -1
	}
	return compareTreeKeys(a[i].Name, a[i].Mode == filemode.Dir, b[j].Name, b[j].Mode == filemode.Dir)
}

// pair reports the files that differ under one name of the two trees:
// x is its entry in the first, y in the second (nil where absent).
func (t *Trees) pair(prefix string, x, y *object.TreeEntry, fn func(path string, from, to Hash) error) error {
	xd, xf := splitEntry(x)
	yd, yf := splitEntry(y)
	if xd == yd && xf == yf {
		return nil
	}
	name := x
	if name == nil {
		name = y
	}
	p := prefix + name.Name
	if !xd.IsZero() || !yd.IsZero() {
		if err := t.diff(xd, yd, p+"/", fn); err != nil {
			return err
		}
	}
	if xf != yf {
		return fn(p, Hash(xf), Hash(yf))
	}
	return nil
}

// splitEntry is an entry's subtree or, for anything else, its blob
// (zero for the other, and both for no entry).
func splitEntry(e *object.TreeEntry) (dir, file plumbing.Hash) {
	switch {
	case e == nil:
	case e.Mode == filemode.Dir:
		dir = e.Hash
	default:
		file = e.Hash
	}
	return dir, file
}
