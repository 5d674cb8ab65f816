package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/redisstore"
)

// TestConcurrencyLeaseFor: Slots under compose.WithLeaseTTL grants for
// that lease instead of the limiter's, its Releaser renews for any lease
// (never shortening it), and Lease.ExtendFor checks its argument. The
// deadlines are read from a refused request's RetryAfter, on Redis's
// clock, so nothing waits for them.
func TestConcurrencyLeaseFor(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.client(t))
			l := newConcurrency(t, s, 1, redisstore.WithLease(200*time.Millisecond))
			ctx := t.Context()
			retry := func(what string, want time.Duration) {
				t.Helper()
				_, d, err := l.TryAcquire(ctx, "k", 1)
				// Redis's clock runs while the test does: allow it 5 s.
				if err != nil || d.Allowed || d.RetryAfter > want || d.RetryAfter < want-5*time.Second {
					t.Fatalf("%s: %+v, %v; want a refusal for about %v", what, d, err, want)
				}
			}

			rel, d, err := l.Slots().TryAcquire(compose.WithLeaseTTL(ctx, time.Minute), "k", 1)
			if err != nil || !d.Allowed || rel == nil {
				t.Fatalf("Slots under WithLeaseTTL(1m): %v, %+v, %v", rel, d, err)
			}
			retry("granted for 1m", time.Minute)
			r, ok := rel.(compose.Renewer)
			if !ok {
				t.Fatalf("the Releaser %T is not a compose.Renewer", rel)
			}
			if held, err := r.Renew(ctx, 10*time.Minute); !held || err != nil {
				t.Fatalf("Renew(10m): %v, %v", held, err)
			}
			retry("renewed for 10m", 10*time.Minute)
			if held, err := r.Renew(ctx, time.Second); !held || err != nil {
				t.Fatalf("Renew(1s): %v, %v", held, err)
			}
			retry("renewed for 1s: not shortened", 10*time.Minute)
			rel.Release()
			if held, err := r.Renew(ctx, time.Minute); held || err != nil {
				t.Fatalf("Renew after Release: %v, %v; want false, nil", held, err)
			}
			if n, err := l.InFlight(ctx, "k"); n != 0 || err != nil {
				t.Fatalf("InFlight after Release: %d, %v", n, err)
			}

			// Without WithLeaseTTL: the limiter's lease.
			rel, d, err = l.Slots().TryAcquire(ctx, "k", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			retry("the limiter's lease", 200*time.Millisecond)
			rel.Release()

			// The Lease itself.
			p, d, err := l.TryAcquire(ctx, "k", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			if held, err := p.ExtendFor(ctx, 5*time.Minute); !held || err != nil {
				t.Fatalf("ExtendFor(5m): %v, %v", held, err)
			}
			retry("ExtendFor(5m)", 5*time.Minute)
			for _, bad := range []time.Duration{0, -time.Second, 366 * 24 * time.Hour} {
				if held, err := p.ExtendFor(ctx, bad); held || !errors.Is(err, redisstore.ErrInvalidOption) {
					t.Errorf("ExtendFor(%v): %v, %v; want ErrInvalidOption", bad, held, err)
				}
			}
			// WithLeaseTTL of 0 or less sets nothing; over a year is an
			// error, and nothing is held.
			rel, d, err = l.Slots().TryAcquire(compose.WithLeaseTTL(ctx, -time.Second), "other", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("Slots under WithLeaseTTL(-1s): %+v, %v", d, err)
			}
			rel.Release()
			if rel, _, err := l.Slots().TryAcquire(compose.WithLeaseTTL(ctx, 366*24*time.Hour), "other", 1); rel != nil || !errors.Is(err, redisstore.ErrInvalidOption) {
				t.Errorf("Slots under WithLeaseTTL(366 days): %v, %v; want ErrInvalidOption", rel, err)
			}
			if n, err := l.InFlight(ctx, "other"); n != 0 || err != nil {
				t.Errorf("InFlight of a refused lease: %d, %v", n, err)
			}
			if held, err := (redisstore.Lease{}).ExtendFor(ctx, time.Second); held || err != nil {
				t.Errorf("zero Lease: %v, %v", held, err)
			}
			if ok, _ := p.Release(ctx); !ok {
				t.Error("Release: false")
			}
			if held, err := p.ExtendFor(ctx, time.Minute); held || err != nil {
				t.Errorf("ExtendFor after Release: %v, %v; want false, nil", held, err)
			}
		})
	}
}
