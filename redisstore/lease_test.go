package redisstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/internal/stores/inredis"
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
				if held, err := p.ExtendFor(ctx, bad); held || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "redisstore: invalid argument: lease "+bad.String()+": want 1ms to a year") {
					t.Errorf("ExtendFor(%v): %v, %v; want admit.ErrInvalidConfig", bad, held, err)
				}
			}
			// leases.WithTTL of 0 or less sets nothing; over a year is an
			// error, and nothing is held.
			rel, d, err = l.Slots().TryAcquire(leases.WithTTL(ctx, -time.Second), admit.Request{Key: "other", N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("Slots under leases.WithTTL(-1s): %+v, %v", d, err)
			}
			rel.Release()
			if rel, _, err := l.Slots().TryAcquire(leases.WithTTL(ctx, 366*24*time.Hour), admit.Request{Key: "other", N: 1}); rel != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "redisstore: invalid argument: lease 8784h0m0s: want 1ms to a year") {
				t.Errorf("Slots under leases.WithTTL(366 days): %v, %v; want admit.ErrInvalidConfig", rel, err)
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

// TestLeaseRecords: the lease records of admit serve's lease table (Save,
// Load, Renew and Take, reached as the table reaches them) on the
// deployments, with keys of any bytes; the Leases loaded are the ones
// saved (releasing one frees its slots); one of several takers gets a
// record; bad arguments and records are errors and write nothing.
func TestLeaseRecords(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			s, prefix := prefixedStore(t, client, redisstore.Config{})
			recs := inredis.LeaseRecords(s)
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 2, Lease: time.Hour})
			ctx := t.Context()
			keys := []string{"a", "b\x00{c}\xff|:", strings.Repeat("k", 1000)}
			var granted []redisstore.Lease
			for _, k := range keys {
				p, d, err := l.TryAcquire(ctx, admit.Request{Key: k, N: 1})
				if err != nil || !d.Allowed {
					t.Fatalf("%q: %+v, %v", k, d, err)
				}
				granted = append(granted, p)
			}
			if err := recs.Save(ctx, "rec", time.Minute, granted...); err != nil {
				t.Fatal(err)
			}
			if err := recs.Save(ctx, "rec", time.Minute, granted[0]); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), `redisstore: invalid argument: lease record "rec" exists`) {
				t.Errorf("saving over a record: %v, want admit.ErrInvalidConfig", err)
			}
			got, ok, err := recs.Load(ctx, "rec")
			if err != nil || !ok || len(got) != len(granted) {
				t.Fatalf("Load: %d granted, %v, %v", len(got), ok, err)
			}
			for i, p := range got {
				if held, err := p.Held(ctx); !held || err != nil {
					t.Errorf("loaded lease %d: held %v, %v", i, held, err)
				}
			}
			if ok, err := recs.Renew(ctx, "rec", 2*time.Hour); !ok || err != nil {
				t.Errorf("Renew: %v, %v", ok, err)
			}
			if ttl := client.PTTL(ctx, recordKey(prefix, "rec")).Val(); ttl < time.Hour || ttl > 2*time.Hour {
				t.Errorf("the record's TTL after Renew(2h): %v", ttl)
			}

			// Two takers: one gets the record.
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					got, ok, err := recs.Take(ctx, "rec")
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
					t.Errorf("%q in flight after the taken granted were released: %d, %v", k, n, err)
				}
			}
			for _, f := range []func() (bool, error){
				func() (bool, error) { _, ok, err := recs.Load(ctx, "rec"); return ok, err },
				func() (bool, error) { _, ok, err := recs.Take(ctx, "rec"); return ok, err },
				func() (bool, error) { return recs.Renew(ctx, "rec", time.Minute) },
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
			for name, c := range map[string]struct {
				err  error
				text string
			}{
				"empty name":    {recs.Save(ctx, "", time.Minute, granted[0]), "lease record name of 0 bytes, want 1 to 256"},
				"long name":     {recs.Save(ctx, strings.Repeat("n", 257), time.Minute, granted[0]), "lease record name of 257 bytes, want 1 to 256"},
				"no lease":      {recs.Save(ctx, "x", time.Minute), "0 leases in a record, want 1 to 1024"},
				"zero Lease":    {recs.Save(ctx, "x", time.Minute, redisstore.Lease{}), "lease 0 is the zero Lease or another Store's"},
				"another Store": {recs.Save(ctx, "x", time.Minute, po), "lease 0 is the zero Lease or another Store's"},
				"ttl 0":         {recs.Save(ctx, "x", 0, granted[0]), "lease 0s: want 1ms to a year"},
			} {
				if !errors.Is(c.err, admit.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(c.err), "redisstore: invalid argument: "+c.text) {
					t.Errorf("%s: %v, want admit.ErrInvalidConfig saying %q", name, c.err, c.text)
				}
			}
			if _, ok, err := recs.Load(ctx, "x"); ok || err != nil {
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
				if _, ok, err := recs.Load(ctx, name); ok || !errors.Is(err, redisstore.ErrStore) {
					t.Errorf("record %s: %v, %v; want ErrStore", name, ok, err)
				}
			}
		})
	}
}

// TestLeaseRecordsAcrossStores: a lease taken by one process, released by
// another: the first saves its Leases under a name in Redis (an id it
// gave its client); another Store on the same Redis takes them from there
// and releases them, once.
func TestLeaseRecordsAcrossStores(t *testing.T) {
	client := standalone(t)
	ctx := t.Context()

	// Process A grants a slot and saves its lease for a minute.
	a, prefix := prefixedStore(t, client, redisstore.Config{})
	jobs := newConcurrency(t, a, redisstore.ConcurrencyConfig{Options: admit.Options{Name: "jobs"}, Max: 1})
	lease, d, err := jobs.TryAcquire(ctx, admit.Request{Key: "etl", N: 1})
	if err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if _, err := lease.ExtendFor(ctx, time.Minute); err != nil { // the slot lives as long as the record
		t.Fatal(err)
	}
	if err := inredis.LeaseRecords(a).Save(ctx, "job-42", time.Minute, lease); err != nil {
		t.Fatal(err)
	}

	// Process B, on the same Redis, releases it.
	b := newStore(t, client, redisstore.Config{Prefix: prefix})
	taken, found, err := inredis.LeaseRecords(b).Take(ctx, "job-42")
	if err != nil || !found || len(taken) != 1 {
		t.Fatalf("Take: %d leases, %v, %v", len(taken), found, err)
	}
	if released, err := taken[0].Release(ctx); !released || err != nil {
		t.Errorf("released: %v, %v", released, err)
	}
	if _, found, err := inredis.LeaseRecords(b).Take(ctx, "job-42"); found || err != nil {
		t.Errorf("found again: %v, %v", found, err)
	}
	if _, d, _ = jobs.TryAcquire(ctx, admit.Request{Key: "etl", N: 0}); d.Remaining != 1 { // a peek
		t.Errorf("slots free: %d, want 1", d.Remaining)
	}
}

// recordKey returns the Redis key of the lease record name of a Store of
// prefix.
func recordKey(prefix, name string) string { return prefix + "leases:" + name }
