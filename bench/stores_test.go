package bench

// Store-based libraries with one key: throttled/v2 (memstore, GCRA),
// sethvargo/go-limiter (memorystore, token bucket) and ulule/limiter/v3
// (memory store, fixed window), against admit's GCRA.
//
// These libraries take a key and read the clock themselves, so admit is
// called in its clock-reading form, Allow(), and each library is called
// through its ordinary API with one key, "k". All run 1e9 events per
// second and admit every call: the clock moves on between calls, and the
// burst (1e9 where the library has one) is never exhausted. Each library is
// given its fastest documented configuration: throttled's memstore without
// the LRU bound (maxKeys 0), and go-limiter's and ulule's defaults
// otherwise.
//
// go-limiter needs one exception. Its bucket refills only when an interval
// ends, and then to (ticks elapsed × Interval/Tokens) tokens, which for
// 1e9 per second is 1 token, so after its first second it would deny. It
// therefore runs 3.6e12 tokens per hour (the same 1e9/s), and its first
// interval outlasts the run.
//
// admit's keyed limiters (package keyed) are not compared here yet.

import (
	"context"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

func BenchmarkStoreOneKey(b *testing.B) {
	ctx := context.Background()
	b.Run("admit-gcra", func(b *testing.B) {
		g := mustGCRA(b, admitHigh)
		b.ReportAllocs()
		for b.Loop() {
			if !g.Allow() {
				b.Fatal("denied")
			}
		}
	})
	b.Run("throttled", func(b *testing.B) {
		st, err := memstore.NewCtx(0)
		if err != nil {
			b.Fatal(err)
		}
		// throttled admits MaxBurst+1 at once.
		q := throttled.RateQuota{MaxRate: throttled.PerSec(highRate), MaxBurst: highRate - 1}
		l, err := throttled.NewGCRARateLimiterCtx(st, q)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			limited, _, err := l.RateLimitCtx(ctx, "k", 1)
			if limited || err != nil {
				b.Fatal("denied", err)
			}
		}
	})
	b.Run("go-limiter", func(b *testing.B) {
		st, err := memorystore.New(&memorystore.Config{Tokens: 3600 * highRate, Interval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			_, _, _, ok, err := st.Take(ctx, "k")
			if !ok || err != nil {
				b.Fatal("denied", err)
			}
		}
	})
	b.Run("ulule", func(b *testing.B) {
		l := limiter.New(memory.NewStore(), limiter.Rate{Period: time.Second, Limit: highRate})
		b.ReportAllocs()
		for b.Loop() {
			c, err := l.Get(ctx, "k")
			if c.Reached || err != nil {
				b.Fatal("denied", err)
			}
		}
	})
}
