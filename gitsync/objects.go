package gitsync

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectsCache is the object cache of an [objects] reader: the bases of
// deltas being resolved, not the objects read (each blob of a checkout
// is read once). go-git's default, 96 MB, filled to the brim by a first
// sync of 100,000 notes and stayed in the peak RSS.
const objectsCache = 8 * cache.MiByte

// objects reads the objects of one merge or checkout. It is a storage
// of its own over the repository's .git that keeps pack files open
// until Close: the Repo's storage opens the pack file, resolving its
// path a component at a time, on every object it reads from a pack
// (half of the CPU of reading a blob), and keeping them open for the
// Repo's life would hold files a gc or a refused fetch must remove
// (Windows cannot remove an open file). What the Repo writes meanwhile
// (loose objects) is read from disk as it is found.
type objects struct {
	st *filesystem.Storage
}

// openObjects starts reading objects; the caller closes it.
func (g *Repo) openObjects() *objects {
	return &objects{st: filesystem.NewStorageWithOptions(osfs.New(g.gitDir), cache.NewObjectLRU(objectsCache),
		filesystem.Options{KeepDescriptors: true})}
}

// Close releases the pack files.
func (o *objects) Close() { _ = o.st.Close() }

// raw reads an object's content, refusing one of another type or larger
// than limit before reading it.
func (o *objects) raw(h plumbing.Hash, t plumbing.ObjectType, limit int64) ([]byte, error) {
	return readObject(o.st, h, t, limit)
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
		return nil, fmt.Errorf("%s %s is %d bytes, over the %d byte limit", t, h, obj.Size(), limit)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer rd.Close()
	buf := bytesWriter{make([]byte, 0, obj.Size())} // at most limit: checked above
	if _, err := io.Copy(&buf, io.LimitReader(rd, limit+1)); err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	if int64(len(buf.b)) > limit {
		return nil, fmt.Errorf("%s %s is over the %d byte limit", t, h, limit)
	}
	return buf.b, nil
}

// bytesWriter appends to a slice sized beforehand (io.ReadAll grows its
// buffer from 512 bytes, copying each time).
type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// blob reads a file's content, at most MaxBlobBytes.
func (o *objects) blob(h plumbing.Hash) ([]byte, error) {
	return o.raw(h, plumbing.BlobObject, MaxBlobBytes)
}

// size is an object's size from its header (a packed delta's from the
// delta's).
func (o *objects) size(h plumbing.Hash) (int64, error) {
	return o.st.EncodedObjectSize(h)
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
