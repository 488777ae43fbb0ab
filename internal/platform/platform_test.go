package platform

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the helper process of the cross-process
// tests: PLATFORM_HELPER names what it should do.
func TestMain(m *testing.M) {
	switch os.Getenv("PLATFORM_HELPER") {
	case "":
		os.Exit(m.Run())
	case "hold":
		// Take the lock, say so, and hold it until killed.
		f, err := os.OpenFile(os.Getenv("PLATFORM_LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = TryLock(f, true)
		}
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		f.WriteAt([]byte("held by helper\n"), 0)
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	default:
		os.Exit(helper(os.Getenv("PLATFORM_HELPER")))
	}
}

func openLock(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Locks belong to the open file, as flock's do: two opens of one path
// in one process exclude each other, which the repository lock's tests
// and callers rely on.
func TestLockExcludesSecondOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, b := openLock(t, p), openLock(t, p)
	if err := TryLock(a, true); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("second exclusive lock: %v, want ErrLocked", err)
	}
	if err := TryLock(b, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("shared lock beside an exclusive one: %v, want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b, true); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	Unlock(b)
}

func TestSharedLocksCoexist(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, b, c := openLock(t, p), openLock(t, p), openLock(t, p)
	if err := TryLock(a, false); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b, false); err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	if err := TryLock(c, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("exclusive lock beside shared ones: %v, want ErrLocked", err)
	}
}

func TestCloseReleasesLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := TryLock(a, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := openLock(t, p)
	if err := TryLock(b, true); err != nil {
		t.Fatalf("lock after the holder closed its file: %v", err)
	}
}

func TestLockWaits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	a, b := openLock(t, p), openLock(t, p)
	if err := TryLock(a, true); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(100 * time.Millisecond)
		Unlock(a)
	}()
	start := time.Now()
	err := Lock(b)
	<-released // the cleanup closes a: not while the goroutine still uses it
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Lock returned after %v, before the holder let go", d)
	}
}

// A lock held by another process excludes this one, the holder's pid
// written at the start of the file stays readable (Windows locks are
// mandatory for the bytes they cover), and killing the holder frees the
// lock with no stale file to clean up.
func TestLockAcrossProcessesAndKill(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=hold", "PLATFORM_LOCK="+p)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if got := string(buf[:n]); got != "locked\n" {
		t.Fatalf("helper said %q", got)
	}
	f := openLock(t, p)
	if err := TryLock(f, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("lock held by another process: %v, want ErrLocked", err)
	}
	data, err := os.ReadFile(p)
	if err != nil || !strings.HasPrefix(string(data), "held by helper") {
		t.Fatalf("reading the holder's note while it holds the lock: %q, %v", data, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := TryLock(f, true)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			t.Fatalf("lock after its holder was killed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRenameReplaces(t *testing.T) {
	dir := t.TempDir()
	oldp, newp := filepath.Join(dir, "tmp"), filepath.Join(dir, "note.md")
	os.WriteFile(oldp, []byte("new"), 0o644)
	os.WriteFile(newp, []byte("old"), 0o644)
	if err := Rename(oldp, newp); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(newp); string(data) != "new" {
		t.Errorf("after rename the file holds %q", data)
	}
	if _, err := os.Stat(oldp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("source still there: %v", err)
	}
}

// A reader holding the old file open must not make a writer fail: on
// Unix the rename goes through at once and the reader keeps the old
// contents; on Windows it waits for the reader to close.
func TestRenameOverOpenFile(t *testing.T) {
	dir := t.TempDir()
	oldp, newp := filepath.Join(dir, "tmp"), filepath.Join(dir, "note.md")
	os.WriteFile(oldp, []byte("new"), 0o644)
	os.WriteFile(newp, []byte("old"), 0o644)
	r, err := os.Open(newp)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		r.Close()
	}()
	if err := Rename(oldp, newp); err != nil {
		t.Fatalf("rename over an open file: %v", err)
	}
	if data, _ := os.ReadFile(newp); string(data) != "new" {
		t.Errorf("after rename the file holds %q", data)
	}
}

func TestRenameMissingSource(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	err := Rename(filepath.Join(dir, "absent"), filepath.Join(dir, "x"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rename of a missing file: %v, want ErrNotExist", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a missing source was retried for %v", d)
	}
}

func TestWritable(t *testing.T) {
	dir := t.TempDir()
	if err := Writable(dir); err != nil {
		t.Errorf("a fresh temporary directory: %v", err)
	}
	if err := Writable(filepath.Join(dir, "absent")); err == nil {
		t.Error("a missing directory counted as writable")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("Writable left %d entries behind", len(entries))
	}
}

func TestDetachedProcessRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=detached", "PLATFORM_OUT="+out)
	Detach(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("detached helper: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkDetached(t, cmd.Process.Pid, strings.TrimSpace(string(data)))
}
