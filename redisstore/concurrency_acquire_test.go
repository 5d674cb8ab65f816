package redisstore_test

// ConcurrencyLimiter.Acquire: waiting for slots, giving up, and under contention.

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/redisstore"
)

// Acquire waits for a release, and for the lease of a holder that never
// releases.
func TestConcurrencyAcquireWaits(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 1, Lease: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	holder, _, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	type result struct {
		p   redisstore.Lease
		d   admit.Decision
		err error
	}
	got := make(chan result)
	go func() {
		p, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: 1})
		got <- result{p, d, err}
	}()
	if ok, _ := holder.Extend(ctx); !ok {
		t.Fatal("Extend: false")
	}
	holder.Release(ctx)
	r := <-got
	if r.err != nil || !r.d.Allowed || r.d.Remaining != 0 {
		t.Fatalf("Acquire after a release: %+v, %v", r.d, r.err)
	}
	// r.p is never released: a waiter gets the slot when its lease ends.
	go func() {
		p, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: 1})
		got <- result{p, d, err}
	}()
	r2 := <-got
	if r2.err != nil || !r2.d.Allowed {
		t.Fatalf("Acquire behind a crashed holder: %+v, %v", r2.d, r2.err)
	}
	if held, _ := r.p.Held(ctx); held {
		t.Error("the crashed holder still holds its slot")
	}
	r2.p.Release(ctx)
	// n = 0 never waits.
	if _, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: 0}); err != nil || !d.Allowed {
		t.Errorf("Acquire of 0: %+v, %v", d, err)
	}
}

// Acquire returns when its context ends, with the last denial, and leaves
// no goroutine behind; with a context already done it sends nothing.
func TestConcurrencyAcquireCancel(t *testing.T) {
	client := standalone(t)
	s := newStore(t, client, redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 2})
	ctx := t.Context()
	holder, _, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	defer holder.Release(ctx)
	// Warm the connection pool, so that its goroutines are counted.
	l.InFlight(ctx, "k")
	before := runtime.NumGoroutine()

	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	p, d, err := l.Acquire(wctx, admit.Request{Key: "k", N: 1})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || d.Allowed || p != (redisstore.Lease{}) {
		t.Errorf("Acquire until a deadline: %+v, %v", d, err)
	}
	if d.Remaining != 0 || d.Limit.Rate != 2 || d.RetryAfter <= 0 || d.RetryAfter == admit.InfDuration {
		t.Errorf("the last denial: %+v", d)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, _, err := l.Acquire(cctx, admit.Request{Key: "k", N: 1})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it poll a few times
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire cancelled: %v", err)
	}

	// A done context: nothing is sent, even though a slot is free.
	holder.Release(ctx)
	if _, _, err := l.Acquire(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a done context: %v", err)
	}
	if n, _ := l.InFlight(ctx, "k"); n != 0 {
		t.Errorf("InFlight = %d after cancelled acquisitions, want 0", n)
	}
	eventually(t, 2*time.Second, "goroutines back to their number before", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// Goroutines that Acquire, hold and release never have more than max in
// flight, and all of them get their turn.
func TestConcurrencyAcquireUnderContention(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.client(t), redisstore.Config{})
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 3, PollMin: time.Millisecond, PollMax: 10 * time.Millisecond})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var mu sync.Mutex
			inFlight, peak, done := int64(0), int64(0), 0
			var wg sync.WaitGroup
			for w := range 12 {
				wg.Go(func() {
					for range 3 {
						n := int64(1 + w%2)
						p, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: n})
						if err != nil || !d.Allowed {
							t.Errorf("Acquire: %+v, %v", d, err)
							return
						}
						mu.Lock()
						inFlight += n
						peak = max(peak, inFlight)
						mu.Unlock()
						time.Sleep(time.Millisecond)
						mu.Lock()
						inFlight -= n
						done++
						mu.Unlock()
						if ok, err := p.Release(ctx); !ok || err != nil {
							t.Errorf("Release: %v, %v", ok, err)
						}
					}
				})
			}
			wg.Wait()
			if peak > 3 || done != 36 {
				t.Errorf("peak in flight %d (want at most 3), %d of 36 holds done", peak, done)
			}
		})
	}
}
