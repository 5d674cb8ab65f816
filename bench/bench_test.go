package bench

// Single-key limiters: admit's GCRA and TokenBucket against
// golang.org/x/time/rate's Limiter.
//
// Every comparison gives the libraries the same limit shape (the same rate
// and burst) and calls them in the same form:
//
//   - BenchmarkAllowN: AllowN(now, 1) with an instant read once before the
//     loop, so it measures the limiter and not the clock. "admit" is the
//     path where every call is admitted (the state is written); "deny" the
//     path where the limit is exhausted and every call is refused (the state
//     is only read).
//   - BenchmarkAllow: Allow(), which reads the clock on every call, with
//     time.Now alone as the baseline.
//   - BenchmarkAllowNParallel: AllowN(now, 1) on one shared limiter from
//     every P at once (run with -cpu 1,2 to see the contention cost).
//
// Each loop checks the answer and fails the benchmark if it is not the
// expected one, so a limit that ran out mid-run cannot pass for a fast one;
// the check is the same well-predicted branch for every library.

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
	"golang.org/x/time/rate"
)

const (
	// highRate is the rate of the "admit" benchmarks, per second.
	highRate = 1_000_000_000
	// deepBurst is their burst when the instant is fixed: nothing refills,
	// so the burst must outlast every call of the run (1e12 is 1000 s of
	// capacity at highRate).
	deepBurst = 1_000_000_000_000
)

// admitDeep and xrateDeep are the same limit: 1e9/s, burst 1e12.
var admitDeep = admit.Limit{Rate: highRate, Period: time.Second, Burst: deepBurst}

func xrateDeep() *rate.Limiter { return rate.NewLimiter(highRate, deepBurst) }

// admitHigh and xrateHigh are 1e9/s, burst 1e9: for the benchmarks that
// read the clock, where the limit refills between calls.
var admitHigh = admit.PerSecond(highRate)

func xrateHigh() *rate.Limiter { return rate.NewLimiter(highRate, highRate) }

// admitDeny and xrateDeny are 1 per hour, burst 1: exhausted by one call.
var admitDeny = admit.Every(time.Hour)

func xrateDeny() *rate.Limiter { return rate.NewLimiter(rate.Every(time.Hour), 1) }

// allowNer is the method the fixed-instant benchmarks call.
type allowNer interface {
	AllowN(now time.Time, n int) bool
}

func mustGCRA(b *testing.B, l admit.Limit) *admit.GCRA {
	g, err := admit.NewGCRA(l)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func mustTokenBucket(b *testing.B, l admit.Limit) *admit.TokenBucket {
	t, err := admit.NewTokenBucket(l)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// benchAllowN calls lim.AllowN(now, 1) with a fixed now and fails unless
// every answer is want.
func benchAllowN(b *testing.B, lim allowNer, want bool) {
	now := time.Now()
	if !want && !lim.AllowN(now, 1) {
		b.Fatal("the first call was not admitted")
	}
	b.ReportAllocs()
	for b.Loop() {
		if lim.AllowN(now, 1) != want {
			b.Fatalf("AllowN = %v, want %v", !want, want)
		}
	}
}

func BenchmarkAllowN(b *testing.B) {
	b.Run("admit/admit-gcra", func(b *testing.B) { benchAllowN(b, mustGCRA(b, admitDeep), true) })
	b.Run("admit/admit-tokenbucket", func(b *testing.B) { benchAllowN(b, mustTokenBucket(b, admitDeep), true) })
	b.Run("admit/xrate", func(b *testing.B) { benchAllowN(b, xrateDeep(), true) })
	b.Run("deny/admit-gcra", func(b *testing.B) { benchAllowN(b, mustGCRA(b, admitDeny), false) })
	b.Run("deny/admit-tokenbucket", func(b *testing.B) { benchAllowN(b, mustTokenBucket(b, admitDeny), false) })
	b.Run("deny/xrate", func(b *testing.B) { benchAllowN(b, xrateDeny(), false) })
}

var sink time.Time

func BenchmarkAllow(b *testing.B) {
	b.Run("time-now", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = time.Now()
		}
	})
	b.Run("admit-gcra", func(b *testing.B) {
		g := mustGCRA(b, admitHigh)
		b.ReportAllocs()
		for b.Loop() {
			if !g.Allow() {
				b.Fatal("denied")
			}
		}
	})
	b.Run("xrate", func(b *testing.B) {
		l := xrateHigh()
		b.ReportAllocs()
		for b.Loop() {
			if !l.Allow() {
				b.Fatal("denied")
			}
		}
	})
}

// benchAllowNParallel calls lim.AllowN(now, 1) from every P with one fixed
// now and fails unless every answer is want (after a first call that
// exhausts a deny limit).
func benchAllowNParallel(b *testing.B, lim allowNer, want bool) {
	now := time.Now()
	if !want && !lim.AllowN(now, 1) {
		b.Fatal("the first call was not admitted")
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if lim.AllowN(now, 1) != want {
				b.Errorf("AllowN = %v, want %v", !want, want)
				return
			}
		}
	})
}

func BenchmarkAllowNParallel(b *testing.B) {
	b.Run("admit-gcra", func(b *testing.B) { benchAllowNParallel(b, mustGCRA(b, admitDeep), true) })
	b.Run("xrate", func(b *testing.B) { benchAllowNParallel(b, xrateDeep(), true) })
	// x/time/rate's own BenchmarkAllowN: Every(1s), burst 1, so every
	// call after the first is denied.
	b.Run("deny/admit-gcra", func(b *testing.B) { benchAllowNParallel(b, mustGCRA(b, admitDeny), false) })
	b.Run("deny/xrate", func(b *testing.B) { benchAllowNParallel(b, xrateDeny(), false) })
}

// TestLimits checks that the admit limits above are valid.
func TestLimits(t *testing.T) {
	for _, l := range []admit.Limit{admitDeep, admitHigh, admitDeny} {
		if err := l.Validate(); err != nil {
			t.Error(err)
		}
	}
}
