// Command gen probes the FTS5 'unicode61' tokenizer compiled into
// modernc.org/sqlite and writes ../tables.go: which code points are token
// characters and what each one folds to.
//
// The tables are measured rather than derived from Go's unicode package
// because SQLite ships its own, older, Unicode data, and only the real
// tokenizer is authoritative about it.
//
// Every code point X (surrogates excepted) is inserted as the document
//
//	X "-a" X "a"
//
// and the tokens are read back through an fts5vocab 'instance' table plus
// the %_docsize token count (which, unlike fts5vocab, also sees empty
// tokens). The outcomes are:
//
//	"a", "a"            X is a separator
//	F, "a" F "a"        X is a token character folding to F (F may be empty)
//	"a" F "a"           X is a token character only after the first
//	                    character of a token (the combining diacritics that
//	                    unicode61 accepts inside tokens but never as their
//	                    first character), folding to F
//
// Anything else aborts generation: it would mean the tokenizer does not
// treat code points independently, and the package would be wrong.
package main

import (
	"bytes"
	"database/sql"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

const (
	maxCode = 0x10FFFF
	batch   = 1 << 14
)

// Kinds, mirrored by the package (kindToken, kindInner).
const (
	kindSep   = 0
	kindToken = 1
	kindInner = 2
)

type probe struct {
	kind byte
	fold []byte // nil for separators
}

func main() {
	out := flag.String("o", "tables.go", "output file")
	flag.Parse()

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// One connection: each pooled connection would get its own :memory: db.
	db.SetMaxOpenConns(1)

	var version, sourceID string
	if err := db.QueryRow(`SELECT sqlite_version(), sqlite_source_id()`).Scan(&version, &sourceID); err != nil {
		log.Fatal(err)
	}

	for _, q := range []string{
		`CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			log.Fatal(err)
		}
	}

	res := make([]probe, maxCode+1)
	for lo := 0; lo <= maxCode; lo += batch {
		hi := min(lo+batch-1, maxCode)
		if err := probeBatch(db, lo, hi, res); err != nil {
			log.Fatal(err)
		}
	}

	src, err := render(res, version, sourceID)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

func isSurrogate(cp int) bool { return cp >= 0xD800 && cp <= 0xDFFF }

// probeBatch probes code points lo to hi: each goes into a document
// "C-aCa" and what FTS5 makes of it says its class and its folding.
func probeBatch(db *sql.DB, lo, hi int, res []probe) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := insertProbes(tx, lo, hi); err != nil {
		return err
	}
	got, err := readTokens(tx, lo, hi)
	if err != nil {
		return err
	}
	for cp := lo; cp <= hi; cp++ {
		if isSurrogate(cp) {
			continue
		}
		g := got[cp]
		if g == nil {
			return fmt.Errorf("U+%04X: no docsize row", cp)
		}
		if res[cp], err = classify(cp, g); err != nil {
			return err
		}
	}
	return nil
}

// insertProbes replaces the table's documents with one per code point
// from lo to hi, at rowid cp+1 (rowids are positive).
func insertProbes(tx *sql.Tx, lo, hi int) error {
	if _, err := tx.Exec(`DELETE FROM t`); err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO t(rowid, x) VALUES(?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	var doc []byte
	for cp := lo; cp <= hi; cp++ {
		if isSurrogate(cp) {
			continue
		}
		doc = doc[:0]
		doc = utf8.AppendRune(doc, rune(cp))
		doc = append(doc, "-a"...)
		doc = utf8.AppendRune(doc, rune(cp))
		doc = append(doc, 'a')
		if _, err := ins.Exec(cp+1, string(doc)); err != nil {
			return fmt.Errorf("insert U+%04X: %w", cp, err)
		}
	}
	return nil
}

// tokens is what FTS5 made of one probe document.
type tokens struct {
	n     int            // from %_docsize
	terms map[int][]byte // offset -> term, from fts5vocab
}

// fillEmpty adds the empty terms fts5vocab may not list: a missing
// offset below the token count stands for one. False when the terms
// still do not match the count.
func (g *tokens) fillEmpty() bool {
	for off := range g.n {
		if _, ok := g.terms[off]; !ok {
			g.terms[off] = []byte{}
		}
	}
	return len(g.terms) == g.n
}

// readTokens reads the probe documents' token counts and terms, by code
// point.
func readTokens(tx *sql.Tx, lo, hi int) (map[int]*tokens, error) {
	got := make(map[int]*tokens, hi-lo+1)
	rows, err := tx.Query(`SELECT id, sz FROM t_docsize WHERE id BETWEEN ? AND ?`, lo+1, hi+1)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int
		var sz []byte
		if err := rows.Scan(&id, &sz); err != nil {
			return nil, err
		}
		n, ok := sqliteVarint(sz)
		if !ok {
			return nil, fmt.Errorf("docsize of %d: bad varint %x", id, sz)
		}
		got[id-1] = &tokens{n: int(n), terms: map[int][]byte{}}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(`SELECT doc, offset, term FROM v WHERE doc BETWEEN ? AND ?`, lo+1, hi+1)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, off int
		var term []byte
		if err := rows.Scan(&id, &off, &term); err != nil {
			return nil, err
		}
		g := got[id-1]
		if g == nil {
			return nil, fmt.Errorf("doc %d has terms but no docsize", id)
		}
		if _, dup := g.terms[off]; dup {
			return nil, fmt.Errorf("doc %d: two terms at offset %d", id, off)
		}
		g.terms[off] = bytes.Clone(term)
	}
	return got, rows.Err()
}

// classify reads code point cp's class and folding from its probe's
// tokens: two tokens "a" and "a" (a separator), F and "aFa" (a token
// character folding to F), or one token "aFa" (a character only inside
// a token).
func classify(cp int, g *tokens) (probe, error) {
	if !g.fillEmpty() {
		return probe{}, fmt.Errorf("U+%04X: %d terms for %d tokens", cp, len(g.terms), g.n)
	}
	var p probe
	t0, t1 := g.terms[0], g.terms[1]
	switch {
	case g.n == 2 && string(t0) == "a" && string(t1) == "a":
		return probe{kind: kindSep}, nil
	case g.n == 2 && string(t1) == "a"+string(t0)+"a":
		p = probe{kind: kindToken, fold: t0}
	case g.n == 1 && len(t0) >= 2 && t0[0] == 'a' && t0[len(t0)-1] == 'a':
		p = probe{kind: kindInner, fold: t0[1 : len(t0)-1]}
	default:
		shown := make(map[int]string, len(g.terms))
		for off, term := range g.terms {
			shown[off] = strconv.Quote(string(term))
		}
		return probe{}, fmt.Errorf("U+%04X: unexpected tokens %v (count %d)", cp, shown, g.n)
	}
	if f := p.fold; len(f) > 0 {
		if r, size := utf8.DecodeRune(f); r == utf8.RuneError || size != len(f) {
			return probe{}, fmt.Errorf("U+%04X folds to %q, not one code point", cp, f)
		}
	}
	return p, nil
}

type span struct {
	lo, hi int
	kind   byte
}

type foldRun struct {
	lo, n, stride, delta int
}

// render writes the tables as Go source: the class spans, the spans
// that fold to nothing and the runs that fold to another code point.
func render(res []probe, version, sourceID string) ([]byte, error) {
	spans := classSpans(res)
	drops, delta := folding(res)
	runs := foldRuns(delta)

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by \"go run ./gen\"; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "// Probed from FTS5 unicode61 in SQLite %s (%s).\n\n", version, sourceID)
	fmt.Fprintf(&b, "package fts5token\n\n")
	fmt.Fprintf(&b, "const probedSQLiteVersion = %q\n\n", version)

	fmt.Fprintf(&b, "// classSpans lists, in order, the runs of code points that are token\n")
	fmt.Fprintf(&b, "// characters: kindToken anywhere in a token, kindInner only after its\n")
	fmt.Fprintf(&b, "// first character. All other code points up to U+10FFFF separate tokens.\n")
	fmt.Fprintf(&b, "var classSpans = [...]span{\n")
	writeRows(&b, len(spans), 4, func(i int) string {
		s := spans[i]
		return fmt.Sprintf("{0x%04X, 0x%04X, %d},", s.lo, s.hi, s.kind)
	})
	fmt.Fprintf(&b, "}\n\n")

	fmt.Fprintf(&b, "// dropSpans lists the runs of token characters that fold to nothing\n")
	fmt.Fprintf(&b, "// (diacritics removed by remove_diacritics=1).\n")
	fmt.Fprintf(&b, "var dropSpans = [...]span{\n")
	writeRows(&b, len(drops), 4, func(i int) string {
		s := drops[i]
		return fmt.Sprintf("{0x%04X, 0x%04X, 0},", s.lo, s.hi)
	})
	fmt.Fprintf(&b, "}\n\n")

	fmt.Fprintf(&b, "// foldRuns maps token characters that fold to a different code point:\n")
	fmt.Fprintf(&b, "// lo, lo+stride, ... (n members) each fold to themselves plus delta.\n")
	fmt.Fprintf(&b, "// Code points inside a run's extent but off its stride fold to themselves.\n")
	fmt.Fprintf(&b, "var foldRuns = [...]foldRun{\n")
	writeRows(&b, len(runs), 4, func(i int) string {
		r := runs[i]
		return fmt.Sprintf("{0x%04X, %d, %d, %d},", r.lo, r.n, r.stride, r.delta)
	})
	fmt.Fprintf(&b, "}\n")

	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt generated code: %w", err)
	}
	return src, nil
}

// classSpans are the character classes as maximal runs of equal kind;
// separators are the gaps.
func classSpans(res []probe) []span {
	var spans []span
	for cp := 0; cp <= maxCode; cp++ {
		k := res[cp].kind
		if isSurrogate(cp) || k == kindSep {
			continue
		}
		if n := len(spans); n > 0 && spans[n-1].hi == cp-1 && spans[n-1].kind == k {
			spans[n-1].hi = cp
			continue
		}
		// Surrogates never reach the tables (the decoder turns them into
		// U+FFFD), so a run may bridge them.
		if n := len(spans); n > 0 && cp == 0xE000 && spans[n-1].hi == 0xD7FF && spans[n-1].kind == k {
			spans[n-1].hi = cp
			continue
		}
		spans = append(spans, span{cp, cp, k})
	}
	return spans
}

// folding is what folding does to token characters: the runs of code
// points that vanish, and by how much each one mapped elsewhere moves.
func folding(res []probe) (drops []span, delta map[int]int) {
	delta = make(map[int]int)
	for cp := 0; cp <= maxCode; cp++ {
		p := res[cp]
		if p.kind == kindSep {
			continue
		}
		if len(p.fold) == 0 {
			if n := len(drops); n > 0 && drops[n-1].hi == cp-1 {
				drops[n-1].hi = cp
			} else {
				drops = append(drops, span{cp, cp, 0})
			}
			continue
		}
		r, _ := utf8.DecodeRune(p.fold)
		if int(r) != cp {
			delta[cp] = int(r) - cp
		}
	}
	return drops, delta
}

// maxRun is the longest fold run: run lengths are stored as uint16.
const maxRun = 1<<16 - 1

// foldRuns packs delta into runs, contiguous or every other code point
// (upper and lower case pairs), whichever is longer.
func foldRuns(delta map[int]int) []foldRun {
	var runs []foldRun
	for cp := 0; cp <= maxCode; cp++ {
		d, ok := delta[cp]
		if !ok {
			continue
		}
		r := foldRun{lo: cp, n: contiguousRun(delta, cp, d), stride: 1, delta: d}
		if n2 := alternateRun(delta, cp, d); n2 > r.n {
			r = foldRun{lo: cp, n: n2, stride: 2, delta: d}
		}
		runs = append(runs, r)
		// Resume after the last member; for stride 2 the code points
		// skipped over have no mapping by construction.
		cp = r.lo + (r.n-1)*r.stride
	}
	return runs
}

// contiguousRun is how many code points from cp on move by d.
func contiguousRun(delta map[int]int, cp, d int) int {
	n := 1
	for n < maxRun {
		d2, ok := delta[cp+n]
		if !ok || d2 != d {
			break
		}
		n++
	}
	return n
}

// alternateRun is how many of every other code point from cp on move by
// d, the ones skipped folding to themselves (so runs never interleave).
func alternateRun(delta map[int]int, cp, d int) int {
	n := 1
	for n < maxRun {
		if _, ok := delta[cp+2*n-1]; ok {
			break
		}
		d2, ok := delta[cp+2*n]
		if !ok || d2 != d {
			break
		}
		n++
	}
	return n
}

func writeRows(b *bytes.Buffer, n, perLine int, item func(int) string) {
	for i := 0; i < n; i += perLine {
		var parts []string
		for j := i; j < min(i+perLine, n); j++ {
			parts = append(parts, item(j))
		}
		fmt.Fprintf(b, "\t%s\n", strings.Join(parts, " "))
	}
}

// sqliteVarint decodes SQLite's big-endian varint (7 bits a byte, high bit
// set on all but the last, a ninth byte contributing 8 bits), the format of
// the %_docsize column sizes.
func sqliteVarint(b []byte) (v uint64, ok bool) {
	for i, c := range b {
		if i == 8 {
			return v<<8 | uint64(c), true
		}
		v = v<<7 | uint64(c&0x7F)
		if c&0x80 == 0 {
			return v, true
		}
	}
	return 0, false
}
