package compose_test

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
)

// BenchmarkGuard measures what a Guard adds to a healthy primary (a
// keyed.Limiter, one key, always admitting): compare "keyed" with
// "guard/no-timeout" (the Guard's own cost: two atomic loads and a context
// check) and "guard/timeout" (plus context.WithTimeout per call, as for a
// Redis primary); "guard/caller-deadline" is a caller whose own deadline
// comes first (as Envoy's calls do), which needs no context of the Guard's.
// "breaker-open" is the cost of a decision while the store
// is down: a clock read and FailOpen's decision.
func BenchmarkGuard(b *testing.B) {
	newKeyed := func(b *testing.B) *keyed.Limiter {
		lim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(1e9)})
		if err != nil {
			b.Fatal(err)
		}
		return lim
	}
	cases := []struct {
		name string
		lim  func(b *testing.B) admit.KeyedLimiter
	}{
		{"keyed", func(b *testing.B) admit.KeyedLimiter { return newKeyed(b) }},
		{"guard/no-timeout", func(b *testing.B) admit.KeyedLimiter {
			return mustGuard(b, newKeyed(b), compose.GuardConfig{Policy: compose.Breaker(compose.FailOpen), Timeout: -1})
		}},
		{"guard/timeout", func(b *testing.B) admit.KeyedLimiter {
			return mustGuard(b, newKeyed(b), compose.GuardConfig{Policy: compose.Breaker(compose.FailOpen)})
		}},
		{"guard/caller-deadline", func(b *testing.B) admit.KeyedLimiter {
			return mustGuard(b, newKeyed(b), compose.GuardConfig{Policy: compose.Breaker(compose.FailOpen), Timeout: time.Hour})
		}},
		{"guard/breaker-open", func(b *testing.B) admit.KeyedLimiter {
			g := mustGuard(b, newPrimary(down), compose.GuardConfig{Policy: compose.Breaker(compose.FailOpen), Threshold: 1})
			g.Allow(ctx, admit.Request{Key: "key-42", N: 1})
			return g
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			lim := c.lim(b)
			cctx := ctx
			if c.name == "guard/caller-deadline" {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				lim.Allow(cctx, admit.Request{Key: "key-42", N: 1})
			}
		})
	}
	for _, c := range cases[:2] {
		b.Run(c.name+"/parallel", func(b *testing.B) {
			lim := c.lim(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					lim.Allow(ctx, admit.Request{Key: "key-42", N: 1})
				}
			})
		})
	}
}

// BenchmarkAll measures a chain of three local keyed layers (GCRA, one key
// each, as per IP, per user and per tenant): "admit" when every layer
// admits, "refused-last" when the last refuses and the two before are
// refunded, "allow" through Chain.Allow (one key for all), and "slots"
// with a concurrency cap added (concurrency.Limiter.Slots, whose Releaser
// is the one allocation) and a Held released per request. Compare with
// BenchmarkGuard/keyed, one layer alone.
func BenchmarkAll(b *testing.B) {
	layer := func(b *testing.B, name string, l admit.Limit) compose.Layer {
		lim, err := keyed.New(keyed.Config{Limit: l})
		if err != nil {
			b.Fatal(err)
		}
		return compose.Layer{Name: name, Limiter: lim}
	}
	open := admit.PerSecond(1e9)
	keys := []string{"10.0.0.1", "user-42", "acme"}
	b.Run("admit", func(b *testing.B) {
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", open))
		b.ReportAllocs()
		for b.Loop() {
			c.AllowKeys(ctx, keys, 1, nil)
		}
	})
	b.Run("admit/parallel", func(b *testing.B) {
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", open))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.AllowKeys(ctx, keys, 1, nil)
			}
		})
	})
	b.Run("refused-last", func(b *testing.B) {
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", admit.Limit{}))
		b.ReportAllocs()
		for b.Loop() {
			c.AllowKeys(ctx, keys, 1, nil)
		}
	})
	b.Run("allow", func(b *testing.B) {
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", open))
		b.ReportAllocs()
		for b.Loop() {
			c.Allow(ctx, admit.Request{Key: "10.0.0.1", N: 1})
		}
	})
	b.Run("slots", func(b *testing.B) {
		conc, err := concurrency.New(concurrency.Config{Max: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", open), compose.Layer{Name: "conc", Slots: conc.Slots()})
		keys := append(keys, "acme")
		b.ReportAllocs()
		for b.Loop() {
			var h compose.Held
			c.AllowKeys(ctx, keys, 1, &h)
			h.Release()
		}
	})
	// "slots/finish" is "slots" as a middleware that reports outcomes
	// does it: WantsOutcome, then Release (no grant is a Finisher).
	b.Run("slots/finish", func(b *testing.B) {
		conc, err := concurrency.New(concurrency.Config{Max: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		c := mustAll(b, layer(b, "ip", open), layer(b, "user", open), layer(b, "tenant", open), compose.Layer{Name: "conc", Slots: conc.Slots()})
		keys := append(keys, "acme")
		b.ReportAllocs()
		for b.Loop() {
			var h compose.Held
			c.AllowKeys(ctx, keys, 1, &h)
			if h.WantsOutcome() {
				h.Finish(false)
			} else {
				h.Release()
			}
		}
	})
}
