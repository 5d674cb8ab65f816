package compose_test

import (
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// BenchmarkGuard measures what a Guard adds to a healthy primary (a
// keyed.Limiter, one key, always admitting): compare "keyed" with
// "guard/no-timeout" (the Guard's own cost: two atomic loads and a context
// check) and "guard/timeout" (plus context.WithTimeout per call, as for a
// Redis primary). "breaker-open" is the cost of a decision while the store
// is down: a clock read and FailOpen's decision.
func BenchmarkGuard(b *testing.B) {
	newKeyed := func(b *testing.B) *keyed.Limiter {
		lim, err := keyed.New(admit.AlgGCRA, admit.PerSecond(1e9))
		if err != nil {
			b.Fatal(err)
		}
		return lim
	}
	cases := []struct {
		name string
		lim  func(b *testing.B) compose.Limiter
	}{
		{"keyed", func(b *testing.B) compose.Limiter { return newKeyed(b) }},
		{"guard/no-timeout", func(b *testing.B) compose.Limiter {
			return mustGuard(b, newKeyed(b), compose.Breaker(compose.FailOpen), compose.WithTimeout(0))
		}},
		{"guard/timeout", func(b *testing.B) compose.Limiter {
			return mustGuard(b, newKeyed(b), compose.Breaker(compose.FailOpen))
		}},
		{"guard/breaker-open", func(b *testing.B) compose.Limiter {
			g := mustGuard(b, newPrimary(down), compose.Breaker(compose.FailOpen), compose.WithThreshold(1))
			g.Allow(ctx, "key-42", 1)
			return g
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			lim := c.lim(b)
			b.ReportAllocs()
			for b.Loop() {
				lim.Allow(ctx, "key-42", 1)
			}
		})
	}
	for _, c := range cases[:2] {
		b.Run(c.name+"/parallel", func(b *testing.B) {
			lim := c.lim(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					lim.Allow(ctx, "key-42", 1)
				}
			})
		})
	}
}
