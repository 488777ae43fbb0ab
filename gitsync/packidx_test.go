package gitsync

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackIdxFindsWhatGitLists: for an index git wrote, every object
// git verify-pack lists is found at the offset git gives, and a name
// that is not there is not found.
func TestPackIdxFindsWhatGitLists(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.pack"), historyPack(t, 10, "--delta-base-offset"), 0o644)
	testutil.Git(t, dir, "index-pack", "p.pack")
	x, err := readPackIdx(filepath.Join(dir, "p.idx"))
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, l := range strings.Split(testutil.Git(t, dir, "verify-pack", "-v", "p.idx"), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		var want int64
		fmt.Sscan(f[4], &want)
		got, ok := x.find(plumbing.NewHash(f[0]))
		if !ok || got != want {
			t.Errorf("%s: found %v at %d, git says %d", f[0], ok, got, want)
		}
		listed++
	}
	if listed != x.n || listed < 100 {
		t.Errorf("git lists %d objects, the index holds %d", listed, x.n)
	}
	for _, h := range []string{strings.Repeat("0", 40), strings.Repeat("f", 40), "7" + strings.Repeat("3", 39)} {
		if _, ok := x.find(plumbing.NewHash(h)); ok {
			t.Errorf("found %s, which is not in the pack", h)
		}
	}
}

// TestPackIdxLargeOffsets: offsets past 2 GiB go through the index's
// table of 64-bit offsets, written and read back.
func TestPackIdxLargeOffsets(t *testing.T) {
	ix := &idxEntries{}
	for i, off := range []int64{12, 1<<31 - 1, 1 << 31, 5 << 32, 1 << 40} {
		ix.names = append(ix.names, plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)}))
		ix.offs = append(ix.offs, off)
		ix.crcs = append(ix.crcs, uint32(i))
	}
	var buf bytes.Buffer
	if err := ix.writeIndex(&buf, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	x, err := parsePackIdx(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range ix.names {
		if got, ok := x.find(h); !ok || got != ix.offs[i] {
			t.Errorf("object %d: found %v at %d, want %d", i, ok, got, ix.offs[i])
		}
	}
}

// FuzzPackIdx: whatever the bytes, reading them as an index returns (no
// panic), and so does every lookup in one that was accepted.
func FuzzPackIdx(f *testing.F) {
	ix := &idxEntries{names: []plumbing.Hash{{1}, {2, 3}}, offs: []int64{12, 1 << 33}, crcs: []uint32{1, 2}}
	var buf bytes.Buffer
	ix.writeIndex(&buf, plumbing.ZeroHash)
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:1100])
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := parsePackIdx(data)
		if err != nil {
			return
		}
		for i := 0; i < x.n && i < 50; i++ {
			var h plumbing.Hash
			copy(h[:], x.names[20*i:])
			x.find(h)
		}
		x.find(plumbing.Hash{0xff})
	})
}
