package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/redisstore"
)

// TestSlotsCountHeld: the Slots of a ConcurrencyLimiter made to count
// (CountHeld, for admit serve) count the slots their grants hold through
// this process, without asking Redis: from each grant until its release
// (through its Releaser, or through any Lease naming it, such as one read
// back from a lease record), until Redis says it is gone (an extension
// refused), or until its lease runs out on the clock given, which an
// extension moves. Slots that do not count, and other limiters, are not
// counted.
func TestSlotsCountHeld(t *testing.T) {
	client := standalone(t)
	s, prefix := prefixedStore(t, client, redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Options: admit.Options{Name: "jobs"}, Max: 5, Lease: time.Minute})
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	counted := l.Slots().(leases.Countable).CountHeld(clock)
	counts, ok := counted.(interface{ SlotCounts() (int64, int64) })
	if !ok {
		t.Fatalf("%T has no SlotCounts", counted)
	}
	ctx := t.Context()
	want := func(n int64, what string) {
		t.Helper()
		if in, w := counts.SlotCounts(); in != n || w != 0 {
			t.Errorf("%s: %d in flight, %d waiting; want %d, 0", what, in, w, n)
		}
	}
	acquire := func(ctx context.Context, n int64) admit.Releaser {
		t.Helper()
		r, d, err := counted.TryAcquire(ctx, admit.Request{Key: "etl", N: n})
		if err != nil || !d.Allowed || r == nil {
			t.Fatalf("TryAcquire(%d): %+v, %v", n, d, err)
		}
		return r
	}
	lease := func(r admit.Releaser) redisstore.Lease { return r.(interface{ Lease() redisstore.Lease }).Lease() }

	want(0, "new")
	a, b := acquire(ctx, 2), acquire(ctx, 1)
	if _, d, _ := counted.TryAcquire(ctx, admit.Request{Key: "etl", N: 3}); d.Allowed {
		t.Fatal("3 more slots over a max of 5")
	}
	if r, _, err := l.Slots().TryAcquire(ctx, admit.Request{Key: "other", N: 1}); err != nil || r == nil {
		t.Fatalf("uncounted slots: %v", err)
	} else {
		defer r.Release()
	}
	if p, d, err := l.TryAcquire(ctx, admit.Request{Key: "other", N: 1}); err != nil || !d.Allowed {
		t.Fatalf("the limiter itself: %+v, %v", d, err)
	} else {
		defer func() { _, _ = p.Release(context.Background()) }()
	}
	want(3, "2 and 1 granted (refusals and uncounted grants not counted)")
	a.Release()
	a.Release()
	want(1, "2 released (twice)")
	if ok, err := lease(b).Release(ctx); !ok || err != nil {
		t.Fatalf("a copy of the Lease released: %v, %v", ok, err)
	}
	want(0, "1 released through a copy of its Lease")
	b.Release() // released already: nothing more

	// Leases of the lease table's TTL, extended, run out on the clock.
	c := acquire(leases.WithTTL(ctx, 10*time.Second), 1)
	clock.Advance(9 * time.Second)
	want(1, "at 9 s of a 10 s lease")
	if ok, err := c.(interface {
		Renew(context.Context, time.Duration) (bool, error)
	}).Renew(ctx, 20*time.Second); !ok || err != nil {
		t.Fatalf("Renew: %v, %v", ok, err)
	}
	clock.Advance(19 * time.Second)
	want(1, "at 19 s of a lease renewed for 20 s")
	clock.Advance(time.Second)
	want(0, "the renewed lease run out")
	c.Release()
	want(0, "released after its lease ran out")

	// Redis no longer holding a lease (as when it expired there: its keys
	// are deleted here), an extension or a Held says so, which ends its
	// count.
	gone := func() {
		t.Helper()
		for _, k := range keysUnder(t, client, prefix) {
			if strings.Contains(k, ":conc") && strings.HasSuffix(k, ":etl") {
				if err := client.Del(ctx, k).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, ask := range []struct {
		name string
		f    func(redisstore.Lease) (bool, error)
	}{
		{"Extend", func(p redisstore.Lease) (bool, error) { return p.Extend(ctx) }},
		{"Held", func(p redisstore.Lease) (bool, error) { return p.Held(ctx) }},
	} {
		r := acquire(ctx, 2)
		want(2, "granted")
		gone()
		if ok, err := ask.f(lease(r)); ok || err != nil {
			t.Fatalf("%s of a lease gone from Redis: %v, %v", ask.name, ok, err)
		}
		want(0, ask.name+" said it is gone")
		r.Release()
		want(0, "released after")
	}
}
