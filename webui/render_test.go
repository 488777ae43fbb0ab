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
	long := strings.Repeat("word ", 1000) + "é"
	if got := []rune(snippet(long)); len(got) != 200 || got[199] != '…' {
		t.Errorf("a long body gives %d runes ending %q", len(got), got[len(got)-1])
	}
}
