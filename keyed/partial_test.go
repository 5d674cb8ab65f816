package keyed_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

// TestAllowAtMost: a partial grant is min(n, what a peek says fits), it
// leaves the key as an Allow of the granted count would, and its
// RetryAfter is the wait until one more event fits, for every algorithm,
// at instants that go forwards and backwards.
func TestAllowAtMost(t *testing.T) {
	ctx := context.Background()
	l := admit.Limit{Rate: 5, Period: time.Second, Burst: 7}
	for _, alg := range admit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			newLim := func() *keyed.Limiter {
				lim, err := keyed.New(keyed.Config{Algorithm: alg, Limit: l})
				if err != nil {
					t.Fatal(err)
				}
				return lim
			}
			// partial and twin see the same requests, except that partial
			// makes each grant with AllowAtMost and twin with a peek and an
			// Allow of what it said fits. (The peeks and probes go to both:
			// a peek at a later instant can move a key's state, as the
			// sliding log forgets what left its window.)
			partial, twin := newLim(), newLim()
			both := func(r admit.Request) admit.Decision {
				pd, _ := partial.Allow(ctx, r)
				td, _ := twin.Allow(ctx, r)
				if pd != td {
					t.Fatalf("%+v: the limiters disagree: %+v and %+v", r, pd, td)
				}
				return td
			}
			rng := rand.New(rand.NewPCG(1, uint64(alg)))
			at := admittest.Epoch
			for step := range 2000 {
				at = at.Add(time.Duration(rng.IntN(400)-50) * time.Millisecond)
				key := []string{"a", "b"}[rng.IntN(2)]
				n := int64(rng.IntN(12))
				peek := both(admit.Request{Key: key, At: at})
				want := min(n, peek.Remaining)
				granted, d, err := partial.AllowAtMost(ctx, admit.Request{Key: key, N: n, At: at})
				if err != nil || granted != want {
					t.Fatalf("step %d: AllowAtMost(%s, %d) at %v = %d, %v; want %d (a peek says %d fit)", step, key, n, at.Sub(admittest.Epoch), granted, err, want, peek.Remaining)
				}
				if want > 0 {
					if td, _ := twin.Allow(ctx, admit.Request{Key: key, N: want, At: at}); !td.Allowed {
						t.Fatalf("step %d: the twin refused the %d a peek said fit", step, want)
					}
				}
				after := both(admit.Request{Key: key, At: at})
				if d.Allowed != (granted > 0 || n == 0) || d.Remaining != after.Remaining || d.ResetAfter != after.ResetAfter {
					t.Fatalf("step %d: decision %+v after granting %d of %d; a peek says %+v", step, d, granted, n, after)
				}
				if granted == n {
					if d.RetryAfter != 0 {
						t.Fatalf("step %d: all %d granted, RetryAfter %v", step, n, d.RetryAfter)
					}
					continue
				}
				// One more event fits after RetryAfter, not a nanosecond
				// before (probed in that order: instants forward).
				if d.RetryAfter <= 0 || d.RetryAfter == admit.InfDuration {
					t.Fatalf("step %d: %d of %d granted, RetryAfter %v", step, granted, n, d.RetryAfter)
				}
				if p := both(admit.Request{Key: key, At: at.Add(d.RetryAfter - 1)}); p.Remaining != 0 {
					t.Fatalf("step %d: %d fit a nanosecond before RetryAfter %v", step, p.Remaining, d.RetryAfter)
				}
				if p := both(admit.Request{Key: key, At: at.Add(d.RetryAfter)}); p.Remaining < 1 {
					t.Fatalf("step %d: nothing fits after RetryAfter %v: %+v", step, d.RetryAfter, p)
				}
			}
		})
	}
}

// TestAllowAtMostBadInput: errors are Allow's, and nothing is granted.
func TestAllowAtMostBadInput(t *testing.T) {
	ctx := context.Background()
	lim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(3), MaxKeyLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []admit.Request{
		{Key: "k", N: -1},
		{Key: "too-long", N: 1},
		{Key: "k", N: 1, Limit: admit.Limit{Rate: -1, Period: time.Second}},
	} {
		if g, d, err := lim.AllowAtMost(ctx, r); err == nil || g != 0 || d.Allowed {
			t.Errorf("AllowAtMost(%+v) = %d, %+v, %v; want an error and nothing granted", r, g, d, err)
		}
	}
	// More than the burst is a partial grant of the burst, not a refusal.
	if g, d, err := lim.AllowAtMost(ctx, admit.Request{Key: "k", N: 1000, At: admittest.Epoch}); err != nil || g != 3 || !d.Allowed || d.Remaining != 0 {
		t.Errorf("AllowAtMost of 1000 under a burst of 3 = %d, %+v, %v; want 3", g, d, err)
	}
	var _ admit.PartialAllower = lim
}
