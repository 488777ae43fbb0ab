//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// aptMu serializes package installs: apt-get holds its own lock and a
// second install at the same time fails instead of waiting.
var (
	aptMu      sync.Mutex
	aptUpdated bool
)

// needDebian makes sure each command in cmds is on PATH (or at the path
// given), installing the Debian packages pkgs with apt-get when one is
// missing. Without root, or when apt-get fails, the test is skipped with
// a message that names what is missing and how to install it: the suite
// runs real servers where it can and says so where it cannot.
func needDebian(t *testing.T, cmds []string, pkgs ...string) {
	t.Helper()
	missing := func() []string {
		var out []string
		for _, c := range cmds {
			if strings.HasPrefix(c, "/") {
				if _, err := os.Stat(c); err != nil {
					out = append(out, c)
				}
			} else if _, err := exec.LookPath(c); err != nil {
				out = append(out, c)
			}
		}
		return out
	}
	if len(missing()) == 0 {
		return
	}
	aptMu.Lock()
	defer aptMu.Unlock()
	if m := missing(); len(m) == 0 {
		return
	} else if os.Geteuid() != 0 {
		t.Skipf("skipped: %s not installed and not root (apt-get install %s)", strings.Join(m, ", "), strings.Join(pkgs, " "))
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out, 2000))
		}
		return nil
	}
	t.Logf("installing Debian packages %s", strings.Join(pkgs, " "))
	if !aptUpdated {
		if err := run("update"); err != nil {
			t.Skipf("skipped: cannot install %s: %v", strings.Join(pkgs, " "), err)
		}
		aptUpdated = true
	}
	if err := run(append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...); err != nil {
		t.Skipf("skipped: cannot install %s: %v", strings.Join(pkgs, " "), err)
	}
	if m := missing(); len(m) != 0 {
		t.Skipf("skipped: %s still missing after installing %s", strings.Join(m, ", "), strings.Join(pkgs, " "))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
