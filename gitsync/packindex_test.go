package gitsync

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
	"github.com/go-git/go-git/v5/plumbing"
)

// indexed scans and indexes pack p the way a fetch does (the spool a
// file), with the base cache shrunk to cacheBytes when it is not zero,
// and returns the index it writes and the pack's checksum.
func indexed(t testing.TB, p []byte, lim packLimits, cacheBytes int) ([]byte, plumbing.Hash, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "spool")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix := newPackIndexer(f, lim, nil)
	if cacheBytes != 0 {
		ix.kept.limit = cacheBytes
	}
	if _, sum, err := indexPack(bytes.NewReader(p), f, lim, ix); err != nil {
		return nil, sum, err
	} else {
		var idx bytes.Buffer
		if err := ix.writeIndex(&idx, sum); err != nil {
			t.Fatal(err)
		}
		return idx.Bytes(), sum, nil
	}
}

// gitIndex is the index git index-pack writes for pack p, and the
// checksum it names the pack by.
func gitIndex(t testing.TB, p []byte) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	pack := filepath.Join(dir, "p.pack")
	if err := os.WriteFile(pack, p, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "index-pack", "-o", filepath.Join(dir, "p.idx"), pack)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git index-pack: %v\n%s", err, out)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "p.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return idx, strings.TrimSpace(string(out))
}

// historyPack is a pack of a repository with versions of a few notes
// and of a directory of many (so its trees are deltas of each other),
// packed by git with the given pack-objects arguments.
func historyPack(t testing.TB, versions int, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewSource(1))
	os.MkdirAll(filepath.Join(dir, "many"), 0o755)
	for v := 0; v < versions; v++ {
		for i := 0; i < 4; i++ {
			var b strings.Builder
			for l := 0; l < 30+v; l++ {
				fmt.Fprintf(&b, "line %d of note %d, version %d\n", l, i, v*rng.Intn(2))
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.md", i)), []byte(b.String()), 0o644)
		}
		for i := 0; i < 40; i++ {
			os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("note-%03d-%d.md", rng.Intn(400), v)), []byte(fmt.Sprint(i, v)), 0o644)
		}
		testutil.Git(t, dir, "add", "-A")
		testutil.Git(t, dir, "commit", "-q", "-m", fmt.Sprint("v", v))
	}
	return packObjects(t, dir, args...)
}

// TestPackIndexEqualsGits: the index we write for a pack is byte for
// byte the one git index-pack writes (names, CRC-32s, offsets, both
// checksums), for packs with ofs-deltas, ref-deltas, long chains of
// deltas of trees and of blobs, and with the base cache so small that
// every base is made again from the spool.
func TestPackIndexEqualsGits(t *testing.T) {
	packs := map[string][]byte{
		"ofs-deltas":       realPack(t, false),
		"ref-deltas":       realPack(t, true),
		"deep chains":      historyPack(t, 30, "--delta-base-offset", "--depth=250", "--window=50"),
		"deep ref chains":  historyPack(t, 30, "--depth=250", "--window=50"),
		"no deltas at all": historyPack(t, 3, "--window=0"),
	}
	lim := defaultPackLimits(Bounds{})
	for name, p := range packs {
		want, gitName := gitIndex(t, p)
		for _, cache := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/cache=%d", name, cache), func(t *testing.T) {
				got, sum, err := indexed(t, p, lim, cache)
				if err != nil {
					t.Fatal(err)
				}
				if sum.String() != gitName {
					t.Errorf("pack checksum %s, git names it %s", sum, gitName)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("index differs from git's: %d bytes, git's %d", len(got), len(want))
				}
			})
		}
	}
	// The packs really have what the cases say.
	for name, p := range packs {
		var deltas int
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "p.pack"), p, 0o644)
		testutil.Git(t, dir, "index-pack", "p.pack")
		out := testutil.Git(t, dir, "verify-pack", "-v", "p.idx")
		maxDepth := 0
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 7 && len(f[0]) == 40 {
				deltas++
				var d int
				fmt.Sscan(f[5], &d)
				maxDepth = max(maxDepth, d)
			}
		}
		switch {
		case name == "no deltas at all" && deltas != 0:
			t.Errorf("%s: %d deltas", name, deltas)
		case strings.HasPrefix(name, "deep") && maxDepth < 20:
			t.Errorf("%s: chains only %d deep", name, maxDepth)
		case name != "no deltas at all" && deltas == 0:
			t.Errorf("%s: no deltas", name)
		}
	}
}

// pack assembles a pack of the given raw objects, with its checksum.
func pack(objs ...[]byte) []byte {
	p := packHeader(uint32(len(objs)))
	for _, o := range objs {
		p = append(p, o...)
	}
	sum := sha1.Sum(p)
	return append(p, sum[:]...)
}

// whole is a pack object of type typ (1 commit, 2 tree, 3 blob).
func whole(typ byte, data []byte) []byte {
	return append(objectHeader(typ, int64(len(data))), deflate(data)...)
}

// ofsDelta is a delta object on the object dist bytes back.
func ofsDelta(dist int64, delta []byte) []byte {
	return append(append(objectHeader(6, int64(len(delta))), ofsDistance(dist)...), deflate(delta)...)
}

// copyAll is a delta that copies a base of n bytes whole, then inserts
// extra.
func copyAll(n int, extra []byte) []byte {
	d := binary.AppendUvarint(nil, uint64(n))
	d = binary.AppendUvarint(d, uint64(n+len(extra)))
	for off := 0; off < n; off += 0x10000 {
		sz := min(n-off, 0x10000)
		d = append(d, 0x80|0x0f|0x30, byte(off), byte(off>>8), byte(off>>16), byte(off>>24), byte(sz), byte(sz>>8))
	}
	return append(append(d, byte(len(extra))), extra...)
}

// TestIndexedPackRefusesWhatGitRefuses: a pack whose checksum does not
// sum its content, whose bytes were changed in transit, whose delta
// names a base not earlier in it, or whose delta copies outside its base
// is refused as malformed, as git index-pack refuses it; nothing is
// allocated by what the pack claims.
func TestIndexedPackRefusesWhatGitRefuses(t *testing.T) {
	lim := defaultPackLimits(Bounds{})
	blob := bytes.Repeat([]byte("a note line\n"), 100)
	good := pack(whole(3, blob), ofsDelta(int64(len(whole(3, blob))), copyAll(len(blob), []byte("more"))))
	if _, _, err := indexed(t, good, lim, 0); err != nil {
		t.Fatalf("the good pack: %v", err)
	}
	gitIndex(t, good)

	badSum := bytes.Clone(good)
	badSum[len(badSum)-1] ^= 1
	changed := whole(3, blob)
	changed[len(changed)-6] ^= 1 // in the deflated data, before zlib's own checksum
	inTransit := pack(changed)
	var missing plumbing.Hash
	missing[0] = 7
	refMissing := pack(whole(3, blob), append(append(objectHeader(7, 10), missing[:]...), deflate(copyAll(len(blob), nil)[:10])...))
	outside := binary.AppendUvarint(nil, uint64(len(blob)))
	outside = binary.AppendUvarint(outside, 10)
	outside = append(outside, 0x80|0x03|0x10, 0xff, 0x04, 10) // copy 10 bytes from 1279, past the 1200-byte base
	copyOutside := pack(whole(3, blob), ofsDelta(int64(len(whole(3, blob))), outside))
	wrongBase := pack(whole(3, blob), ofsDelta(int64(len(whole(3, blob))), copyAll(len(blob)-1, nil)))

	for name, c := range map[string]struct {
		p    []byte
		want string
	}{
		"checksum":           {badSum, "its checksum is"},
		"changed in transit": {inTransit, "object 1"},
		"base not in pack":   {refMissing, "object 2 is a delta of 07000000"},
		"copy outside base":  {copyOutside, "object 2: a delta copies outside its base"},
		"wrong base size":    {wrongBase, "object 2: a delta for a base of 1199 bytes applied to one of 1200"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := indexed(t, c.p, lim, 0)
			if !errors.Is(err, errMalformedPack) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a malformed pack: %q", err, c.want)
			}
			// git refuses it too.
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "p.pack"), c.p, 0o644)
			if out, err := exec.Command("git", "index-pack", filepath.Join(dir, "p.pack")).CombinedOutput(); err == nil {
				t.Errorf("git index-pack accepted it:\n%s", out)
			}
		})
	}
}

// TestDeltaChainWorkIsBounded: a pack whose deltas each need a base
// that has dropped out of the cache, behind a chain of deltas, makes
// each base again from the spool: the work is counted against the
// pack's inflated bound and refused past it, not left to grow with the
// square of the chain.
func TestDeltaChainWorkIsBounded(t *testing.T) {
	base := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	objs := [][]byte{whole(3, base)}
	n := len(base)
	for i := 0; i < 200; i++ {
		d := ofsDelta(int64(len(objs[len(objs)-1])), copyAll(n, []byte{byte(i)}))
		objs = append(objs, d)
		n++
	}
	p := pack(objs...)
	lim := defaultPackLimits(Bounds{})
	if _, _, err := indexed(t, p, lim, 0); err != nil {
		t.Fatalf("with the cache: %v", err)
	}
	// Without a cache each delta makes its whole chain again: 200²/2
	// bases of 64 KiB, 1.3 GB of work, over a bound of 256 MiB.
	lim.inflated = 256 << 20
	_, _, err := indexed(t, p, lim, 1)
	var be *BoundError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "the pack's deltas need over 256 MiB of their bases made again") {
		t.Fatalf("got %v, want the work bound", err)
	}
}

// FuzzApplyDelta: whatever the base and the delta, applying it returns
// (no panic), and what it makes is the size the delta declares, within
// the limit.
func FuzzApplyDelta(f *testing.F) {
	base := []byte("a base of some bytes, copied from and around")
	f.Add(base, copyAll(len(base), []byte("tail")))
	f.Add(base, []byte{byte(len(base)), 4, 0x91, 0, 4})
	f.Add([]byte{}, []byte{0, 3, 3, 'a', 'b', 'c'})
	f.Add(base, []byte{byte(len(base)), 0xff, 0xff, 0xff, 0xff, 0x0f, 0x80})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		const limit = 1 << 20
		out, err := applyDelta(base, delta, limit)
		if err != nil {
			return
		}
		_, n := binary.Uvarint(delta)
		target, _ := binary.Uvarint(delta[n:])
		if uint64(len(out)) != target || len(out) > limit {
			t.Fatalf("made %d bytes, declared %d", len(out), target)
		}
	})
}

// TestMalformedPackLeavesNothing: a hub that sends a pack whose checksum
// is wrong, or whose delta names a base it did not send, is refused in
// one line; nothing of it stays in .git/objects/pack (no pack, no index,
// no spool), the local note is committed, and once the hub is repaired
// the next sync works.
func TestMalformedPackLeavesNothing(t *testing.T) {
	blob := []byte("a note line\n")
	badSum := pack(whole(3, blob))
	badSum[len(badSum)-1] ^= 1
	var missing plumbing.Hash
	missing[0] = 7
	thin := pack(append(append(objectHeader(7, 6), missing[:]...), deflate(copyAll(3, nil))...))
	for name, c := range map[string]struct {
		p    []byte
		want string
	}{
		"checksum":         {badSum, "malformed pack: its checksum is"},
		"base not in pack": {thin, "malformed pack: object 1 is a delta of 0700000000000000000000000000000000000000, which is not earlier in the pack"},
	} {
		t.Run(name, func(t *testing.T) {
			h, a := startHostileHub(t)
			h.set(sendPack(c.p))
			b := newMachine(t, "b", h.url)
			b.write(mkNote(b, "stays", "local"))
			packs := filepath.Join(b.repo.GitDir(), "objects", "pack")
			before, _ := os.ReadDir(packs)
			_, err := b.repo.Sync(ctx, Options{Remote: h.url, Timeout: 5 * time.Second})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("sync: %v\nwant one line with %q", err, c.want)
			}
			after, _ := os.ReadDir(packs)
			if len(after) != len(before) {
				t.Errorf("objects/pack had %d files, has %d after the refusal: %v", len(before), len(after), after)
			}
			if head, _ := b.repo.Head(); head.IsZero() {
				t.Error("local note not committed")
			}
			h.answer.Store(nil)
			if _, err := b.repo.Sync(ctx, Options{Remote: h.url, Timeout: 5 * time.Second}); err != nil {
				t.Fatalf("sync after the repair: %v", err)
			}
			a.sync()
			sameTrees(t, a, b)
			b.fsck()
		})
	}
}

// memSpool is a spool in memory for the fuzzer.
type memSpool struct{ b []byte }

func (m *memSpool) Write(p []byte) (int, error) { m.b = append(m.b, p...); return len(p), nil }

func (m *memSpool) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// FuzzPackIndexer: whatever the bytes, indexing returns (no panic), an
// error is a bound or a malformed pack, and what it allocates is bounded
// by the pack's inflated bound (objects, what deltas make, bases made
// again: each at most that), not by what the pack claims.
func FuzzPackIndexer(f *testing.F) {
	for _, ref := range []bool{false, true} {
		p := realPack(f, ref)
		f.Add(p)
		f.Add(p[:len(p)/2])
	}
	blob := bytes.Repeat([]byte("0123456789abcdef"), 64)
	f.Add(pack(whole(3, blob), ofsDelta(int64(len(whole(3, blob))), copyAll(len(blob), []byte("x")))))
	f.Add(append(append(packHeader(1), objectHeader(3, 1<<40)...), zeros(f, 1<<16)...))
	lim := packLimits{bytes: 1 << 20, objects: 1000, blob: 64 << 10, tree: 256 << 10, commit: 16 << 10, inflated: 4 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		spool := &memSpool{b: make([]byte, 0, len(data))}
		ix := newPackIndexer(spool, lim, nil)
		res, _, err := indexPack(bytes.NewReader(data), spool, lim, ix)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 2<<20+3*uint64(len(data))+3*uint64(lim.inflated) {
			t.Fatalf("allocated %d bytes for %d bytes of input", d, len(data))
		}
		var be *BoundError
		if err != nil && !errors.As(err, &be) && !errors.Is(err, errMalformedPack) {
			t.Fatalf("an error neither a bound nor a malformed pack: %v", err)
		}
		if err == nil {
			if res.objects > lim.objects || res.inflated > lim.inflated || len(ix.names) != int(res.objects) {
				t.Fatalf("accepted %+v (%d named) from %d bytes", res, len(ix.names), len(data))
			}
			var idx bytes.Buffer
			if err := ix.writeIndex(&idx, plumbing.ZeroHash); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPackWithAnObjectTwiceIsGits: git index-pack takes a pack that holds
// an object twice and lists it twice (git never writes one, but a hub
// may serve it); an index that listed it once would make git refuse the
// whole pack ("claims to have 3 objects while index indicates 2").
func TestPackWithAnObjectTwiceIsGits(t *testing.T) {
	p := pack(whole(3, []byte("twice\n")), whole(3, []byte("once\n")), whole(3, []byte("twice\n")))
	want, gitName := gitIndex(t, p)
	got, sum, err := indexed(t, p, defaultPackLimits(Bounds{}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.String() != gitName || !bytes.Equal(got, want) {
		t.Fatalf("index of %d bytes for pack %s, git's %d bytes for %s", len(got), sum, len(want), gitName)
	}
	dir := t.TempDir()
	testutil.Git(t, dir, "init", "-q")
	base := filepath.Join(dir, ".git", "objects", "pack", "pack-"+sum.String())
	os.WriteFile(base+".pack", p, 0o444)
	os.WriteFile(base+".idx", got, 0o444)
	if out := testutil.Git(t, dir, "cat-file", "blob", plumbing.ComputeHash(plumbing.BlobObject, []byte("twice\n")).String()); out != "twice\n" {
		t.Fatalf("git reads %q from the pack", out)
	}
}
