package redisstore_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/redisstore"
)

// TestConcurrencyLeaseFor: Slots under leases.WithTTL (admit serve's lease
// table) grants for that lease instead of the limiter's, its Releaser
// renews for any lease (shortening it too, unlike Extend), and
// Lease.ExtendFor checks its argument. The deadlines are read from a
// refused request's RetryAfter, on Redis's clock, so nothing waits for
// them.
func TestConcurrencyLeaseFor(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.client(t), redisstore.Config{})
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 1, Lease: 200 * time.Millisecond})
			ctx := t.Context()
			retry := func(what string, want time.Duration) {
				t.Helper()
				_, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
				// Redis's clock runs while the test does: allow it 5 s.
				if err != nil || d.Allowed || d.RetryAfter > want || d.RetryAfter < want-5*time.Second {
					t.Fatalf("%s: %+v, %v; want a refusal for about %v", what, d, err, want)
				}
			}

			rel, d, err := l.Slots().TryAcquire(leases.WithTTL(ctx, time.Minute), admit.Request{Key: "k", N: 1})
			if err != nil || !d.Allowed || rel == nil {
				t.Fatalf("Slots under leases.WithTTL(1m): %v, %+v, %v", rel, d, err)
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
			retry("renewed for 1s: shortened", time.Second)
			if ok, err := r.(interface{ Lease() redisstore.Lease }).Lease().Extend(ctx); !ok || err != nil {
				t.Fatalf("Extend: %v, %v", ok, err)
			}
			retry("Extend after Renew(1s): the limiter's lease is shorter, kept", time.Second)
			rel.Release()
			if held, err := r.Renew(ctx, time.Minute); held || err != nil {
				t.Fatalf("Renew after Release: %v, %v; want false, nil", held, err)
			}
			if n, err := l.InFlight(ctx, "k"); n != 0 || err != nil {
				t.Fatalf("InFlight after Release: %d, %v", n, err)
			}

			// Without leases.WithTTL: the limiter's lease.
			rel, d, err = l.Slots().TryAcquire(ctx, admit.Request{Key: "k", N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			retry("the limiter's lease", 200*time.Millisecond)
			rel.Release()

			// The Lease itself.
			p, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			if held, err := p.ExtendFor(ctx, 5*time.Minute); !held || err != nil {
				t.Fatalf("ExtendFor(5m): %v, %v", held, err)
			}
			retry("ExtendFor(5m)", 5*time.Minute)
			for _, bad := range []time.Duration{0, -time.Second, 366 * 24 * time.Hour} {
				if held, err := p.ExtendFor(ctx, bad); held || !errors.Is(err, redisstore.ErrInvalidArgument) {
					t.Errorf("ExtendFor(%v): %v, %v; want ErrInvalidOption", bad, held, err)
				}
			}
			// leases.WithTTL of 0 or less sets nothing; over a year is an
			// error, and nothing is held.
			rel, d, err = l.Slots().TryAcquire(leases.WithTTL(ctx, -time.Second), admit.Request{Key: "other", N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("Slots under leases.WithTTL(-1s): %+v, %v", d, err)
			}
			rel.Release()
			if rel, _, err := l.Slots().TryAcquire(leases.WithTTL(ctx, 366*24*time.Hour), admit.Request{Key: "other", N: 1}); rel != nil || !errors.Is(err, redisstore.ErrInvalidArgument) {
				t.Errorf("Slots under leases.WithTTL(366 days): %v, %v; want ErrInvalidOption", rel, err)
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

// TestLeaseRecords: SaveLeases, LoadLeases, RenewLeases and TakeLeases on
// the deployments, with keys of any bytes; the Leases loaded are the ones
// saved (releasing one frees its slots); one of several takers gets a
// record; bad arguments and records are errors and write nothing.
func TestLeaseRecords(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			s, prefix := prefixedStore(t, client, redisstore.Config{})
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 2, Lease: time.Hour})
			ctx := t.Context()
			keys := []string{"a", "b\x00{c}\xff|:", strings.Repeat("k", 1000)}
			var leases []redisstore.Lease
			for _, k := range keys {
				p, d, err := l.TryAcquire(ctx, admit.Request{Key: k, N: 1})
				if err != nil || !d.Allowed {
					t.Fatalf("%q: %+v, %v", k, d, err)
				}
				leases = append(leases, p)
			}
			if err := s.SaveLeases(ctx, "rec", time.Minute, leases...); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveLeases(ctx, "rec", time.Minute, leases[0]); !errors.Is(err, redisstore.ErrInvalidArgument) {
				t.Errorf("saving over a record: %v, want ErrInvalidOption", err)
			}
			got, ok, err := s.LoadLeases(ctx, "rec")
			if err != nil || !ok || len(got) != len(leases) {
				t.Fatalf("LoadLeases: %d leases, %v, %v", len(got), ok, err)
			}
			for i, p := range got {
				if held, err := p.Held(ctx); !held || err != nil {
					t.Errorf("loaded lease %d: held %v, %v", i, held, err)
				}
			}
			if ok, err := s.RenewLeases(ctx, "rec", 2*time.Hour); !ok || err != nil {
				t.Errorf("RenewLeases: %v, %v", ok, err)
			}
			if ttl := client.PTTL(ctx, recordKey(prefix, "rec")).Val(); ttl < time.Hour || ttl > 2*time.Hour {
				t.Errorf("the record's TTL after RenewLeases(2h): %v", ttl)
			}

			// Two takers: one gets the record.
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					got, ok, err := s.TakeLeases(ctx, "rec")
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
						for _, p := range got {
							if ok, err := p.Release(ctx); !ok || err != nil {
								t.Errorf("release of a taken lease: %v, %v", ok, err)
							}
						}
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d takers got the record, want 1", wins.Load())
			}
			for _, k := range keys {
				if n, err := l.InFlight(ctx, k); n != 0 || err != nil {
					t.Errorf("%q in flight after the taken leases were released: %d, %v", k, n, err)
				}
			}
			for _, f := range []func() (bool, error){
				func() (bool, error) { _, ok, err := s.LoadLeases(ctx, "rec"); return ok, err },
				func() (bool, error) { _, ok, err := s.TakeLeases(ctx, "rec"); return ok, err },
				func() (bool, error) { return s.RenewLeases(ctx, "rec", time.Minute) },
			} {
				if ok, err := f(); ok || err != nil {
					t.Errorf("a taken record: %v, %v; want false, nil", ok, err)
				}
			}

			// Bad arguments write nothing.
			other := newStore(t, client, redisstore.Config{})
			lo := newConcurrency(t, other, redisstore.ConcurrencyConfig{Max: 1})
			po, _, err := lo.TryAcquire(ctx, admit.Request{Key: "o", N: 1})
			if err != nil {
				t.Fatal(err)
			}
			for name, err := range map[string]error{
				"empty name":    s.SaveLeases(ctx, "", time.Minute, leases[0]),
				"long name":     s.SaveLeases(ctx, strings.Repeat("n", 257), time.Minute, leases[0]),
				"no lease":      s.SaveLeases(ctx, "x", time.Minute),
				"zero Lease":    s.SaveLeases(ctx, "x", time.Minute, redisstore.Lease{}),
				"another Store": s.SaveLeases(ctx, "x", time.Minute, po),
				"ttl 0":         s.SaveLeases(ctx, "x", 0, leases[0]),
			} {
				if !errors.Is(err, redisstore.ErrInvalidArgument) {
					t.Errorf("%s: %v, want ErrInvalidOption", name, err)
				}
			}
			if _, ok, err := s.LoadLeases(ctx, "x"); ok || err != nil {
				t.Errorf("a record was written by a bad call: %v, %v", ok, err)
			}

			// A record that is not one of this Store's.
			for name, v := range map[string]string{
				"garbage":   "garbage",
				"truncated": "\x01\x01\x05ab",
				"foreign":   "\x01\x01\x05other\x05other\x01x\x0230",
			} {
				if err := client.Set(ctx, recordKey(prefix, name), v, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				if _, ok, err := s.LoadLeases(ctx, name); ok || !errors.Is(err, redisstore.ErrStore) {
					t.Errorf("record %s: %v, %v; want ErrStore", name, ok, err)
				}
			}
		})
	}
}

// recordKey returns the Redis key of the lease record name of a Store of
// prefix.
func recordKey(prefix, name string) string { return prefix + "leases:" + name }
