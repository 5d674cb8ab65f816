package keyed_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
)

func Example() {
	// 2 requests per second per client IP, burst 2.
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "per-ip"}, Limit: admit.PerSecond(2)})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ip := range []string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "198.51.100.7"} {
		d, err := lim.Allow(context.Background(), admit.Request{Key: ip, N: 1, At: now})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-13s allowed=%-5v remaining=%d retry-after=%v\n", ip, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// 192.0.2.1     allowed=true  remaining=1 retry-after=0s
	// 192.0.2.1     allowed=true  remaining=0 retry-after=0s
	// 192.0.2.1     allowed=false remaining=0 retry-after=500ms
	// 198.51.100.7  allowed=true  remaining=1 retry-after=0s
}

func ExampleLimiter_Allow_tiers() {
	// One limiter, two tiers: the limit comes with each call.
	tiers := map[string]admit.Limit{
		"free": admit.PerMinute(3),
		"pro":  admit.PerMinute(100),
	}
	lim, err := keyed.New(keyed.Config{Limit: tiers["free"]})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tenant := range []struct{ name, tier string }{{"acme", "pro"}, {"bob", "free"}} {
		admitted := 0
		for range 10 {
			d, _ := lim.Allow(context.Background(), admit.Request{Key: tenant.name, N: 1, Limit: tiers[tenant.tier], At: now})
			if d.Allowed {
				admitted++
			}
		}
		fmt.Printf("%s (%s, %v): %d of 10 admitted\n", tenant.name, tenant.tier, tiers[tenant.tier], admitted)
	}
	// Output:
	// acme (pro, 100/min): 10 of 10 admitted
	// bob (free, 3/min): 3 of 10 admitted
}

func ExampleLimiter_Refund() {
	// 3 per minute per user; a request admitted here but refused further
	// on (by another limit, or a failed upstream call) is given back.
	lim, err := keyed.New(keyed.Config{Limit: admit.PerMinute(3)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d, _ := lim.Allow(ctx, admit.Request{Key: "user-7", N: 2, At: now})
	fmt.Println("admitted 2, remaining", d.Remaining)
	if err := lim.Refund(ctx, admit.Request{Key: "user-7", N: 2, At: now}); err != nil {
		panic(err)
	}
	d, _ = lim.Allow(ctx, admit.Request{Key: "user-7", N: 0, At: now}) // a peek
	fmt.Println("given back 2, remaining", d.Remaining)
	// Output:
	// admitted 2, remaining 1
	// given back 2, remaining 3
}

func ExampleLimiter_Allow_delay() {
	// 10 per second, burst 2, and requests that may wait up to 250ms for
	// their slot (nginx's limit_req with burst= and delay=).
	lim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(10).WithBurst(2)})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 6 {
		d, err := lim.Allow(context.Background(), admit.Request{Key: "client", N: 1, At: now, MaxDelay: 250 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%-5v delay=%-5v retry-after=%v\n", d.Allowed, d.Delay, d.RetryAfter)
		// admit.Wait(ctx, lim, r, nil) would sleep d.Delay here.
	}
	// Output:
	// allowed=true  delay=0s    retry-after=0s
	// allowed=true  delay=0s    retry-after=0s
	// allowed=true  delay=100ms retry-after=0s
	// allowed=true  delay=200ms retry-after=0s
	// allowed=false delay=0s    retry-after=300ms
	// allowed=false delay=0s    retry-after=300ms
}
