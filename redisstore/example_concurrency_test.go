package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
	"github.com/admit-go/admit/redisstore"
)

// At most two exports in flight per customer, across every instance of a
// service. Slots not released within a minute (a crashed instance) come
// back by themselves.
func ExampleStore_Concurrency() {
	client := exampleClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	exports, err := store.Concurrency(redisstore.ConcurrencyConfig{Options: admit.Options{Name: "exports"}, Max: 2, Lease: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var leases []redisstore.Lease
	for i := range 3 {
		lease, d, err := exports.TryAcquire(ctx, admit.Request{Key: "acme", N: 1})
		if err != nil {
			panic(err) // Redis failed, or bad input
		}
		fmt.Printf("export %d: allowed=%v remaining=%d\n", i, d.Allowed, d.Remaining)
		if d.Allowed {
			leases = append(leases, lease)
		}
	}
	// The first export ends.
	released, _ := leases[0].Release(ctx)
	again, _ := leases[0].Release(ctx)
	fmt.Println("released:", released, "again:", again)
	_, d, _ := exports.TryAcquire(ctx, admit.Request{Key: "acme", N: 1})
	fmt.Printf("export 3: allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	// Output:
	// export 0: allowed=true remaining=1
	// export 1: allowed=true remaining=0
	// export 2: allowed=false remaining=0
	// released: true again: false
	// export 3: allowed=true remaining=0
}

// Acquire waits for a slot, polling Redis, until its context ends.
func ExampleConcurrencyLimiter_Acquire() {
	client := exampleClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	reports, err := store.Concurrency(redisstore.ConcurrencyConfig{Options: admit.Options{Name: "reports"}, Max: 1})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _, _ := reports.TryAcquire(ctx, admit.Request{Key: "", N: 1}) // the empty key: one global limit
	go func() {
		time.Sleep(20 * time.Millisecond) // the first report takes a while
		first.Release(ctx)
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	second, d, err := reports.Acquire(wctx, admit.Request{Key: "", N: 1})
	if err != nil {
		fmt.Println("gave up:", err)
		return
	}
	defer second.Release(ctx)
	fmt.Println("second report: allowed", d.Allowed)
	// Output:
	// second report: allowed true
}

// A daily quota of 3 exports per customer from midnight in Paris, kept in
// Redis: it survives restarts of the service and is shared by its
// instances. AllowAt decides at explicit instants (here on the weekend
// the clocks go forward: Sunday 30 March 2025 lasts 23 hours); Allow
// decides on Redis's clock.
func ExampleStore_Quota() {
	client := exampleClient()
	defer client.Close()
	// The instants of this example are in the past on Redis's clock, where
	// their periods have ended: keep the counts an hour.
	store, err := redisstore.New(client, redisstore.Config{MinTTL: time.Hour})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	exports, err := store.Quota(redisstore.QuotaConfig{Options: admit.Options{Name: "exports"}, Limit: 3, Period: quota.Day, Location: paris})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	show := func(now time.Time, n int64) {
		d, err := exports.Allow(ctx, admit.Request{Key: "acme", N: n, At: now})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s n=%d allowed=%-5v remaining=%d", now.Format("Mon 15:04"), n, d.Allowed, d.Remaining)
		if !d.Allowed {
			fmt.Printf(" retry in %v", d.RetryAfter)
		}
		fmt.Printf(" (day of %v)\n", d.Limit.Period)
	}
	sat := time.Date(2025, 3, 29, 21, 0, 0, 0, paris)
	show(sat, 2)
	show(sat.Add(time.Hour), 2)
	show(sat.Add(time.Hour), 1)
	show(time.Date(2025, 3, 30, 9, 0, 0, 0, paris), 3)
	// Output:
	// Sat 21:00 n=2 allowed=true  remaining=1 (day of 24h0m0s)
	// Sat 22:00 n=2 allowed=false remaining=1 retry in 2h0m0s (day of 24h0m0s)
	// Sat 22:00 n=1 allowed=true  remaining=0 (day of 24h0m0s)
	// Sun 09:00 n=3 allowed=true  remaining=0 (day of 23h0m0s)
}

// A monthly quota on Redis's clock, with a refund for a request that a
// later check refused.
func ExampleQuota_Refund() {
	client := exampleClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	calls, err := store.Quota(redisstore.QuotaConfig{Options: admit.Options{Name: "calls"}, Limit: 1000, Period: quota.Month})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	d, _ := calls.Allow(ctx, admit.Request{Key: "acme", N: 10})
	fmt.Println("allowed:", d.Allowed, "remaining:", d.Remaining)
	// The request was refused further on: give its 10 calls back.
	if err := calls.Refund(ctx, admit.Request{Key: "acme", N: 10}); err != nil {
		panic(err)
	}
	d, _ = calls.Allow(ctx, admit.Request{Key: "acme", N: 0}) // a peek
	fmt.Println("after the refund:", d.Remaining)
	// Output:
	// allowed: true remaining: 990
	// after the refund: 1000
}
