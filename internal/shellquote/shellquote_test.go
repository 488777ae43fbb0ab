package shellquote

import (
	"os/exec"
	"testing"
)

// TestQuoteSurvivesSh runs each quoted word through a real sh and checks
// that the argument arrives unchanged.
func TestQuoteSurvivesSh(t *testing.T) {
	for _, s := range []string{"", "plain", "with space", "it's", `a"b`, "$HOME `x` \\n", "'''", "new\nline"} {
		out, err := exec.Command("sh", "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh for %q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) came through sh as %q", s, out)
		}
	}
}
