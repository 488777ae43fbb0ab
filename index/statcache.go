package index

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A reconcile with nothing to do compares the size and mtime of every
// note file with what index_files recorded. Reading 100,000 rows of
// index_files through database/sql cost about a third of such a
// reconcile; the stat cache is the same three columns (path, size,
// mtime_ns) in one blob, read with one row of a table of its own
// (index_stats). It was a row of index_meta, a WITHOUT ROWID table,
// whose b-tree compares a key with a row by reading the whole row when
// it overflows its page: every update of the note or token count read
// the 7 MB blob of 100,000 notes (2.9 ms; 18 µs without it), and
// INSERT OR REPLACE of a count 18 ms.
//
// It must never claim a state index_files does not have. Every
// transaction that applies a change bumps files_gen (applier.finish), and
// the cache records the files_gen of the rows it was made from: a cache
// whose generation is not the current one is ignored. The caller reads
// the generation before it reads the rows (FilesGen, then Files), so a
// change applied in between makes the cache it saves stale, never wrong.
const metaFilesGen = "files_gen"

// StatCache is the size and mtime index_files records for each path, as
// of one files generation.
//
// It is saved sorted by path, and a reconcile compares its walk in path
// order, so [StatCache.Same] finds each path at the entry after the last
// one: no map of every path is built (building it was most of the
// comparison at 100,000 notes). The first path out of that order (a
// cache saved by a binary that did not sort, a caller in another order)
// builds the map, and the cache answers from it from then on.
type StatCache struct {
	data  string // the encoded entries; paths are substrings of it
	count int    // entries in data
	// In order: entries before number n (at offset next of data) were
	// matched, each once.
	n, next int
	// Out of order: path -> entry number, built at the first path that
	// was not the next entry.
	at    map[string]int
	size  []int64
	mtime []int64
	seen  []bool
	left  int // entries not matched yet
}

// FilesGen is the generation of index_files: it moves with every applied
// change.
func (ix *Index) FilesGen(ctx context.Context) (int64, error) {
	v, err := ix.Meta(ctx, metaFilesGen)
	if err != nil || v == "" {
		return 0, err
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read index %s: files generation %q: %w", ix.path, v, ErrCorrupt)
	}
	return g, nil
}

// SaveStatCache records files (what Files returned) as the stat cache of
// generation gen, which the caller read before it read files.
func (ix *Index) SaveStatCache(ctx context.Context, gen int64, files map[string]File) error {
	b := binary.AppendVarint(nil, gen)
	for _, p := range slices.Sorted(maps.Keys(files)) { // see StatCache
		b = appendStat(b, files[p])
	}
	if _, err := ix.db.ExecContext(ctx, saveStatsSQL, b); err != nil {
		return ix.wrap("write", err)
	}
	return nil
}

// saveStatsSQL writes the encoded stat cache, its one row.
const saveStatsSQL = `INSERT OR REPLACE INTO index_stats(id, data) VALUES (1, ?)`

func appendStat(b []byte, f File) []byte {
	b = binary.AppendUvarint(b, uint64(len(f.Path)))
	b = append(b, f.Path...)
	b = binary.AppendVarint(b, f.Size)
	return binary.AppendVarint(b, f.MtimeNS)
}

// saveBuiltStats records, at the end of a rebuild and in its
// transaction, the stat cache of the files it recorded (stats, the
// encoded entries), so the reconcile that usually follows a rebuild
// does not read every row again.
func (a *applier) saveBuiltStats(stats []byte) error {
	row, err := a.queryRow(`SELECT CAST(value AS INTEGER) FROM index_meta WHERE key = ?`, metaFilesGen)
	if err != nil {
		return err
	}
	var gen int64
	if err := row.Scan(&gen); err != nil {
		return err
	}
	b := append(binary.AppendVarint(make([]byte, 0, len(stats)+binary.MaxVarintLen64), gen), sortStats(stats)...)
	return a.exec(saveStatsSQL, b)
}

// sortStats returns encoded entries (valid: appendStat wrote them) in
// path order, as StatCache wants them. A rebuild writes them in the
// order it read the files, a tree after the other.
func sortStats(stats []byte) []byte {
	data := string(stats)
	var files []File
	eachStat(data, 0, func(p string, size, mtime int64) {
		files = append(files, File{Path: p, Size: size, MtimeNS: mtime})
	})
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	out := make([]byte, 0, len(stats))
	for _, f := range files {
		out = appendStat(out, f)
	}
	return out
}

// LoadStatCache returns the stat cache if it is of the current files
// generation, else nil.
func (ix *Index) LoadStatCache(ctx context.Context) (*StatCache, error) {
	gen, err := ix.FilesGen(ctx)
	if err != nil {
		return nil, err
	}
	// Scanned into a string, which the paths are cut from: into bytes,
	// then a string, then bytes again for binary's readers, the 4.5 MB
	// blob of 100,000 notes was copied three times.
	var data string
	err = ix.db.QueryRowContext(ctx, `SELECT data FROM index_stats WHERE id = 1`).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, ix.wrap("read", err)
	}
	c, cgen, ok := decodeStatCache(data)
	if !ok || cgen != gen {
		return nil, nil // stale, or not ours to read: the caller reads index_files
	}
	return c, nil
}

func decodeStatCache(data string) (c *StatCache, gen int64, ok bool) {
	gen, n := varintIn(data)
	if n <= 0 {
		return nil, 0, false
	}
	count := 0
	if !eachStat(data, n, func(string, int64, int64) { count++ }) {
		return nil, 0, false
	}
	return &StatCache{data: data, count: count, next: n}, gen, true
}

// eachStat calls fn with each entry encoded in data from offset i on;
// paths are substrings of data. It reports false, after the entries
// before it, on one that does not decode.
func eachStat(data string, i int, fn func(path string, size, mtime int64)) bool {
	for i < len(data) {
		l, n := uvarintIn(data[i:])
		if n <= 0 || l > uint64(len(data)-i-n) {
			return false
		}
		i += n
		p := data[i : i+int(l)]
		i += int(l)
		size, n1 := varintIn(data[i:])
		if n1 <= 0 {
			return false
		}
		mtime, n2 := varintIn(data[i+n1:])
		if n2 <= 0 {
			return false
		}
		i += n1 + n2
		fn(p, size, mtime)
	}
	return true
}

// uvarintIn is binary.Uvarint reading a string, so the cache's blob need
// not be copied into bytes: the value and the bytes read, 0 if s ends
// first, negative if the value overflows 64 bits.
func uvarintIn(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s); i++ {
		if i == binary.MaxVarintLen64 {
			return 0, -(i + 1)
		}
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, -(i + 1)
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// varintIn is binary.Varint reading a string (zig-zag, as AppendVarint
// writes).
func varintIn(s string) (int64, int) {
	ux, n := uvarintIn(s)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, n
}

// Same reports whether the file at path (home-relative) has the size and
// mtime the cache records, and marks it seen.
func (c *StatCache) Same(path []byte, size, mtimeNS int64) bool {
	if c.at == nil {
		if p, sz, mt, n, ok := c.entryAt(c.next); ok && p == string(path) {
			if sz != size || mt != mtimeNS {
				return false
			}
			c.n, c.next = c.n+1, c.next+n
			return true
		}
		c.index()
	}
	i, ok := c.at[string(path)]
	if !ok || c.size[i] != size || c.mtime[i] != mtimeNS {
		return false
	}
	if !c.seen[i] {
		c.seen[i] = true
		c.left--
	}
	return true
}

// entryAt decodes the entry at offset off of data (decodeStatCache
// checked them all) and its length; ok is false past the last one.
func (c *StatCache) entryAt(off int) (path string, size, mtime int64, n int, ok bool) {
	if off >= len(c.data) {
		return "", 0, 0, 0, false
	}
	l, n0 := uvarintIn(c.data[off:])
	i := off + n0
	path = c.data[i : i+int(l)]
	i += int(l)
	size, n1 := varintIn(c.data[i:])
	mtime, n2 := varintIn(c.data[i+n1:])
	return path, size, mtime, i + n1 + n2 - off, true
}

// index builds the map of every entry, the entries matched in order
// counted as seen: the first path out of order.
func (c *StatCache) index() {
	c.at = make(map[string]int, c.count)
	c.size, c.mtime = make([]int64, 0, c.count), make([]int64, 0, c.count)
	_, first := varintIn(c.data)
	eachStat(c.data, first, func(p string, size, mtime int64) {
		c.at[p] = len(c.size)
		c.size, c.mtime = append(c.size, size), append(c.mtime, mtime)
	})
	c.seen = make([]bool, c.count)
	for i := range c.n {
		c.seen[i] = true
	}
	c.left = c.count - c.n
}

// AllSeen reports whether every path of the cache was seen.
func (c *StatCache) AllSeen() bool {
	if c.at == nil {
		return c.n == c.count
	}
	return c.left == 0
}
