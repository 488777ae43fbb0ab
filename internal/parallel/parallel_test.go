package parallel

import (
	"context"
	"sync/atomic"
	"testing"
)

// Every index is done exactly once, whatever the number of workers.
func TestForDoesEachIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 8, 1000} {
		const n = 10007
		counts := make([]atomic.Int32, n)
		if err := For(context.Background(), n, workers, func(i int) { counts[i].Add(1) }); err != nil {
			t.Fatal(err)
		}
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("workers %d: index %d done %d times", workers, i, c)
			}
		}
	}
}

// A context that ends stops the loop and is reported.
func TestForStopsWhenCancelled(t *testing.T) {
	for _, workers := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		var done atomic.Int32
		err := For(ctx, 1_000_000, workers, func(i int) {
			if done.Add(1) == 100 {
				cancel()
			}
		})
		if err == nil || done.Load() >= 1_000_000 {
			t.Errorf("workers %d: err %v after %d calls", workers, err, done.Load())
		}
	}
}
