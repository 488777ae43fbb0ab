//go:build unix

package platform

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// helper runs in the detached child: it records its session id.
func helper(what string) int {
	if what != "detached" {
		return 2
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		return 1
	}
	if err := os.WriteFile(os.Getenv("PLATFORM_OUT"), []byte(strconv.Itoa(sid)), 0o644); err != nil {
		return 1
	}
	return 0
}

// A detached child leads a session of its own, so the hook's terminal
// and process group signals do not reach it.
func checkDetached(t *testing.T, pid int, report string) {
	if report != strconv.Itoa(pid) {
		t.Errorf("detached child %d is in session %s, want its own", pid, report)
	}
}

func TestWritableRefusesReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere; access(2) says so")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o555)
	if err := Writable(dir); err == nil {
		t.Error("a 0555 directory counted as writable")
	}
}

func TestSyncFS(t *testing.T) {
	if !SyncFS(t.TempDir()) {
		t.Error("syncfs(2) or sync(2) is available on every Unix")
	}
	if !SyncFS(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a directory that cannot be opened falls back to sync(2)")
	}
}

// A call a signal interrupted is made again; any other answer is final.
func TestIgnoringEINTR(t *testing.T) {
	calls := 0
	err := IgnoringEINTR(func() error {
		calls++
		if calls < 3 {
			return unix.EINTR
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("after two interruptions: %v, %d calls", err, calls)
	}
	calls = 0
	if err := IgnoringEINTR(func() error { calls++; return unix.ENOENT }); !errors.Is(err, unix.ENOENT) || calls != 1 {
		t.Errorf("another error: %v, %d calls", err, calls)
	}
}
