package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLogBufferStampsWholeLines(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 5e6, time.UTC)
	b := NewLogBuffer(42, func() time.Time { return at })
	fmt.Fprint(b, "sync: remote ")
	fmt.Fprint(b, "hub\nsync: ok\nno newline")
	want := "2026-11-22T10:00:00.005Z pid 42 sync: remote hub\n" +
		"2026-11-22T10:00:00.005Z pid 42 sync: ok\n" +
		"2026-11-22T10:00:00.005Z pid 42 no newline\n"
	if got := string(b.Bytes()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestAppendLogConcurrentWithRotation: many appenders (each with its own
// open file, as separate processes have) add blocks to one log that is
// rotated many times meanwhile. Every block must stay whole and in one
// piece, both files stay within the bound, and the log is 0600 even
// though an older version created it 0644.
func TestAppendLogConcurrentWithRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sync.log")
	os.WriteFile(p, []byte("old\n"), 0o644)
	const max = 4096
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				var block strings.Builder
				for l := 0; l < 5; l++ {
					fmt.Fprintf(&block, "w%d b%d line %d %s\n", w, i, l, strings.Repeat("x", 40))
				}
				if err := AppendLog(p, []byte(block.String()), max); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, f := range []string{p, p + ".1"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v", f, fi.Size(), fi.Mode().Perm())
		}
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines)%5 != 0 {
			t.Errorf("%s: %d lines, not whole blocks", f, len(lines))
		}
		for i := 0; i+4 < len(lines); i += 5 {
			var w, b int
			fmt.Sscanf(lines[i], "w%d b%d", &w, &b)
			for l := 0; l < 5; l++ {
				if want := fmt.Sprintf("w%d b%d line %d %s", w, b, l, strings.Repeat("x", 40)); lines[i+l] != want {
					t.Fatalf("%s: block broken at line %d: %q", f, i+l, lines[i+l])
				}
			}
		}
	}
}
