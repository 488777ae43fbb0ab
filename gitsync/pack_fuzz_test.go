package gitsync

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// realPack is a pack git made of a small repository with a few
// versions of its notes (so it has deltas, ofs and, with refDeltas, ref).
func realPack(t testing.TB, refDeltas bool) []byte {
	dir := t.TempDir()
	testutil.Git(t, dir, "init", "-q", "-b", "main")
	for i := 0; i < 3; i++ {
		for _, n := range []string{"a.md", "b.md"} {
			os.WriteFile(filepath.Join(dir, n), bytes.Repeat([]byte("a line of a note that changes "+n+string(rune('0'+i))+"\n"), 40+i), 0o644)
		}
		testutil.Git(t, dir, "add", "-A")
		testutil.Git(t, dir, "commit", "-q", "-m", "v")
	}
	if refDeltas {
		return packObjects(t, dir)
	}
	return packObjects(t, dir, "--delta-base-offset")
}

// packObjects is the pack git makes of HEAD's history in dir.
func packObjects(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"pack-objects", "--stdout", "--revs", "-q"}, args...)...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader("HEAD\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzPackScanner: whatever the bytes, the scanner returns (no panic)
// and allocates a bounded amount, however large the counts and sizes
// the input claims; a real pack passes.
func FuzzPackScanner(f *testing.F) {
	for _, ref := range []bool{false, true} {
		p := realPack(f, ref)
		if _, err := scanPack(bytes.NewReader(p), io.Discard, defaultPackLimits(Bounds{})); err != nil {
			f.Fatalf("a real pack: %v", err)
		}
		f.Add(p)
		f.Add(p[:len(p)/2])
	}
	f.Add(append(packHeader(4e9), 0x30, 0x78, 0x9c))
	f.Add(append(append(packHeader(1), objectHeader(3, 1<<40)...), zeros(f, 1<<16)...))
	f.Add(append(append(packHeader(1), objectHeader(3, 100)...), zeros(f, 1<<16)...))
	lim := packLimits{bytes: 1 << 20, objects: 1000, blob: 64 << 10, tree: 256 << 10, commit: 16 << 10, inflated: 4 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var spool bytes.Buffer
		res, err := scanPack(bytes.NewReader(data), &spool, lim)
		runtime.ReadMemStats(&after)
		// Buffers, the zlib state, 9 bytes an object (at most 1000) and
		// the spool (the input itself): nothing by a claimed size.
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20+3*uint64(len(data)) {
			t.Fatalf("allocated %d bytes for %d bytes of input", d, len(data))
		}
		if err == nil && (res.objects > lim.objects || res.inflated > lim.inflated || res.bytes != int64(len(data))) {
			t.Fatalf("accepted %+v from %d bytes", res, len(data))
		}
		var be *BoundError
		if err != nil && !errors.As(err, &be) && !errors.Is(err, errMalformedPack) {
			t.Fatalf("an error neither a bound nor a malformed pack: %v", err)
		}
	})
}
