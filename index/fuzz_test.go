package index

import (
	"strings"
	"testing"
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
			if !wordRe.MatchString(part[1:len(part)-1]) || wordRe.FindString(part[1:len(part)-1]) != part[1:len(part)-1] {
				t.Fatalf("phrase %q is not one word token", part)
			}
		}
	})
}
