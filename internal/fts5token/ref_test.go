package fts5token

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"
)

// refDB is the oracle: a real FTS5 table with tokenize='porter unicode61'
// whose index is read back through fts5vocab.
type refDB struct {
	db *sql.DB
}

var (
	sharedRefOnce sync.Once
	sharedRefDB   *refDB
)

// porterRef returns a process-wide oracle for 'porter unicode61'. It is
// never closed: tests and fuzz iterations share it to keep setup cheap.
func porterRef(tb testing.TB) *refDB {
	sharedRefOnce.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			panic(err)
		}
		db.SetMaxOpenConns(1)
		for _, q := range []string{
			`CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')`,
			`CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')`,
		} {
			if _, err := db.Exec(q); err != nil {
				panic(err)
			}
		}
		sharedRefDB = &refDB{db: db}
	})
	return sharedRefDB
}

// tokens returns, for each text, the terms FTS5 indexed for it in position
// order. Positions that fts5vocab does not list but %_docsize counts would
// be empty terms and come back as "".
func (r *refDB) tokens(texts []string) ([][]string, error) {
	tx, err := r.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM t`); err != nil {
		return nil, err
	}
	ins, err := tx.Prepare(`INSERT INTO t(rowid, x) VALUES(?, ?)`)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	for i, s := range texts {
		if _, err := ins.Exec(i+1, s); err != nil {
			return nil, err
		}
	}
	out := make([][]string, len(texts))
	rows, err := tx.Query(`SELECT id, sz FROM t_docsize`)
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
			return nil, fmt.Errorf("doc %d: bad docsize %x", id, sz)
		}
		out[id-1] = make([]string, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(`SELECT doc, offset, term FROM v`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, off int
		var term []byte
		if err := rows.Scan(&id, &off, &term); err != nil {
			return nil, err
		}
		if off >= len(out[id-1]) {
			return nil, fmt.Errorf("doc %d: term at offset %d beyond docsize %d", id, off, len(out[id-1]))
		}
		out[id-1][off] = string(term)
	}
	return out, rows.Err()
}

// checkTexts compares Tokens with FTS5 on every text and fails with the
// first few mismatches. It returns the number of tokens compared.
func checkTexts(tb testing.TB, ref *refDB, texts []string) int {
	tb.Helper()
	const chunk = 2000
	compared, bad := 0, 0
	for lo := 0; lo < len(texts); lo += chunk {
		part := texts[lo:min(lo+chunk, len(texts))]
		want, err := ref.tokens(part)
		if err != nil {
			tb.Fatal(err)
		}
		for i, s := range part {
			got := Tokens(s)
			compared += len(want[i])
			if !equalTokens(got, want[i]) {
				bad++
				if bad <= 10 {
					tb.Errorf("text %s\n got  %s\n want %s", shorten(s), shortList(got), shortList(want[i]))
				}
			}
		}
	}
	if bad > 10 {
		tb.Errorf("... %d mismatching texts in all", bad)
	}
	return compared
}

func equalTokens(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shorten(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q... (%d bytes)", s[:200], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func shortList(toks []string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, t := range toks {
		if i > 0 {
			b.WriteString(" ")
		}
		if i == 30 {
			fmt.Fprintf(&b, "... (%d tokens)", len(toks))
			break
		}
		b.WriteString(shorten(t))
	}
	b.WriteString("]")
	return b.String()
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
