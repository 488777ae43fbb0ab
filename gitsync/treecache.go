package gitsync

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// treeCacheBytes bounds the raw trees a Repo keeps. A pull into a store
// of 100,000 notes reads each changed directory's two versions (a third
// of the notes in one directory: a 2 MB tree) to verify what came and
// again to check it out; the cache holds both versions of the three
// big directories and the root, so the second diff inflates nothing.
const treeCacheBytes = 24 << 20

// treeCache keeps the content of recently read tree objects (a Repo's;
// a pack's indexer keeps its delta bases, of any type, in one of its
// own). An object's
// content never changes under its hash, so an entry is never stale; the
// cache only bounds how many bytes it holds, dropping the oldest first.
// Safe for concurrent use (a Dirty check runs beside a commit).
type treeCache struct {
	limit int // bytes kept; 0 is treeCacheBytes
	mu    sync.Mutex
	trees map[plumbing.Hash][]byte
	order []plumbing.Hash // insertion order, oldest first
	bytes int
}

// get returns tree h's content if it is kept. Callers must not modify it.
func (c *treeCache) get(h plumbing.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.trees[h]
	return data, ok
}

// put keeps tree h's content, dropping the oldest trees past the bound.
// A tree larger than the whole bound is not kept.
func (c *treeCache) put(h plumbing.Hash, data []byte) {
	limit := c.limit
	if limit == 0 {
		limit = treeCacheBytes
	}
	if len(data) > limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.trees[h]; ok {
		return
	}
	if c.trees == nil {
		c.trees = map[plumbing.Hash][]byte{}
	}
	for c.bytes+len(data) > limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.trees[old])
		delete(c.trees, old)
	}
	c.trees[h] = data
	c.order = append(c.order, h)
	c.bytes += len(data)
}
