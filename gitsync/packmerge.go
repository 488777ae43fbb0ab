package gitsync

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/anamnesis-memory/anamnesis/note"
)

// Each fetch that brings objects stores them as a pack of its own, and
// nothing here runs git gc. A home that had pulled a few hundred times
// held 590 packs, and every reader of its objects (a pull; a write's
// commit once HEAD came from a pull) read each one's index and searched
// them one after another: 43 ms of a pull of 100 notes into 128,000. git
// keeps the count down with gc --auto past gc.autoPackLimit (50) packs.
//
// mergePacks does the part of git repack --geometric=2 that bounds the
// count, without recompressing anything: past packMergeAt packs, the
// largest packs that are each at least twice all smaller ones together
// stay, and the others become one pack. A pack's entries are copied as
// they are: an offset delta names its base by the distance back, which
// stays the same when the entries of one pack stay together in the same
// order, and a ref-delta's base is in the merged pack too. The index is
// made from the sources' indexes (names and CRC-32s as they were,
// offsets moved), so nothing is inflated; each source's checksum is
// verified as it is copied. An object several sources hold is listed as
// often as it is held, as git lists an object a pack holds twice.
//
// The sources stay until a sync starts at least mergedPackGrace after the
// merge (the list of them is kept in mergedPacksFile): a reader that
// listed the packs before the merge (a peer's fetch from `anamnesis
// serve`, the web UI's history, git) finds them until it is long done.
// Then that sync removes them, at its end, and has go-git's storage read
// its pack list again.
const (
	packMergeAt     = 16
	mergedPackGrace = 10 * time.Minute
	mergedPacksFile = "anamnesis-merged-packs"
)

// packOnDisk is one pack of objects/pack: its name (pack-<sum>) and size.
type packOnDisk struct {
	name string
	size int64
}

// listPacks lists the packs that have an index and no .keep (git's mark
// for a pack never to repack).
func listPacks(dir string) ([]packOnDisk, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	var out []packOnDisk
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") || !have[name+".idx"] || have[name+".keep"] || have[name+".promisor"] {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, packOnDisk{name: name, size: fi.Size()})
	}
	return out, nil
}

// geometricSplit returns how many of packs (sorted by size, smallest
// first) to merge: the largest packs stay while each is at least twice
// all smaller ones together.
func geometricSplit(packs []packOnDisk) int {
	var below int64
	for _, p := range packs {
		below += p.size
	}
	end := len(packs)
	for end > 1 {
		below -= packs[end-1].size
		if packs[end-1].size < 2*below {
			break
		}
		end--
	}
	return end
}

// mergePacks removes the sources of an earlier merge once their grace is
// over, and merges small packs when there are more than packMergeAt. It
// returns how many packs it merged into one. The caller holds the lock.
func (g *Repo) mergePacks(ctx context.Context, now time.Time) (int, error) {
	dir := filepath.Join(g.gitDir, "objects", "pack")
	pending, err := g.removeMergedPacks(dir, now)
	if err != nil || pending {
		return 0, err
	}
	packs, err := listPacks(dir)
	if err != nil || len(packs) <= packMergeAt {
		return 0, err
	}
	slices.SortFunc(packs, func(a, b packOnDisk) int {
		return cmp.Or(cmp.Compare(a.size, b.size), strings.Compare(a.name, b.name))
	})
	n := geometricSplit(packs)
	if n < 2 {
		return 0, nil
	}
	srcs := packs[:n]
	if _, err := writeMergedPack(ctx, dir, srcs); err != nil {
		return 0, fmt.Errorf("merge %d packs: %w", n, err)
	}
	var list bytes.Buffer
	for _, p := range srcs {
		list.WriteString(p.name + "\n")
	}
	if err := note.WriteFileAtomic(filepath.Join(g.gitDir, mergedPacksFile), list.Bytes()); err != nil {
		return 0, fmt.Errorf("merge %d packs: %w", n, err)
	}
	return n, nil
}

// removeMergedPacks removes the packs an earlier merge copied once
// mergedPackGrace has passed since; pending reports that their time has
// not come (no new merge starts meanwhile). A pack that cannot be removed
// (Windows, while a reader has it open) is kept on the list for the next
// sync.
func (g *Repo) removeMergedPacks(dir string, now time.Time) (pending bool, err error) {
	listPath := filepath.Join(g.gitDir, mergedPacksFile)
	fi, err := os.Stat(listPath)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if now.Sub(fi.ModTime()) < mergedPackGrace {
		return true, nil
	}
	data, err := os.ReadFile(listPath)
	if err != nil {
		return false, err
	}
	var left []string
	removed := false
	for _, name := range strings.Fields(string(data)) {
		// Only names of the form a pack has: the list is ours, but a
		// path out of objects/pack is never removed.
		if !strings.HasPrefix(name, "pack-") || strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") {
			continue
		}
		if removePack(dir, name) != nil {
			left = append(left, name)
			continue
		}
		removed = true
	}
	if len(left) > 0 {
		err = note.WriteFileAtomic(listPath, []byte(strings.Join(left, "\n")+"\n"))
	} else {
		err = os.Remove(listPath)
	}
	if removed {
		g.reindexPacks()
	}
	return false, err
}

// removePack removes pack name's files from dir: the .pack first, so that
// a pack that cannot go (Windows, while a reader has it open) keeps its
// index and stays readable, then its index and what git keeps beside it.
func removePack(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name+".pack")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, ext := range []string{".idx", ".rev", ".bitmap", ".keep", ".promisor"} {
		os.Remove(filepath.Join(dir, name+ext))
	}
	return nil
}

// reindexPacks makes the Repo's go-git storage read its pack list again:
// it keeps the list it read first, and packs came or went under it.
func (g *Repo) reindexPacks() {
	if fs, ok := g.r.Storer.(*filesystem.Storage); ok {
		fs.Reindex()
	}
}

// writeMergedPack writes one pack holding every entry of srcs, and its
// index, into dir, and returns its checksum.
func writeMergedPack(ctx context.Context, dir string, srcs []packOnDisk) (plumbing.Hash, error) {
	idxs := make([]*packIdx, len(srcs))
	var count uint64
	for i, p := range srcs {
		x, err := readPackIdx(filepath.Join(dir, p.name+".idx"))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		idxs[i] = x
		count += uint64(x.n)
	}
	if count > 1<<32-1 {
		return plumbing.ZeroHash, fmt.Errorf("%d objects are more than a pack holds", count)
	}
	tmp, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // after the rename, nothing is there
	}()
	sum := sha1.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 256<<10)
	w.Write(packHeader(uint32(count)))
	ents := idxEntries{
		offs:  make([]int64, 0, count),
		crcs:  make([]uint32, 0, count),
		names: make([]plumbing.Hash, 0, count),
	}
	pos := int64(12)
	for i, p := range srcs {
		if err := ctx.Err(); err != nil {
			return plumbing.ZeroHash, err
		}
		n, err := copyPackEntries(w, filepath.Join(dir, p.name+".pack"), idxs[i])
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s: %w", p.name, err)
		}
		x := idxs[i]
		for k := 0; k < x.n; k++ {
			off, ok := x.offset(k)
			if !ok || off < 12 || off >= 12+n {
				return plumbing.ZeroHash, fmt.Errorf("%s: its index points outside it", p.name)
			}
			var h plumbing.Hash
			copy(h[:], x.names[20*k:])
			ents.names = append(ents.names, h)
			ents.crcs = append(ents.crcs, binary.BigEndian.Uint32(x.crcs[4*k:]))
			ents.offs = append(ents.offs, pos+off-12)
		}
		pos += n
	}
	if err := w.Flush(); err != nil {
		return plumbing.ZeroHash, err
	}
	var packSum plumbing.Hash
	copy(packSum[:], sum.Sum(nil))
	if _, err := tmp.Write(packSum[:]); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := installPack(dir, tmp, packSum, &ents); err != nil {
		return plumbing.ZeroHash, err
	}
	return packSum, nil
}

// copyPackEntries copies the entries of the pack at path (what lies
// between its header and its checksum) to w and returns how many bytes
// that was. The header must count the objects its index lists, and the
// checksum must sum the pack and be the one the index names: a damaged
// pack is not spread into the merged one.
func copyPackEntries(w io.Writer, path string, x *packIdx) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size < 32 {
		return 0, errors.New("too short to be a pack")
	}
	var head [12]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return 0, err
	}
	if !bytes.Equal(head[:8], packHeader(0)[:8]) || binary.BigEndian.Uint32(head[8:]) != uint32(x.n) {
		return 0, fmt.Errorf("its header does not match its index's %d objects", x.n)
	}
	sum := sha1.New()
	sum.Write(head[:])
	n, err := io.Copy(io.MultiWriter(w, sum), io.NewSectionReader(f, 12, size-32))
	if err != nil {
		return 0, err
	}
	var trailer [20]byte
	if _, err := f.ReadAt(trailer[:], size-20); err != nil {
		return 0, err
	}
	if !bytes.Equal(sum.Sum(nil), trailer[:]) || !bytes.Equal(trailer[:], x.pack) {
		return 0, errors.New("its checksum does not match its content or its index")
	}
	return n, nil
}

// packHeader is the 12 bytes a version 2 pack of count objects starts
// with.
func packHeader(count uint32) []byte {
	h := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(h[8:], count)
	return h
}
