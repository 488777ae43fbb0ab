package gitsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anamnesis-memory/anamnesis/internal/testutil"
)

// TestLargeCheckoutStopsAtTheFirstFailedFile: when one file of a large
// checkout cannot be put in place, the sync says which and stops there,
// main does not move, and the next sync completes the checkout.
func TestLargeCheckoutStopsAtTheFirstFailedFile(t *testing.T) {
	hub := testutil.BareHub(t)
	a, b := newMachine(t, "a", hub), newMachine(t, "b", hub)
	for i := 0; i < 300; i++ {
		a.write(mkNote(a, fmt.Sprintf("note %d", i), "body"))
	}
	a.sync()
	var calls atomic.Int32
	var blocked string
	var once sync.Once
	b.repo.checkoutTemp = func(tmp string) {
		if calls.Add(1) == 20 {
			once.Do(func() {
				// A directory with something in it where the file goes:
				// the rename fails.
				blocked = strings.TrimSuffix(tmp, ".anamnesis-tmp")
				os.MkdirAll(filepath.Join(blocked, "x"), 0o755)
			})
		}
	}
	_, err := b.repo.Sync(ctx, Options{Remote: hub, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(blocked)) {
		t.Fatalf("sync: %v, want an error naming %s", err, blocked)
	}
	if n := calls.Load(); n != 20 {
		t.Errorf("%d files were written, want the checkout to stop at the 20th", n)
	}
	if head, _ := b.repo.Head(); !head.IsZero() {
		t.Errorf("main moved to %s though the checkout failed", head)
	}
	b.repo.checkoutTemp = nil
	os.RemoveAll(blocked)
	b.sync()
	sameTrees(t, a, b)
	b.fsck()
}
