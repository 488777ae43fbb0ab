package eval

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use. Every hook is a new process,
// and a package-level regexp.MustCompile runs in every one of them,
// whether or not the hook ever matches it.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
