package index

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/note"
)

// FuzzMatchExpr: the FTS5 expression is only quoted word tokens joined by
// OR, so no input can inject FTS5 syntax.
func FuzzMatchExpr(f *testing.F) {
	for _, s := range []string{`state-of-the-art`, `16:9`, `"unbalanced`, `NEAR(a b)`, `*`, `foo AND`, `a OR b`, "日本語 x_y", "\x00\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		expr := MatchExpr(q)
		if expr == "" {
			return
		}
		for _, part := range strings.Split(expr, " OR ") {
			if len(part) < 3 || part[0] != '"' || part[len(part)-1] != '"' || strings.Contains(part[1:len(part)-1], `"`) {
				t.Fatalf("unsafe phrase %q in %q", part, expr)
			}
			if !wordRe().MatchString(part[1:len(part)-1]) || wordRe().FindString(part[1:len(part)-1]) != part[1:len(part)-1] {
				t.Fatalf("phrase %q is not one word token", part)
			}
		}
	})
}

// FuzzPostingsEdits reads the input as a script of note edits (new,
// edit, delete, delete and re-add, batch boundaries, free text) on an
// index with two-entry chunks, then checks the postings against FTS5's
// own index and a search against the seed query, score for score. An odd
// first byte runs the script with the tail of a large store.
func FuzzPostingsEdits(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 4, 5, 1, 0, 2, 1, 3})
	f.Add([]byte("new note, edit it twice, delete, re-add: \x00\x01\x01\x02\x03\x04\x00\x00\x00\x02\x05"))
	f.Add([]byte{0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 1, 0, 1, 1, 2, 0, 3, 4, 4, 0, 200, 201, 202})
	words := strings.Fields("alpha beta gamma delta café naïve straße run running runs x_y 日本語 ΣΊΣΥΦΟΣ the a of")
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 400 {
			return
		}
		ix, _, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		ix.chunkMax, ix.chunkTarget = 2, 1
		if len(script) > 0 && script[0]&1 == 1 {
			// The tail of a large store (tail.go), with rows folded
			// back as soon as there are more than three.
			ix.tailFrom, ix.tailRows = 0, 3
		}
		pos := 0
		next := func() int {
			if pos >= len(script) {
				return 0
			}
			pos++
			return int(script[pos-1])
		}
		text := func() string {
			var b strings.Builder
			for i, n := 0, next()%6; i < n; i++ {
				c := next()
				if c >= 240 { // free text straight from the input
					end := min(pos+c-238, len(script))
					b.WriteString(string(script[pos:end]) + " ")
					pos = end
					continue
				}
				b.WriteString(words[c%len(words)] + " ")
			}
			return b.String()
		}
		var live []Change
		var batch []Change
		when := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
		for pos < len(script) {
			switch op := next() % 6; {
			case op == 0 || len(live) == 0:
				when = when.Add(time.Minute)
				nt := note.New(note.TypeSemantic, "t "+text(), text(), when)
				nt.MachineID = "m"
				c := changeFor(nt)
				live, batch = append(live, c), append(batch, c)
			case op == 1:
				i := next() % len(live)
				nt := *live[i].Note
				nt.Body = text()
				live[i] = Change{File: live[i].File, Note: &nt}
				batch = append(batch, live[i])
			case op == 2:
				i := next() % len(live)
				batch = append(batch, Change{File: live[i].File, Delete: true})
				live = append(live[:i], live[i+1:]...)
			case op == 3:
				i := next() % len(live)
				batch = append(batch, Change{File: live[i].File, Delete: true}, live[i])
			default:
				if _, err := ix.Apply(ctx, batch); err != nil {
					t.Fatal(err)
				}
				batch = nil
			}
		}
		if _, err := ix.Apply(ctx, batch); err != nil {
			t.Fatal(err)
		}
		comparePostings(t, ix)
		for _, q := range []string{"alpha x_y run the", text() + " café", "日本語 straße naïve"} {
			got, err := ix.Search(ctx, q, Filter{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			want, err := ix.SeedSearch(ctx, q, Filter{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%q: %v, seed %v", q, ids(got), ids(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
					t.Fatalf("%q: %v, seed %v", q, ids(got), ids(want))
				}
			}
		}
	})
}
