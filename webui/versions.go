package webui

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anamnesis-memory/anamnesis"
	"github.com/anamnesis-memory/anamnesis/gitsync"
	"github.com/anamnesis-memory/anamnesis/internal/textfmt"
	"github.com/anamnesis-memory/anamnesis/note"
)

// versionIndex records, for every file of memory/, the commits that
// changed it, so a note's history is a map lookup instead of a walk of
// the whole log: the walk (Store.History) decodes the note's type
// directory, a third of the store, at every commit since the note was
// made, about 7 ms a commit, and its answer was dropped at every new
// commit. The index is built once (in the background when the server
// starts), extended by only the commits that arrived when main moves
// (a write, a sync by any process), and kept in state/webui-versions.bin
// so a restarted server starts warm.
//
// It also holds each commit's author machine, time and parents, which is
// all the fleet page needs: no log walk per page there either.
type versionIndex struct {
	mu      sync.Mutex
	home    string // the store, below which no link is followed
	file    string // where it is kept; "" keeps nothing
	dir     string // memory/
	repo    *gitsync.Repo
	data    versionData
	seen    map[gitsync.Hash]int32 // commit -> index in data.Commits
	unsaved int                    // commits indexed since the file was written
}

// versionFormat changes when versionData's meaning does; a file of
// another format is rebuilt.
const versionFormat = 3

type versionData struct {
	Format  int
	Head    string
	Commits []commitRec
	Paths   map[string][]changeRec
}

type commitRec struct {
	Hash    [20]byte
	Unix    int64
	Zone    int32 // seconds east of UTC, to show the committer's own time
	Machine string
	Subject string
	Merge   bool
	// Gen is one more than the greatest of the parents' (a root commit
	// is 1): versions are ordered by it first, so a child always shows
	// above its parent whatever the machines' clocks said, as the log
	// walk orders them.
	Gen int32
}

// changeRec is one commit whose version of a file differs from every
// parent's: a new version (Blob zero: the commit deleted it).
type changeRec struct {
	Commit int32
	Blob   [20]byte
	Added  bool // no parent had the file
}

func newVersionIndex(home string) *versionIndex {
	return &versionIndex{
		home: home,
		file: filepath.Join(home, "state", "webui-versions.bin"),
		dir:  filepath.Join(home, note.PortableDir),
	}
}

// open loads the kept index and the repository; without a repository
// there is nothing to index (ok false).
func (v *versionIndex) open(ctx context.Context) (ok bool, err error) {
	if v.repo != nil {
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(v.dir, ".git")); err != nil {
		return false, nil
	}
	// Only read here: no machine to commit as, and the repository
	// exists, so Open does not create one.
	r, err := gitsync.Open(ctx, v.dir, "", nil)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", v.dir, err)
	}
	v.repo = r
	v.data = versionData{Format: versionFormat, Paths: map[string][]changeRec{}}
	v.seen = map[gitsync.Hash]int32{}
	if v.file == "" {
		return true, nil
	}
	b, err := os.ReadFile(v.file)
	if err != nil {
		return true, nil // not kept yet: built from scratch
	}
	d, err := decodeVersions(b)
	if err != nil {
		return true, nil // damaged or older: rebuilt
	}
	for i, c := range d.Commits {
		v.seen[c.Hash] = int32(i)
	}
	// A kept head that is no longer in the repository (history rewritten
	// by hand) makes the index untrustworthy: rebuild.
	if d.Head != "" {
		h, err := gitsync.ParseHash(d.Head)
		if err == nil {
			_, err = r.CommitAt(h)
		}
		if err != nil {
			v.seen = map[gitsync.Hash]int32{}
			return true, nil
		}
	}
	v.data = d
	return true, nil
}

// update brings the index to head. It must be called with v.mu held.
// keepLater leaves saving to a later update unless saveEvery commits
// are waiting.
func (v *versionIndex) update(ctx context.Context, head string, keepLater bool) error {
	ok, err := v.open(ctx)
	if err != nil || !ok {
		return err
	}
	if head == "" || head == v.data.Head {
		return nil
	}
	h, err := gitsync.ParseHash(head)
	if err != nil {
		return err
	}
	added, err := v.extend(ctx, h)
	if err != nil {
		return err
	}
	v.data.Head = head
	v.unsaved += added
	if v.unsaved >= saveEvery || v.unsaved > 0 && !keepLater {
		v.save()
	}
	return nil
}

// extend indexes every commit reachable from head that is not indexed
// yet, and returns how many it added.
func (v *versionIndex) extend(ctx context.Context, head gitsync.Hash) (int, error) {
	todo, err := v.unindexed(ctx, head)
	if err != nil {
		return 0, err
	}
	gens := v.generations(todo)
	trees := v.repo.Trees() // for this extension: consecutive commits share directories
	for _, c := range todo {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := v.addCommit(c, gens[c.Hash], trees); err != nil {
			return 0, err
		}
	}
	return len(todo), nil
}

// unindexed reads the commits reachable from head that the index has
// not seen, stopping at those it has and at a shallow clone's boundary.
func (v *versionIndex) unindexed(ctx context.Context, head gitsync.Hash) ([]gitsync.Commit, error) {
	var todo []gitsync.Commit
	stack := []gitsync.Hash{head}
	queued := map[gitsync.Hash]bool{head: true}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := v.seen[h]; ok {
			continue
		}
		c, err := v.repo.CommitAt(h)
		if errors.Is(err, gitsync.ErrNoObject) {
			continue // a shallow clone's boundary
		}
		if err != nil {
			return nil, err
		}
		todo = append(todo, c)
		for _, p := range c.Parents {
			if !queued[p] {
				queued[p] = true
				stack = append(stack, p)
			}
		}
	}
	return todo, nil
}

// generations numbers the new commits: one more than the highest of
// their parents', indexed or new (1 for a root, or a commit whose
// parents are beyond a shallow clone's boundary).
func (v *versionIndex) generations(todo []gitsync.Commit) map[gitsync.Hash]int32 {
	gens := map[gitsync.Hash]int32{}
	byHash := make(map[gitsync.Hash]*gitsync.Commit, len(todo))
	for i := range todo {
		byHash[todo[i].Hash] = &todo[i]
	}
	var gen func(h gitsync.Hash) int32
	gen = func(h gitsync.Hash) int32 {
		if i, ok := v.seen[h]; ok {
			return v.data.Commits[i].Gen
		}
		if g, ok := gens[h]; ok {
			return g
		}
		c := byHash[h]
		if c == nil {
			return 0 // beyond a shallow clone's boundary
		}
		g := int32(1)
		for _, p := range c.Parents {
			g = max(g, gen(p)+1)
		}
		gens[h] = g
		return g
	}
	for _, c := range todo {
		gen(c.Hash)
	}
	return gens
}

// addCommit records commit c and the files it gave a new version: those
// whose blob differs from every parent's (a merge that took one side's
// version made nothing new), as Store.History defines a version.
func (v *versionIndex) addCommit(c gitsync.Commit, gen int32, trees *gitsync.Trees) error {
	idx := int32(len(v.data.Commits))
	_, zone := c.Time.Zone()
	v.data.Commits = append(v.data.Commits, commitRec{Hash: c.Hash, Unix: c.Time.Unix(), Zone: int32(zone),
		Machine: c.Machine, Subject: textfmt.FirstLine(c.Message), Merge: len(c.Parents) > 1, Gen: gen})
	v.seen[c.Hash] = idx
	var parents []gitsync.Hash // their root trees
	for _, ph := range c.Parents {
		p, err := v.repo.CommitAt(ph)
		if errors.Is(err, gitsync.ErrNoObject) {
			continue
		}
		if err != nil {
			return fmt.Errorf("parent of %s: %w", c.Hash, err)
		}
		parents = append(parents, p.Tree)
	}
	var first gitsync.Hash // a root commit's files are all new
	if len(parents) > 0 {
		first = parents[0]
	}
	err := trees.ChangedFiles(first, c.Tree, func(path string, from, to gitsync.Hash) error {
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		inParent := !from.IsZero()
		for _, pt := range parents[min(1, len(parents)):] {
			b, err := trees.BlobAt(pt, path)
			if err != nil {
				return err
			}
			if b == to {
				return nil // another parent's version: nothing new
			}
			inParent = inParent || !b.IsZero()
		}
		v.data.Paths[path] = append(v.data.Paths[path], changeRec{Commit: idx, Blob: to, Added: !inParent})
		return nil
	})
	if err != nil {
		return fmt.Errorf("changes of %s: %w", c.Hash, err)
	}
	return nil
}

// saveEvery is how many commits may be indexed and not yet kept: a
// page that extends the index by a commit or two does not pay for
// writing the whole file (about 1.5 MB at 10,000 notes); a restart
// catches up on at most this many commits in the background.
const saveEvery = 100

// save keeps the index in its file; a failure costs only a rebuild at
// the next start, so it is not reported.
func (v *versionIndex) save() {
	if v.file == "" {
		return
	}
	// A cache: no fsync, but never half a file nor through a link.
	if note.ReplaceFileIn(v.home, v.file, encodeVersions(&v.data)) == nil {
		v.unsaved = 0
	}
}

// versionsShown is how many versions a note page shows: a note
// rewritten at every session could have thousands, each a blob to read
// and a diff to render; older ones are on further pages of the history.
const versionsShown = 20

// history is the versions of rel (a path inside memory/), newest first,
// as Store.History returns them, ending at the commit that added the
// file; with Content read only for the limit versions from the from-th
// on (and the one after them, the base of the last one's diff).
func (v *versionIndex) history(rel string, from, limit int) (anamnesis.History, int, error) {
	out := anamnesis.History{Path: note.PortableDir + "/" + rel, Versions: []anamnesis.Version{}, Complete: true}
	ch := v.sorted(rel)
	for i := range ch {
		if ch[i].Added && ch[i].Blob != ([20]byte{}) {
			ch = ch[:i+1] // the commit that added the file ends it
			break
		}
	}
	out.Scanned = len(v.data.Commits)
	total := len(ch)
	out.Complete = total > 0 && ch[total-1].Added
	for i, c := range ch[min(from, total):] {
		if i > limit {
			out.Complete = false
			break
		}
		ver, err := v.version(rel, c)
		if err != nil {
			return out, total, err
		}
		out.Versions = append(out.Versions, ver)
	}
	return out, total, nil
}

// version is the Version change c made of rel, content included (none
// for a deletion), shown in the committer's own time zone.
func (v *versionIndex) version(rel string, c changeRec) (anamnesis.Version, error) {
	cr := v.data.Commits[c.Commit]
	ver := anamnesis.Version{Commit: gitsync.Hash(cr.Hash).String(),
		Time:    time.Unix(cr.Unix, 0).In(time.FixedZone("", int(cr.Zone))).Format("2006-01-02T15:04:05-07:00"),
		Machine: cr.Machine, Subject: cr.Subject, Deleted: c.Blob == [20]byte{}}
	if !ver.Deleted {
		s, err := v.blob(c.Blob)
		if err != nil {
			return ver, fmt.Errorf("read %s at %s: %w", rel, ver.Commit, err)
		}
		ver.Content = s
	}
	return ver, nil
}

func (v *versionIndex) blob(h gitsync.Hash) (string, error) {
	data, err := v.repo.ReadBlob(h, 4<<20)
	return string(data), err
}

// machines is the fleet's history side: each machine's commits, newest
// commit and newest merge, from every indexed commit.
func (v *versionIndex) machines(get func(string) *anamnesis.MachineActivity) {
	type last struct{ commit, merge int64 }
	seen := map[string]*last{}
	for _, c := range v.data.Commits {
		a := get(c.Machine)
		a.Commits++
		l := seen[c.Machine]
		if l == nil {
			l = &last{}
			seen[c.Machine] = l
		}
		when := time.Unix(c.Unix, 0).UTC().Format("2006-01-02T15:04:05Z")
		if c.Unix > l.commit || a.LastCommit == "" {
			l.commit, a.LastCommit, a.LastSubject = c.Unix, when, c.Subject
		}
		if c.Merge && (c.Unix > l.merge || a.LastMerge == "") {
			l.merge, a.LastMerge = c.Unix, when
		}
	}
}

// The kept file is a flat binary encoding rather than gob: gob decoded
// 10,000 paths in 25 to 100 ms on the shared test machine, a restarted
// server's first page; this takes a few. Layout: magic and format, head,
// the commits (hash, time, zone, machine, subject, merge), then each path
// with its changes (commit number, blob, added).
const versionMagic = "anamnesis-webui-versions\n"

func encodeVersions(d *versionData) []byte {
	b := make([]byte, 0, 64+len(d.Commits)*64+len(d.Paths)*80)
	b = append(b, versionMagic...)
	b = binary.AppendUvarint(b, uint64(versionFormat))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	str(d.Head)
	b = binary.AppendUvarint(b, uint64(len(d.Commits)))
	for _, c := range d.Commits {
		b = append(b, c.Hash[:]...)
		b = binary.AppendVarint(b, c.Unix)
		b = binary.AppendVarint(b, int64(c.Zone))
		str(c.Machine)
		str(c.Subject)
		flag(c.Merge)
		b = binary.AppendUvarint(b, uint64(c.Gen))
	}
	total := 0
	for _, chs := range d.Paths {
		total += len(chs)
	}
	b = binary.AppendUvarint(b, uint64(len(d.Paths)))
	b = binary.AppendUvarint(b, uint64(total))
	for p, chs := range d.Paths {
		str(p)
		b = binary.AppendUvarint(b, uint64(len(chs)))
		for _, c := range chs {
			b = binary.AppendUvarint(b, uint64(c.Commit))
			b = append(b, c.Blob[:]...)
			flag(c.Added)
		}
	}
	return b
}

var errVersionFile = errors.New("not a version index of this format")

// decodeVersions reads encodeVersions' output; any inconsistency is an
// error (the caller rebuilds), never a panic. It allocates little: paths
// and subjects are substrings of one copy of the file, every path's
// changes share one array (capped, so extending one path's slice later
// copies it rather than overwriting the next): a restarted server's
// first page waits for this.
func decodeVersions(b []byte) (versionData, error) {
	var d versionData
	s, ok := strings.CutPrefix(string(b), versionMagic)
	if !ok {
		return d, errVersionFile
	}
	r := &versionReader{s: s}
	if r.uvarint() != versionFormat {
		return d, errVersionFile
	}
	d.Format = versionFormat
	d.Head = r.take(r.uvarint())
	var err error
	if d.Commits, err = r.commits(); err != nil {
		return d, err
	}
	if d.Paths, err = r.paths(len(d.Commits)); err != nil {
		return d, err
	}
	if r.bad || r.pos != len(r.s) {
		return d, errVersionFile
	}
	internMachines(d.Commits)
	return d, nil
}

// versionReader reads encodeVersions' fields from s. After the first
// fault (a field past the end, a varint too long) bad is set and every
// read returns zero, so the decoder checks once per record, not per
// field.
type versionReader struct {
	s   string
	pos int
	bad bool
}

// left is how many bytes are still to read.
func (r *versionReader) left() uint64 { return uint64(len(r.s) - r.pos) }

// uvarint reads what binary.AppendUvarint wrote.
func (r *versionReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	var x uint64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.s) || shift > 63 {
			r.bad = true
			return 0
		}
		c := r.s[r.pos]
		r.pos++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

// varint reads what binary.AppendVarint wrote (zig-zag).
func (r *versionReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// take reads n bytes, as a substring of the file's one copy.
func (r *versionReader) take(n uint64) string {
	if r.bad || n > r.left() {
		r.bad = true
		return ""
	}
	out := r.s[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return out
}

func (r *versionReader) hash(dst *[20]byte) { copy(dst[:], r.take(20)) }

func (r *versionReader) flag() bool { return r.take(1) == "\x01" }

// commits reads the commit table. Its length is checked against what is
// left (a commit takes at least 22 bytes) before anything is allocated.
func (r *versionReader) commits() ([]commitRec, error) {
	nc := r.uvarint()
	if r.bad || nc > r.left()/22 {
		return nil, errVersionFile
	}
	out := make([]commitRec, nc)
	for i := range out {
		c := &out[i]
		r.hash(&c.Hash)
		c.Unix = r.varint()
		c.Zone = int32(r.varint())
		c.Machine = r.take(r.uvarint())
		c.Subject = r.take(r.uvarint())
		c.Merge = r.flag()
		c.Gen = int32(r.uvarint())
	}
	return out, nil
}

// paths reads every path's changes into one shared array, each path's
// slice capped (extending one later copies it rather than overwriting the
// next); a change must name one of the commits.
func (r *versionReader) paths(commits int) (map[string][]changeRec, error) {
	np, total := r.uvarint(), r.uvarint()
	if r.bad || np > r.left() || total > r.left()/22 {
		return nil, errVersionFile
	}
	all := make([]changeRec, 0, total)
	out := make(map[string][]changeRec, np)
	for i := uint64(0); i < np && !r.bad; i++ {
		p := r.take(r.uvarint())
		n := r.uvarint()
		if n > uint64(cap(all)-len(all)) {
			return nil, errVersionFile
		}
		start := len(all)
		for j := uint64(0); j < n && !r.bad; j++ {
			var c changeRec
			k := r.uvarint()
			if k >= uint64(commits) {
				return nil, errVersionFile
			}
			c.Commit = int32(k)
			r.hash(&c.Blob)
			c.Added = r.flag()
			all = append(all, c)
		}
		out[p] = all[start:len(all):len(all)]
	}
	return out, nil
}

// internMachines makes the commits of one machine share one name string:
// names repeat, and a substring per commit would keep the file alive for
// nothing more.
func internMachines(commits []commitRec) {
	names := map[string]string{}
	for i := range commits {
		m := commits[i].Machine
		if n, ok := names[m]; ok {
			commits[i].Machine = n
		} else {
			names[m] = m
		}
	}
}

// at is the version of rel that commit made, content included; ok is
// false when that commit made no version of it.
func (v *versionIndex) at(rel, commit string) (ver anamnesis.Version, ok bool, err error) {
	h, err := gitsync.ParseHash(commit)
	if err != nil {
		return ver, false, nil
	}
	i, known := v.seen[h]
	if !known || h.String() != commit {
		return ver, false, nil
	}
	for _, c := range v.data.Paths[rel] {
		if c.Commit != i {
			continue
		}
		ver, err = v.version(rel, c)
		return ver, err == nil, err
	}
	return ver, false, nil
}

// sorted is rel's changes, newest first: by generation, then time.
func (v *versionIndex) sorted(rel string) []changeRec {
	ch := append([]changeRec(nil), v.data.Paths[rel]...)
	sort.SliceStable(ch, func(i, j int) bool {
		a, b := v.data.Commits[ch[i].Commit], v.data.Commits[ch[j].Commit]
		if a.Gen != b.Gen {
			return a.Gen > b.Gen
		}
		if a.Unix != b.Unix {
			return a.Unix > b.Unix
		}
		return ch[i].Commit < ch[j].Commit // found from the head down
	})
	return ch
}

// maxWhoMadeReads bounds the versions read to find who wrote a body.
const maxWhoMadeReads = 20

// whoMade finds the commit that made a version of rel: the one whose
// blob starts with blobPrefix (a conflict copy is named after the blob
// it keeps) or, without a prefix, the newest commit other than a merge
// whose version has this body (a merge that kept one side's body under
// merged frontmatter made no version of its own). It returns the
// commit's machine and time.
func (v *versionIndex) whoMade(rel, blobPrefix, body string) (machine, when string, ok bool) {
	reads := 0
	for _, c := range v.sorted(rel) {
		cr := v.data.Commits[c.Commit]
		if blobPrefix != "" {
			if !strings.HasPrefix(gitsync.Hash(c.Blob).String(), blobPrefix) {
				continue
			}
		} else {
			if cr.Merge || c.Blob == [20]byte{} {
				continue
			}
			if reads++; reads > maxWhoMadeReads {
				return "", "", false
			}
			content, err := v.blob(c.Blob)
			if err != nil {
				return "", "", false
			}
			if _, b := splitFrontmatter([]byte(content)); strings.TrimSpace(b) != strings.TrimSpace(body) {
				continue
			}
		}
		return cr.Machine, time.Unix(cr.Unix, 0).UTC().Format(time.RFC3339), true
	}
	return "", "", false
}
