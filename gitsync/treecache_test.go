package gitsync

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// The cache holds what was put until its bound, then drops the oldest
// trees first; a tree over the whole bound is not kept.
func TestTreeCacheBound(t *testing.T) {
	var c treeCache
	h := func(i int) plumbing.Hash { return plumbing.ComputeHash(plumbing.TreeObject, []byte{byte(i)}) }
	quarter := make([]byte, treeCacheBytes/4)
	for i := range 4 {
		c.put(h(i), quarter)
	}
	for i := range 4 {
		if _, ok := c.get(h(i)); !ok {
			t.Fatalf("tree %d dropped below the bound", i)
		}
	}
	c.put(h(4), quarter)
	if _, ok := c.get(h(0)); ok {
		t.Error("the oldest tree kept past the bound")
	}
	if _, ok := c.get(h(4)); !ok {
		t.Error("the newest tree not kept")
	}
	if c.bytes > treeCacheBytes {
		t.Errorf("%d bytes kept, bound %d", c.bytes, treeCacheBytes)
	}
	c.put(h(5), make([]byte, treeCacheBytes+1))
	if _, ok := c.get(h(5)); ok {
		t.Error("a tree over the whole bound kept")
	}
}
