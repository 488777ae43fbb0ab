//go:build windows

package platform

import (
	"os"
	"testing"

	"golang.org/x/sys/windows"
)

// helper runs in the detached child: it records whether it has a
// console (DETACHED_PROCESS means it has none, so no window opens).
func helper(what string) int {
	if what != "detached" {
		return 2
	}
	report := "console"
	// x/sys/windows does not wrap GetConsoleWindow.
	hwnd, _, _ := windows.NewLazySystemDLL("kernel32.dll").NewProc("GetConsoleWindow").Call()
	if hwnd == 0 {
		report = "no console"
	}
	if err := os.WriteFile(os.Getenv("PLATFORM_OUT"), []byte(report), 0o644); err != nil {
		return 1
	}
	return 0
}

func checkDetached(t *testing.T, pid int, report string) {
	if report != "no console" {
		t.Errorf("detached child %d reports %q, want no console", pid, report)
	}
}

func TestSyncFS(t *testing.T) {
	if SyncFS(t.TempDir()) {
		t.Error("Windows has no sync(2); callers must fsync each file")
	}
}
