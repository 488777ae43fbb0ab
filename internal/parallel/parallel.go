package parallel

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls do(0) … do(n-1), each once, on up to workers goroutines
// (never more than GOMAXPROCS; one or fewer runs them on the caller's
// goroutine), and returns ctx's error if it ended first: some calls were
// then not made. Indexes are handed out one at a time from a shared
// counter, so a slow call holds up no other. do must be safe to run
// concurrently for different indexes.
func For(ctx context.Context, n, workers int, do func(i int)) error {
	workers = min(workers, runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			do(i)
		}
		return ctx.Err()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}
