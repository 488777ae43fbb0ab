package webui

import (
	"strings"
	"testing"
)

// A list shows the start of each note as plain text: its markdown is
// read, not shown, and text that looks like markup stays as written.
func TestSnippetIsPlainText(t *testing.T) {
	for body, want := range map[string]string{
		"# Deploys\n\nUse **the** `zanzibar` flag, see [the runbook](https://x.test/r).": "Deploys Use the zanzibar flag, see the runbook.",
		"- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |":                                "one two a b 1 2",
		"Keep snake_case_names and 2 < 3 && \"quotes\" 'as typed'":                       "Keep snake_case_names and 2 < 3 && \"quotes\" 'as typed'",
		"<script>alert(1)</script> raw HTML is text":                                     "<script>alert(1)</script> raw HTML is text",
		"```go\nfunc main() {}\n```\nafter":                                              "func main() {} after",
	} {
		if got := snippet(body); got != want {
			t.Errorf("snippet(%q)\n got %q\nwant %q", body, got, want)
		}
	}
	// A long body is clipped at a word (textfmt.Clip), within 200 runes.
	long := strings.Repeat("word ", 1000) + "é"
	if got := []rune(snippet(long)); len(got) > 200 || len(got) < 190 || got[len(got)-1] != '…' || got[len(got)-2] != 'd' {
		t.Errorf("a long body gives %d runes ending %q", len(got), string(got[len(got)-2:]))
	}
}

// A search result shows the passage with the query words, marked; the
// note's text stays text.
func TestPassage(t *testing.T) {
	body := strings.Repeat("Unrelated words fill the start of this note. ", 10) +
		"The <b>walrus</b> caching layer holds 512 entries. " + strings.Repeat("More filler. ", 30)
	segs := passage(body, "walrus cache")
	var b strings.Builder
	for _, s := range segs {
		if s.Hit {
			b.WriteString("[" + s.Text + "]")
		} else {
			b.WriteString(s.Text)
		}
	}
	got := b.String()
	if !strings.HasPrefix(got, "…") || !strings.Contains(got, "[walrus]") || !strings.Contains(got, "[caching]") || !strings.Contains(got, "<b>") {
		t.Errorf("passage: %q", got)
	}
	if segs := passage("short note", "absent"); len(segs) != 1 || segs[0].Text != "short note" {
		t.Errorf("no match: %+v", segs)
	}
}

// A version's frontmatter changes are one line; its changed words are
// marked within the lines that hold them.
func TestFrontSummaryAndMarkWords(t *testing.T) {
	prev := "id: X\ntitle: Walrus\nupdated_at: '1'\ntags:\n- a\n"
	cur := "id: X\ntitle: Walrus\nupdated_at: '2'\ntags:\n- a\n- b\nproject: p\n"
	if got := frontSummary(prev, cur); got != "updated_at, tags changed; project added" {
		t.Errorf("frontSummary: %q", got)
	}
	lines := markWords(diffLines("The walrus cache holds 512 entries.\nsame\n", "The walrus cache holds 1024 entries.\nsame\n", 1))
	var got []string
	for _, l := range lines {
		var b strings.Builder
		for _, s := range l.Segs {
			if s.Hit {
				b.WriteString("[" + s.Text + "]")
			} else {
				b.WriteString(s.Text)
			}
		}
		got = append(got, string(l.Op)+b.String())
	}
	if want := []string{"-The walrus cache holds [512] entries.", "+The walrus cache holds [1024] entries.", " "}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("markWords: %q", got)
	}
}
