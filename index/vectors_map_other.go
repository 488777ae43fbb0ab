//go:build !unix

package index

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads size bytes of f: where there is no syscall.Mmap (Windows)
// the vector file is read whole, which costs a copy but stays correct
// (and Windows could not rename a new file over a mapped one anyway).
func mapFile(f *os.File, size int) (data []byte, release func(), err error) {
	data = make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return data, func() {}, nil
}
