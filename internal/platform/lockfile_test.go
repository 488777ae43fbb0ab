package platform

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileLockWaitsNamesAndReleases: a second AcquireFile waits for the
// first holder, tells whom it waits for once, gives up after Wait with
// ErrLockWait, and takes the lock once the first lets go; LockHolder
// reads what the holder wrote and whether it holds it now.
func TestFileLockWaitsNamesAndReleases(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	ctx := context.Background()
	a, err := AcquireFile(ctx, p, LockOptions{Holder: "123 sync"})
	if err != nil {
		t.Fatal(err)
	}
	if h, held, err := LockHolder(p); err != nil || !held || h != "123 sync" {
		t.Fatalf("holder %q held %v err %v", h, held, err)
	}
	var told []string
	_, err = AcquireFile(ctx, p, LockOptions{Wait: 150 * time.Millisecond, NoticeAfter: 50 * time.Millisecond, Waiting: func(h string) { told = append(told, h) }})
	if !errors.Is(err, ErrLockWait) || len(told) != 1 || told[0] != "123 sync" {
		t.Fatalf("a wait past its bound: %v, told %q", err, told)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(100 * time.Millisecond)
		a.Release()
	}()
	if waited, err := WaitFile(ctx, p, LockOptions{}); err != nil || !waited {
		t.Fatalf("WaitFile: waited %v, %v", waited, err)
	}
	<-released
	b, err := AcquireFile(ctx, p, LockOptions{Wait: time.Second, Holder: "7"})
	if err != nil {
		t.Fatal(err)
	}
	// The shorter holder overwrites the longer one in full: no "7 sync".
	if h, _, _ := LockHolder(p); h != "7" || strings.Contains(h, "sync") {
		t.Errorf("holder after a shorter one: %q", h)
	}
	b.Release()
	if _, held, _ := LockHolder(p); held {
		t.Error("still held after Release")
	}
	if waited, err := WaitFile(ctx, filepath.Join(t.TempDir(), "none"), LockOptions{}); waited || err != nil {
		t.Errorf("a missing lock file: waited %v, %v", waited, err)
	}
}
