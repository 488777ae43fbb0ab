package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A developer profiling a command gets both profiles written, and a
// profile path that cannot be created does not stop the command.
func TestProfilesAreWritten(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	stop := startProfile(cpu, mem)
	sink := make([][]byte, 0, 64)
	for range 64 {
		sink = append(sink, make([]byte, 64<<10))
	}
	_ = sink
	stop()
	for _, p := range []string{cpu, mem} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v (size %v)", p, err, fi)
		}
	}
	startProfile(filepath.Join(dir, "missing", "cpu.prof"), "")() // reported, not fatal
}
