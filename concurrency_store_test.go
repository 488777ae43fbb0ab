package anamnesis

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anamnesis-memory/anamnesis/index"
)

// TestIndexReplacedWhileInUse: one Store serves several goroutines (the
// web UI and the MCP server share one) while a repair replaces its index
// (here the read-only path's temporary index, the swap every repair
// makes). Run under -race (make race, in CI) this failed on the bare
// field; every reader must keep working or fail cleanly, never race.
func TestIndexReplacedWhileInUse(t *testing.T) {
	home, n := homeWithOneNote(t)
	s, _ := openHome(t, home)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var served atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				hits, err := s.Search(ctx, seedQuery, index.Filter{})
				switch {
				case err == nil && len(hits) == 1 && hits[0].ID == n.ID:
					served.Add(1)
				case err != nil && strings.Contains(err.Error(), "closed"):
					// the old index closed under an operation: clean
				default:
					t.Errorf("search during a swap: %v %v", hitIDs(hits), err)
					return
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		if err := s.useTemporaryIndex(ctx, "replaced by the test"); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if hits, err := s.Search(ctx, seedQuery, index.Filter{}); err != nil || len(hits) != 1 {
		t.Fatalf("after the swaps: %v %v", hitIDs(hits), err)
	}
	t.Logf("%d searches answered during the swaps", served.Load())
}
