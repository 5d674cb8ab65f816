package concurrency_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/concurrency"
)

func ExampleLimiter_TryAcquire() {
	// At most 4 slots in flight; an export weighs 3, a query 1. The empty
	// key is the global limit.
	lim, err := concurrency.New(concurrency.Config{Max: 4})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	export, d, _ := lim.TryAcquire(ctx, admit.Request{Key: "", N: 3})
	fmt.Printf("export: allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	query, d, _ := lim.TryAcquire(ctx, admit.Request{Key: "", N: 1})
	fmt.Printf("query:  allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	_, d, _ = lim.TryAcquire(ctx, admit.Request{Key: "", N: 1})
	fmt.Printf("query:  allowed=%v remaining=%d\n", d.Allowed, d.Remaining)

	export.Release()
	export.Release() // harmless
	_, d, _ = lim.TryAcquire(ctx, admit.Request{Key: "", N: 3})
	fmt.Printf("export: allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	query.Release()
	// Output:
	// export: allowed=true remaining=1
	// query:  allowed=true remaining=0
	// query:  allowed=false remaining=0
	// export: allowed=true remaining=0
}

func Example_lease() {
	// A manual clock makes the example deterministic; real code leaves the
	// default, the system clock.
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, _ := concurrency.New(concurrency.Config{Options: admit.Options{Clock: clk}, Max: 1, Lease: 30 * time.Second})
	ctx := context.Background()

	crashed, _, _ := lim.TryAcquire(ctx, admit.Request{Key: "tenant-7", N: 1}) // never released
	clk.Advance(10 * time.Second)
	_, d, _ := lim.TryAcquire(ctx, admit.Request{Key: "tenant-7", N: 1})
	fmt.Printf("at 10s: allowed=%v retry-after=%v\n", d.Allowed, d.RetryAfter)

	clk.Advance(20 * time.Second) // the lease expires: the slot is reclaimed
	p, d, _ := lim.TryAcquire(ctx, admit.Request{Key: "tenant-7", N: 1})
	fmt.Printf("at 30s: allowed=%v\n", d.Allowed)
	fmt.Println("late release of the crashed holder:", crashed.Release())
	n, _ := lim.InFlight(ctx, "tenant-7")
	fmt.Println("in flight:", n)
	p.Release()
	fmt.Printf("keys: %d, reclaimed: %d\n", lim.Stats().Keys, lim.Stats().Reclaimed)
	// Output:
	// at 10s: allowed=false retry-after=20s
	// at 30s: allowed=true
	// late release of the crashed holder: false
	// in flight: 1
	// keys: 0, reclaimed: 1
}

func ExampleLimiter_Acquire() {
	lim, _ := concurrency.New(concurrency.Config{Max: 2, MaxWaiters: 10})
	ctx := context.Background()

	held, _, _ := lim.Acquire(ctx, admit.Request{Key: "db", N: 2}) // free: at once
	done := make(chan string)
	go func() {
		p, d, err := lim.Acquire(ctx, admit.Request{Key: "db", N: 1}) // waits for a slot
		done <- fmt.Sprint("waiter: allowed=", d.Allowed, " err=", err)
		p.Release()
	}()
	for lim.Waiting("db") == 0 {
		runtime.Gosched()
	}
	fmt.Println("waiting:", lim.Waiting("db"))
	held.Release() // serves the waiter
	fmt.Println(<-done)
	// Output:
	// waiting: 1
	// waiter: allowed=true err=<nil>
}

func ExampleLimiter_Acquire_tiers() {
	// One Limiter for every tier: the limit comes with each call.
	lim, _ := concurrency.New(concurrency.Config{Max: 1})
	tiers := map[string]int64{"free": 1, "pro": 3}
	ctx := context.Background()
	for _, tenant := range []string{"free", "free", "pro", "pro", "pro", "pro"} {
		_, d, err := lim.TryAcquire(ctx, admit.Request{Key: tenant, N: 1, Limit: admit.Limit{Rate: tiers[tenant]}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-4s allowed=%-5v remaining=%d limit=%d\n", tenant, d.Allowed, d.Remaining, d.Limit.Burst)
	}
	// Output:
	// free allowed=true  remaining=0 limit=1
	// free allowed=false remaining=0 limit=1
	// pro  allowed=true  remaining=2 limit=3
	// pro  allowed=true  remaining=1 limit=3
	// pro  allowed=true  remaining=0 limit=3
	// pro  allowed=false remaining=0 limit=3
}
