package gitsync

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectsCache bounds what an [objects] reader keeps: the bases of
// deltas it resolved, not the objects read (each blob of a checkout is
// read once). go-git's default, 96 MB, filled to the brim by a first
// sync of 100,000 notes and stayed in the peak RSS. go-git's own cache
// serves only loose objects now, each read once.
const objectsCache = 8 << 20

// objects reads the objects of one merge or checkout. It reads the
// packs itself, their indexes read once and their files kept open until
// Close: the Repo's storage opens the pack file, resolving its path a
// component at a time, on every object it reads from a pack (half of
// the CPU of reading a blob), and keeping them open for the Repo's life
// would hold files a gc or a refused fetch must remove (Windows cannot
// remove an open file). Loose objects, what the Repo writes meanwhile
// among them, are read from disk through a go-git storage of its own.
type objects struct {
	st     *filesystem.Storage
	gitDir string
	// packs are the repository's pack indexes, read on first use by
	// size and readOrder.
	packs  []packIndex
	loaded bool
	// heads reads entries' headers for their sizes, ents their data
	// (ents's buffer is big: a pread per 512 bytes of a 2 MB tree was not).
	heads, ents packEntries
	// trees is the Repo's cache of raw trees, shared: what a merge's
	// verification reads, its checkout reads again.
	trees     *treeCache
	treeReads *atomic.Int32 // the Repo's count of trees read from the store
	// bases keeps what delta chains made lately, by where they lie:
	// read in pack order (readOrder), a delta's base was made just before.
	bases deltaBases
}

// deltaBases keeps objects made from delta chains, at most
// objectsCache bytes, oldest out first.
type deltaBases struct {
	m     map[packAt]deltaBase
	order []packAt
	bytes int
}

type deltaBase struct {
	data []byte
	typ  plumbing.ObjectType
}

func (c *deltaBases) get(at packAt) (deltaBase, bool) {
	b, ok := c.m[at]
	return b, ok
}

func (c *deltaBases) put(at packAt, data []byte, typ plumbing.ObjectType) {
	if len(data) > objectsCache {
		return
	}
	if _, ok := c.m[at]; ok {
		return
	}
	if c.m == nil {
		c.m = map[packAt]deltaBase{}
	}
	for c.bytes+len(data) > objectsCache && len(c.order) > 0 {
		c.bytes -= len(c.m[c.order[0]].data)
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[at] = deltaBase{data, typ}
	c.order = append(c.order, at)
	c.bytes += len(data)
}

// packIndex is one pack file, open, and its index.
type packIndex struct {
	idx *packIdx
	f   *os.File
}

// openObjects starts reading objects; the caller closes it.
func (g *Repo) openObjects() *objects {
	return &objects{gitDir: g.gitDir, trees: &g.trees, treeReads: &g.treeReads,
		heads: packEntries{bufSize: 512}, ents: packEntries{bufSize: 64 << 10}, st: filesystem.NewStorageWithOptions(osfs.New(g.gitDir), cache.NewObjectLRU(cache.MiByte),
			filesystem.Options{KeepDescriptors: true})}
}

// Close releases the pack files.
func (o *objects) Close() {
	_ = o.st.Close()
	for _, p := range o.packs {
		p.f.Close()
	}
	o.packs = nil
}

// loadPacks reads the pack indexes once. A pack it cannot read is left
// out: its objects are then found (or not) through go-git, as before.
func (o *objects) loadPacks() {
	if o.loaded {
		return
	}
	o.loaded = true
	names, err := o.st.ObjectPacks()
	if err != nil {
		return
	}
	dir := filepath.Join(o.gitDir, "objects", "pack")
	for _, n := range names {
		base := filepath.Join(dir, "pack-"+n.String())
		idx, err := readPackIdx(base + ".idx")
		if err != nil {
			continue
		}
		f, err := os.Open(base + ".pack")
		if err != nil {
			continue
		}
		o.packs = append(o.packs, packIndex{idx: idx, f: f})
	}
}

// locate finds h in the packs: which one and at what offset.
func (o *objects) locate(h plumbing.Hash) (int, int64, bool) {
	o.loadPacks()
	for i, p := range o.packs {
		if off, ok := p.idx.find(h); ok {
			return i, off, true
		}
	}
	return 0, 0, false
}

// has reports whether h is in the packs or loose.
func (o *objects) has(h plumbing.Hash) bool {
	if _, _, ok := o.locate(h); ok {
		return true
	}
	return o.loose(h)
}

// readOrder sorts paths by where their blobs are: loose ones first, then
// by pack and offset. Read in that order, a delta's base was read just
// before (git writes bases first and near), so a small cache serves
// the chains; read by path, a checkout of 10,000 notes spent most of
// its reads resolving the same chains again.
func (o *objects) readOrder(paths []string, blob func(string) plumbing.Hash) {
	type at struct {
		pack int
		off  int64
	}
	where := make(map[string]at, len(paths))
	for _, p := range paths {
		if h := blob(p); !h.IsZero() {
			if i, off, ok := o.locate(h); ok {
				where[p] = at{i + 1, off}
			}
		}
	}
	slices.SortStableFunc(paths, func(a, b string) int {
		wa, wb := where[a], where[b]
		if c := cmp.Compare(wa.pack, wb.pack); c != 0 {
			return c
		}
		return cmp.Compare(wa.off, wb.off)
	})
}

// raw reads an object's content, refusing one of another type or larger
// than limit before reading it.
func (o *objects) raw(h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	if t != plumbing.TreeObject || o.trees == nil {
		return o.read(h, t, limit)
	}
	if data, ok := o.trees.get(h); ok {
		if int64(len(data)) > limit {
			return nil, &tooLargeError{what: t, h: h, size: int64(len(data)), limit: limit}
		}
		return data, nil
	}
	o.treeReads.Add(1)
	data, err := o.read(h, t, limit)
	if err == nil {
		o.trees.put(h, data)
	}
	return data, err
}

// read reads an object: one in a pack by our own reader, a loose one
// through go-git (which never needs the packs' indexes for it).
func (o *objects) read(h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	// A commit of ours is loose until a gc: one stat, and the pack
	// indexes are not read for it.
	if t == plumbing.CommitObject && !o.loaded && o.loose(h) {
		return readObject(o.st, h, t, limit)
	}
	if i, off, ok := o.locate(h); ok {
		return o.packed(i, off, h, t, limit)
	}
	return readObject(o.st, h, t, limit)
}

// commit reads commit h's tree and parents (its header checked as
// parseCommitHeader does).
func (o *objects) commit(h plumbing.Hash) (plumbing.Hash, []plumbing.Hash, error) {
	data, err := o.raw(h, plumbing.CommitObject, MaxCommitBytes)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	tree, parents, err := parseCommitHeader(data)
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return tree, parents, nil
}

// parents reads commit h's parents.
func (o *objects) parents(h plumbing.Hash) ([]plumbing.Hash, error) {
	_, ps, err := o.commit(h)
	return ps, err
}

// loose reports whether h is a loose object.
func (o *objects) loose(h plumbing.Hash) bool {
	hex := h.String()
	_, err := os.Lstat(filepath.Join(o.gitDir, "objects", hex[:2], hex[2:]))
	return err == nil
}

// maxDeltaChain bounds a delta chain in the packs (git's default depth is
// 50, --aggressive 250); past it the packs are not git's.
const maxDeltaChain = 10000

// packAt is where an object lies: pack i, offset off.
type packAt struct {
	pack int
	off  int64
}

// packed reads the object at off of pack i: a whole object straight into
// a buffer of its header's size; a delta made from its base, the chain
// walked up to a whole object (or one made lately) and applied down.
// Type and size are checked against t and limit before anything is
// inflated (a delta's made size from its own header), and each stream
// must end exactly at its header's size. go-git read deltas into a
// buffer grown piece by piece and copied again, and opened every pack's
// index a second time to find bases.
func (o *objects) packed(i int, off int64, h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	var chain []packAt
	at := packAt{i, off}
	var data []byte
	for {
		if d, ok := o.bases.get(at); ok {
			data = d.data
			if d.typ != t {
				return nil, fmt.Errorf("object %s is a %s, not a %s", h, d.typ, t)
			}
			if len(chain) == 0 && int64(len(data)) > limit {
				return nil, &tooLargeError{what: t, h: h, size: int64(len(data)), limit: limit}
			}
			break
		}
		e, base, err := o.packedHeader(at)
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if !e.typ.IsDelta() {
			if e.typ != t {
				return nil, fmt.Errorf("object %s is a %s, not a %s", h, e.typ, t)
			}
			if e.size > limit {
				return nil, &tooLargeError{what: t, h: h, size: e.size, limit: limit}
			}
			if data, err = o.ents.data(e.size); err != nil {
				return nil, fmt.Errorf("read %s %s: %w", t, h, err)
			}
			break
		}
		if len(chain) == maxDeltaChain {
			return nil, fmt.Errorf("read object %s: a delta chain over %d long", h, maxDeltaChain)
		}
		chain = append(chain, at)
		at = base
	}
	if len(chain) > 0 {
		o.bases.put(at, data, t)
	}
	for k := len(chain) - 1; k >= 0; k-- {
		e, _, err := o.packedHeader(chain[k])
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if e.size > 2*limit+1024 {
			return nil, &tooLargeError{what: t, h: h, size: e.size, limit: limit}
		}
		delta, err := o.ents.data(e.size)
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", t, h, err)
		}
		if made, err := deltaTargetSize(delta); err != nil || made > limit {
			if err != nil {
				return nil, fmt.Errorf("read object %s: %w", h, err)
			}
			return nil, &tooLargeError{what: t, h: h, size: made, limit: limit}
		}
		if data, err = applyDelta(data, delta, limit); err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if k > 0 {
			o.bases.put(chain[k], data, t)
		}
	}
	return data, nil
}

// packedHeader reads the header of the entry at at, leaving o.ents at
// its data, and where a delta's base lies.
func (o *objects) packedHeader(at packAt) (packEntry, packAt, error) {
	e, err := o.ents.header(o.packs[at.pack].f, at.off)
	if err != nil {
		return e, packAt{}, err
	}
	switch e.typ {
	case plumbing.OFSDeltaObject:
		return e, packAt{at.pack, e.base}, nil
	case plumbing.REFDeltaObject:
		i, off, ok := o.locate(e.ref)
		if !ok {
			return e, packAt{}, fmt.Errorf("a delta's base %s is in no pack", e.ref)
		}
		return e, packAt{i, off}, nil
	}
	return e, packAt{}, nil
}

// readObject reads object h from st, refusing one of another type or
// larger than limit before reading it.
func readObject(st storer.EncodedObjectStorer, h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	obj, err := st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	if obj.Type() != t {
		return nil, fmt.Errorf("object %s is a %s, not a %s", h, obj.Type(), t)
	}
	if obj.Size() > limit {
		return nil, &tooLargeError{what: t, h: h, size: obj.Size(), limit: limit}
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer rd.Close()
	// The header's size, bounded above, is what is read: a stream that
	// ends before it or goes on after it is not the object it claims.
	data := make([]byte, obj.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	var one [1]byte
	if n, _ := rd.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%s %s is longer than its header says", t, h)
	}
	return data, nil
}

// tooLargeError is an object over the size its reader allows.
type tooLargeError struct {
	what        plumbing.ObjectType
	h           plumbing.Hash
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s %s is %d bytes, over the %d byte limit", e.what, e.h, e.size, e.limit)
}

// blob reads a file's content, at most MaxBlobBytes.
func (o *objects) blob(h plumbing.Hash) ([]byte, error) {
	return o.raw(h, plumbing.BlobObject, MaxBlobBytes)
}

// size is an object's size from its header, nothing inflated but the
// first bytes of a delta (which say the size of what it makes).
// go-git's EncodedObjectSize inflated a packed delta whole.
func (o *objects) size(h plumbing.Hash) (int64, error) {
	if i, off, ok := o.locate(h); ok {
		return o.packedSize(o.packs[i].f, off)
	}
	return o.st.EncodedObjectSize(h)
}

// packedSize reads the size of the object at off of pack f.
func (o *objects) packedSize(f *os.File, off int64) (int64, error) {
	e, err := o.heads.header(f, off)
	if err != nil {
		return 0, fmt.Errorf("read pack object header: %w", err)
	}
	if !e.typ.IsDelta() {
		return e.size, nil
	}
	var first [2 * binary.MaxVarintLen64]byte
	n, err := o.heads.first(first[:min(e.size, int64(len(first)))])
	if err != nil {
		return 0, fmt.Errorf("read delta header: %w", err)
	}
	return deltaTargetSize(first[:n])
}

// checkBlobSize refuses the file at p of commit c when its blob is over
// MaxBlobBytes, judged by the object's header: nothing is inflated.
// Called for each file a checkout or merge is about to read, before
// anything is written.
func (o *objects) checkBlobSize(c plumbing.Hash, p string, h plumbing.Hash) error {
	size, err := o.size(h)
	switch {
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return &RefusedError{Commit: Hash(c), Path: p, Reason: "a file the hub did not send"}
	case err != nil:
		return fmt.Errorf("read object %s: %w", h, err)
	case size > MaxBlobBytes:
		return &RefusedError{Commit: Hash(c), Path: p, Reason: fmt.Sprintf("a file of %d bytes (a note is at most %d)", size, MaxBlobBytes)}
	}
	return nil
}
