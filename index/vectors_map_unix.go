//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only: the pages come from the page
// cache as the scan touches them, shared by every process searching the
// same index, instead of being copied into each one's heap. release
// unmaps them; the caller must not touch the bytes after.
func mapFile(f *os.File, size int) (data []byte, release func(), err error) {
	if size == 0 {
		return nil, func() {}, nil
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
