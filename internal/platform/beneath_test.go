package platform

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckBeneathRefusesLinksBelowTheRoot: a link as a directory on the
// way or as the file itself is refused, naming it and its target; the
// root may be a link; missing components pass.
func TestCheckBeneathRefusesLinksBelowTheRoot(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	real := filepath.Join(base, "real")
	for _, d := range []string{outside, filepath.Join(real, "memory", "semantic")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home") // the home itself is a link: allowed
	if err := os.Symlink(real, home); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	mem := filepath.Join(home, "memory")
	if err := os.Symlink(outside, filepath.Join(mem, "episodic")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(mem, "semantic", "01HZZZZZZZZZZZZZZZZZZZZZZZ.md")); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{
		filepath.Join(mem, "semantic", "01HAAAAAAAAAAAAAAAAAAAAAAA.md"),
		filepath.Join(mem, "procedural", "01HAAAAAAAAAAAAAAAAAAAAAAA.md"), // type dir not there yet
		mem,
	} {
		if err := CheckBeneath(mem, ok); err != nil {
			t.Errorf("CheckBeneath(%s): %v", ok, err)
		}
	}
	for p, link := range map[string]string{
		filepath.Join(mem, "episodic", "01HAAAAAAAAAAAAAAAAAAAAAAA.md"): filepath.Join(mem, "episodic"),
		filepath.Join(mem, "episodic", "sub", "x.md"):                   filepath.Join(mem, "episodic"),
		filepath.Join(mem, "semantic", "01HZZZZZZZZZZZZZZZZZZZZZZZ.md"): filepath.Join(mem, "semantic", "01HZZZZZZZZZZZZZZZZZZZZZZZ.md"),
	} {
		err := CheckBeneath(mem, p)
		var le *LinkError
		if !errors.As(err, &le) || !errors.Is(err, ErrLink) || le.Link != link {
			t.Errorf("CheckBeneath(%s) = %v, want a LinkError naming %s", p, err, link)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, link) || !strings.Contains(msg, "to "+outside) || !strings.Contains(msg, FixLinks) || strings.Contains(msg, "\n") {
			t.Errorf("error %q should name %s, its target and the remedy on one line", msg, link)
		}
	}
	if err := CheckBeneath(mem, filepath.Join(base, "elsewhere")); err == nil || errors.Is(err, ErrLink) {
		t.Errorf("a path outside the root: %v", err)
	}
}
