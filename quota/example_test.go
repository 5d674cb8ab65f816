package quota_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

// A daily quota of 3 exports per user, from midnight in Paris, on the
// weekend the clocks go forward: Sunday 30 March 2025 lasts 23 hours.
func Example() {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	q, err := quota.New(quota.Config{Options: admit.Options{Name: "exports"}, Limit: 3, Period: quota.Day, Location: paris})
	if err != nil {
		panic(err)
	}
	show := func(now time.Time, n int64) {
		d, _ := q.Allow(context.Background(), admit.Request{Key: "alice", N: n, At: now})
		fmt.Printf("%s n=%d allowed=%-5v remaining=%d", now.Format("Mon 15:04"), n, d.Allowed, d.Remaining)
		if !d.Allowed {
			fmt.Printf(" retry in %v", d.RetryAfter)
		}
		fmt.Printf(" (day of %v, resets %s)\n", d.Limit.Period, now.Add(d.ResetAfter).In(paris).Format("Mon 15:04 MST"))
	}
	sat := time.Date(2025, 3, 29, 21, 0, 0, 0, paris)
	show(sat, 2)
	show(sat.Add(time.Hour), 2)
	show(sat.Add(time.Hour), 1)
	sun := time.Date(2025, 3, 30, 9, 0, 0, 0, paris)
	show(sun, 3)
	show(sun, 0) // a peek
	// Output:
	// Sat 21:00 n=2 allowed=true  remaining=1 (day of 24h0m0s, resets Sun 00:00 CET)
	// Sat 22:00 n=2 allowed=false remaining=1 retry in 2h0m0s (day of 24h0m0s, resets Sun 00:00 CET)
	// Sat 22:00 n=1 allowed=true  remaining=0 (day of 24h0m0s, resets Sun 00:00 CET)
	// Sun 09:00 n=3 allowed=true  remaining=0 (day of 23h0m0s, resets Mon 00:00 CEST)
	// Sun 09:00 n=0 allowed=true  remaining=0 (day of 23h0m0s, resets Mon 00:00 CEST)
}

// A monthly quota is not a daily rate: the whole month's quota is there on
// the first, and nothing comes back until the next month.
func ExampleNew() {
	q, err := quota.New(quota.Config{Limit: 30000, Period: quota.Month}) // per calendar month, in UTC
	if err != nil {
		panic(err)
	}
	feb1 := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	d, _ := q.Allow(context.Background(), admit.Request{Key: "acme", N: 30000, At: feb1})
	fmt.Println("1 Feb, all at once:", d.Allowed, d.Remaining)
	d, _ = q.Allow(context.Background(), admit.Request{Key: "acme", N: 1, At: feb1.Add(20 * 24 * time.Hour)})
	fmt.Println("21 Feb:", d.Allowed, "retry in", d.RetryAfter)
	d, _ = q.Allow(context.Background(), admit.Request{Key: "acme", N: 1, At: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)})
	fmt.Println("1 Mar:", d.Allowed, d.Remaining, "month of", int64(d.Limit.Period/(24*time.Hour)), "days")
	// Output:
	// 1 Feb, all at once: true 0
	// 21 Feb: false retry in 192h0m0s
	// 1 Mar: true 29999 month of 31 days
}

// One Quota serves every tier of a plan: each call gives its key's size.
func ExampleQuota_Allow_tiers() {
	q, err := quota.New(quota.Config{Limit: 100, Period: quota.Month}) // 100 for calls that give no size
	if err != nil {
		panic(err)
	}
	tiers := map[string]int64{"free": 2, "pro": 1000}
	customers := []struct{ key, tier string }{{"ann", "free"}, {"ann", "free"}, {"ann", "free"}, {"bob", "pro"}}
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	for _, c := range customers {
		d, _ := q.Allow(context.Background(), admit.Request{Key: c.key, N: 1, Limit: admit.Limit{Rate: tiers[c.tier]}, At: now})
		fmt.Printf("%s (%s): allowed=%v remaining=%d of %d\n", c.key, c.tier, d.Allowed, d.Remaining, d.Limit.Rate)
	}
	// Output:
	// ann (free): allowed=true remaining=1 of 2
	// ann (free): allowed=true remaining=0 of 2
	// ann (free): allowed=false remaining=0 of 2
	// bob (pro): allowed=true remaining=999 of 1000
}

// A request that a later check refuses gives its events back.
func ExampleQuota_Refund() {
	q, _ := quota.New(quota.Config{Limit: 10, Period: quota.Day})
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	d, _ := q.Allow(context.Background(), admit.Request{Key: "k", N: 4, At: now})
	fmt.Println("remaining", d.Remaining)
	// ... a rate limit checked after the quota refuses the request:
	_ = q.Refund(context.Background(), admit.Request{Key: "k", N: 4, At: now})
	d, _ = q.Allow(context.Background(), admit.Request{Key: "k", N: 0, At: now}) // peek
	fmt.Println("remaining", d.Remaining)
	// Output:
	// remaining 6
	// remaining 10
}
