package prefetch_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/prefetch"
)

// A tenant asks 40 times a second of a limit of 20 per second (burst 10)
// kept in a shared store; the instance spends blocks taken from the store
// and asks it once per block instead of once per request. (The store here
// is an in-memory keyed.Limiter standing for a redisstore.Limiter, and the
// instants are explicit, so that the output is exact.)
func Example() {
	ctx := context.Background()
	store, _ := keyed.New(keyed.Config{Limit: admit.Limit{Rate: 20, Period: time.Second, Burst: 10}})
	lim, _ := prefetch.New(prefetch.Config{Store: store, Interval: 200 * time.Millisecond})
	admitted := 0
	for i := range 80 { // two seconds
		at := admittest.At(time.Duration(i) * 25 * time.Millisecond)
		if d, _ := lim.Allow(ctx, admit.Request{Key: "tenant-a", N: 1, At: at}); d.Allowed {
			admitted++
		}
	}
	_ = lim.Close(ctx)
	s := lim.Stats()
	fmt.Printf("admitted %d of 80 (the bound: 10 + 2s × 20/s = 50)\n", admitted)
	fmt.Printf("store calls: %d blocks and %d single requests, for %d from blocks\n", s.Blocks, s.Strict, s.Local)
	// Output:
	// admitted 46 of 80 (the bound: 10 + 2s × 20/s = 50)
	// store calls: 14 blocks and 1 single requests, for 45 from blocks
}
