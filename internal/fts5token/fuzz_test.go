package fts5token

import "testing"

// FuzzEach compares Each with FTS5 on arbitrary input. Invalid UTF-8 is
// not skipped: Each reads it the way SQLite does, so it must match too.
func FuzzEach(f *testing.F) {
	ref := porterRef(f) // opened once per process, shared by all inputs
	for _, s := range []string{
		"", "a", "The quick brown fox jumps over the lazy dog",
		"generalizations hopefulness relational conditional", "sky sky's skies",
		"snake_case kebab-case dotted.name https://x.org/a?b=c 3.14 16:9",
		"café Straße İstanbul ıi Ελληνικά Русский 中文 العربية עברית",
		"e\u0301 \u0301a a\u0301\u0302b 😀👍🏽 a\u200db \u00a0 \ue000 \U00100000",
		"a\x80b\xc3\xa9\xa9 \xff\xfe \xf4\x90\x80\x80 \xed\xa0\x80",
		"yyyy ayay eeing abates ied eed",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := ref.tokens([]string{s})
		if err != nil {
			t.Fatal(err)
		}
		if got := Tokens(s); !equalTokens(got, want[0]) {
			t.Fatalf("text %q\n got  %q\n want %q", s, got, want[0])
		}
	})
}
