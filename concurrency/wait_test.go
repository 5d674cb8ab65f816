package concurrency_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/concurrency"
)

// In these tests a waiter is known to be queued once synctest.Wait returns
// (every goroutine of the bubble is blocked), and time is synctest's fake
// clock or a ManualClock: nothing sleeps for real. synctest.Test also fails
// a test that leaves a goroutine blocked: no waiter may leak.

type result struct {
	p   concurrency.Permit
	d   admit.Decision
	err error
}

// goAcquire starts Acquire in a goroutine and returns where its result will
// be sent.
func goAcquire(ctx context.Context, l *concurrency.Limiter, key string, n int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		p, d, err := l.Acquire(ctx, admit.Request{Key: key, N: n})
		ch <- result{p, d, err}
	}()
	return ch
}

// pending reports whether ch has no result yet.
func pending(ch <-chan result) bool {
	select {
	case r := <-ch:
		panic("unexpected result: " + r.d.Kind.String())
	default:
		return true
	}
}

func mustGrant(t *testing.T, ch <-chan result) concurrency.Permit {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || !r.d.Allowed || !r.p.Held() {
			t.Fatalf("Acquire: %+v, %v; want a grant", r.d, r.err)
		}
		return r.p
	default:
		t.Fatal("Acquire is still waiting")
		return concurrency.Permit{}
	}
}

func TestAcquireWaitsInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 1})
		ctx := context.Background()
		for round, key := range []string{"", "k"} {
			holder := mustAllow(t, l, key, 1)
			var waiters []<-chan result
			for range 5 {
				waiters = append(waiters, goAcquire(ctx, l, key, 1))
				synctest.Wait() // queued before the next one starts
			}
			if got := l.Waiting(key); got != 5 {
				t.Fatalf("Waiting = %d, want 5", got)
			}
			mustDeny(t, l, key, 1) // TryAcquire never jumps the queue
			for i, ch := range waiters {
				holder.Release()
				synctest.Wait()
				holder = mustGrant(t, ch)
				for _, later := range waiters[i+1:] {
					pending(later)
				}
			}
			holder.Release()
			// Each waiter counts once, having waited no time (synctest's
			// clock stood still).
			if st := l.Stats(); st != (concurrency.Stats{Waits: uint64(5 * (round + 1))}) {
				t.Fatalf("key %q: Stats at the end: %+v", key, st)
			}
		}
	})
}

func TestHeadOfQueueBlocksSmallerRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 10})
		ctx := context.Background()
		p8 := mustAllow(t, l, "k", 8)
		big := goAcquire(ctx, l, "k", 5)
		synctest.Wait()
		small := goAcquire(ctx, l, "k", 1)
		synctest.Wait()
		// 2 slots are free, but the head needs 5: nobody overtakes it.
		pending(small)
		d := mustDeny(t, l, "k", 1)
		if d.Remaining != 0 {
			t.Fatalf("Remaining = %d while callers wait, want 0", d.Remaining)
		}
		p8.Release()
		synctest.Wait()
		pb := mustGrant(t, big)
		ps := mustGrant(t, small) // 5 + 1 <= 10: served in the same pass
		if got := inFlightOf(l, "k"); got != 6 {
			t.Fatalf("InFlight = %d, want 6", got)
		}
		pb.Release()
		ps.Release()
	})
}

func TestCancelledWaiterLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 1})
		holder := mustAllow(t, l, "k", 1)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := goAcquire(ctxA, l, "k", 1)
		synctest.Wait()
		b := goAcquire(context.Background(), l, "k", 1)
		synctest.Wait()
		cancelA()
		synctest.Wait()
		r := <-a
		if !errors.Is(r.err, context.Canceled) || r.d.Allowed || r.p != (concurrency.Permit{}) {
			t.Fatalf("the cancelled waiter: %+v, %v", r.d, r.err)
		}
		if got := l.Waiting("k"); got != 1 {
			t.Fatalf("Waiting = %d after a cancel, want 1", got)
		}
		holder.Release()
		synctest.Wait()
		mustGrant(t, b).Release()
		if st := l.Stats(); st != (concurrency.Stats{Waits: 2}) { // a and b
			t.Fatalf("Stats at the end: %+v", st)
		}
	})
}

func TestCancelledHeadLetsTheOthersThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 10})
		p8 := mustAllow(t, l, "k", 8)
		ctx, cancel := context.WithCancel(context.Background())
		big := goAcquire(ctx, l, "k", 5)
		synctest.Wait()
		small := goAcquire(context.Background(), l, "k", 2)
		synctest.Wait()
		pending(small)
		cancel() // the head leaves: the 2 that fit are granted at once
		synctest.Wait()
		if r := <-big; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the cancelled head: %v", r.err)
		}
		mustGrant(t, small).Release()
		p8.Release()
	})
}

func TestCancelRacesWithGrant(t *testing.T) {
	// The waiter is granted its slot as its context ends; whichever it
	// sees first, the slot is held iff Acquire admitted.
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, concurrency.Config{Max: 1})
			holder := mustAllow(t, l, "k", 1)
			ctx, cancel := context.WithCancel(context.Background())
			w := goAcquire(ctx, l, "k", 1)
			synctest.Wait()
			holder.Release() // grants w
			cancel()
			synctest.Wait()
			r := <-w
			switch {
			case r.err == nil && r.d.Allowed:
				if inFlightOf(l, "k") != 1 || !r.p.Release() {
					t.Fatal("admitted without holding its slot")
				}
			case errors.Is(r.err, context.Canceled):
				if inFlightOf(l, "k") != 0 || r.p.Held() {
					t.Fatal("cancelled, yet its slot is held")
				}
			default:
				t.Fatalf("%+v, %v", r.d, r.err)
			}
			if st := l.Stats(); st != (concurrency.Stats{Waits: 1}) {
				t.Fatalf("Stats at the end: %+v", st)
			}
		})
	}
}

func TestAcquireWithDoneContext(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Free slots are taken whatever the context, as semaphore.Acquire does.
	p, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("free slots with a done context: %+v, %v", d, err)
	}
	// A wait is not started.
	_, d, err = l.Acquire(ctx, admit.Request{Key: "k", N: 1})
	if !errors.Is(err, context.Canceled) || d.Allowed || l.Waiting("k") != 0 {
		t.Fatalf("a wait with a done context: %+v, %v", d, err)
	}
	p.Release()
}

func TestContextDeadlineEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 1})
		holder := mustAllow(t, l, "k", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, d, err := l.Acquire(ctx, admit.Request{Key: "k", N: 1})
		if !errors.Is(err, context.DeadlineExceeded) || d.Allowed {
			t.Fatalf("%+v, %v; want DeadlineExceeded", d, err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("waited %v, want 1s", waited)
		}
		if l.Waiting("k") != 0 {
			t.Fatal("the waiter is still queued")
		}
		holder.Release()
	})
}

func TestMaxWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, concurrency.Config{Max: 1, MaxWaiters: 1})
		holder := mustAllow(t, l, "k", 1)
		first := goAcquire(context.Background(), l, "k", 1)
		synctest.Wait()
		// The queue is full: denied at once, not an error.
		p, d, err := l.Acquire(context.Background(), admit.Request{Key: "k", N: 1})
		if err != nil || d.Allowed || p != (concurrency.Permit{}) {
			t.Fatalf("a second waiter: %+v, %v; want a denial", d, err)
		}
		mustAllow(t, l, "other", 1).Release() // per key
		holder.Release()
		synctest.Wait()
		mustGrant(t, first).Release()

		// MaxWaiters < 0: never wait.
		l0 := mustNew(t, concurrency.Config{Max: 1, MaxWaiters: -1})
		h := mustAllow(t, l0, "", 1)
		if _, d, err := l0.Acquire(context.Background(), admit.Request{Key: "", N: 1}); err != nil || d.Allowed {
			t.Fatalf("MaxWaiters -1: %+v, %v", d, err)
		}
		h.Release()
	})
}

func TestMaxWait(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 1, MaxWait: time.Second})
	holder := mustAllow(t, l, "k", 1)
	ctx := context.Background()
	w := goAcquire(ctx, l, "k", 1)
	clk.BlockUntilTimers(ctx, 1) // w waits, on its max-wait timer
	clk.Advance(time.Second - 1)
	w2 := goAcquire(ctx, l, "k", 1)
	clk.BlockUntilTimers(ctx, 2)
	clk.Advance(1)
	r := <-w
	if r.err != nil || r.d.Allowed || r.p != (concurrency.Permit{}) {
		t.Fatalf("after the maximum wait: %+v, %v; want a denial without error", r.d, r.err)
	}
	holder.Release() // w2 is served
	r = <-w2
	if r.err != nil || !r.d.Allowed {
		t.Fatalf("the second waiter: %+v, %v", r.d, r.err)
	}
	r.p.Release()
	if n := clk.Timers(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
	// w waited 1s, out of MaxWait, and w2 1ns, served: each counts, the
	// timed-out one too.
	if st := l.Stats(); st != (concurrency.Stats{Waits: 2, Waited: time.Second + 1}) {
		t.Fatalf("Stats at the end: %+v", st)
	}
}

func TestLeaseExpiryWakesTheWaiter(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 2, Lease: 10 * time.Second})
	ctx := context.Background()
	mustAllow(t, l, "k", 1) // leaked, deadline 10s
	clk.Advance(5 * time.Second)
	b := mustAllow(t, l, "k", 1) // deadline 15s
	var ws []<-chan result
	for range 3 {
		ws = append(ws, goAcquire(ctx, l, "k", 1))
		for l.Waiting("k") != len(ws) {
			runtime.Gosched()
		}
	}
	// Only the first waiter keeps a timer, for the earliest lease.
	clk.BlockUntilTimers(ctx, 1)
	if n := clk.Timers(); n != 1 {
		t.Fatalf("%d timers with 3 waiters, want 1", n)
	}
	clk.Advance(5 * time.Second) // 10s: the leaked lease expires
	p0 := (<-ws[0]).p
	if !p0.Held() || l.Waiting("k") != 2 {
		t.Fatal("the first waiter was not served when the lease expired")
	}
	// The next waiter, now first, waits on b's deadline (15s).
	clk.BlockUntilTimers(ctx, 1)
	clk.Advance(time.Second)
	b.Release() // 11s: the second waiter is served by the release...
	p1 := mustGrantWait(t, ws[1])
	// ...and the third waits for the earliest lease, p0's (20s).
	clk.BlockUntilTimers(ctx, 1)
	clk.Advance(9 * time.Second)
	p2 := mustGrantWait(t, ws[2])
	if p0.Held() || !p1.Held() || !p2.Held() {
		t.Fatal("wrong holders after p0's lease expired")
	}
	if st := l.Stats(); st.Reclaimed != 2 || st.InFlight != 2 || st.Waiting != 0 {
		t.Fatalf("Stats: %+v", st)
	}
	if n := clk.Timers(); n != 0 {
		t.Fatalf("%d timers left with nobody waiting", n)
	}
}

func TestLeaseTimerFollowsReleases(t *testing.T) {
	// The first waiter's timer is set for the earliest lease; if that one
	// is released, the timer fires for nothing and is set again.
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 2, Lease: 10 * time.Second})
	ctx := context.Background()
	a := mustAllow(t, l, "k", 1) // 10s
	clk.Advance(5 * time.Second)
	mustAllow(t, l, "k", 1) // 15s, leaked
	w := goAcquire(ctx, l, "k", 2)
	clk.BlockUntilTimers(ctx, 1)
	a.Release()
	clk.Advance(5 * time.Second) // 10s: nothing to reclaim
	clk.BlockUntilTimers(ctx, 1) // set again, for 15s
	pending(w)
	clk.Advance(5 * time.Second)
	mustGrantWait(t, w).Release()
}

func mustGrantWait(t *testing.T, ch <-chan result) concurrency.Permit {
	t.Helper()
	r := <-ch
	if r.err != nil || !r.d.Allowed {
		t.Fatalf("Acquire: %+v, %v; want a grant", r.d, r.err)
	}
	return r.p
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 2, Lease: time.Minute, MaxWait: time.Hour})
	holder := mustAllow(t, l, "k", 2)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctx
			if i%2 == 0 {
				c = context.Background()
			}
			if p, d, _ := l.Acquire(c, admit.Request{Key: "k", N: 1}); d.Allowed {
				p.Release()
			}
		}()
	}
	for l.Waiting("k") != 20 {
		runtime.Gosched()
	}
	cancel()
	holder.Release()
	wg.Wait()
	if st := l.Stats(); st != (concurrency.Stats{Waits: 20}) { // served or cancelled
		t.Fatalf("Stats at the end: %+v", st)
	}
	if n := clk.Timers(); n != 0 {
		t.Fatalf("%d timers left", n)
	}
	// Goroutines that called wg.Done may not have exited yet; none may be
	// left in the Limiter.
	for i := 0; ; i++ {
		n, stacks := limiterGoroutines()
		if n == 0 && runtime.NumGoroutine() <= before {
			break
		}
		if i == 100000 {
			t.Fatalf("%d goroutines (%d before), %d in the Limiter:\n%s", runtime.NumGoroutine(), before, n, stacks)
		}
		runtime.Gosched()
	}
}

// limiterGoroutines counts the goroutines with a Limiter's method on their
// stacks, and returns their stacks.
func limiterGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n, out := 0, ""
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "concurrency.(*Limiter)") {
			n++
			out += g + "\n\n"
		}
	}
	return n, out
}

func TestStress(t *testing.T) {
	const (
		max        = 5
		goroutines = 32
	)
	ops := 2000
	if testing.Short() {
		ops = 200
	}
	l := mustNew(t, concurrency.Config{Max: max, Lease: time.Hour, MaxWaiters: 8})
	keys := []string{"", "a", "b", "c"}
	var inflight [4]atomic.Int64
	var admitted, denied atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range ops {
				k := r.IntN(len(keys))
				n := int64(1 + r.IntN(3))
				var p concurrency.Permit
				var d admit.Decision
				var err error
				if r.IntN(2) == 0 {
					p, d, err = l.Acquire(context.Background(), admit.Request{Key: keys[k], N: n})
				} else {
					p, d, err = l.TryAcquire(context.Background(), admit.Request{Key: keys[k], N: n})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Allowed {
					denied.Add(1)
					continue
				}
				admitted.Add(1)
				if v := inflight[k].Add(n); v > max {
					t.Errorf("key %q: %d in flight > %d", keys[k], v, max)
				}
				runtime.Gosched()
				inflight[k].Add(-n)
				if !p.Release() {
					t.Error("Release failed")
				}
				if p.Release() {
					t.Error("a second Release succeeded")
				}
			}
		}()
	}
	wg.Wait()
	if st := l.Stats(); st != (concurrency.Stats{Waits: st.Waits, Waited: st.Waited}) {
		t.Fatalf("Stats at the end: %+v", st)
	}
	t.Logf("admitted %d, denied %d", admitted.Load(), denied.Load())
	if admitted.Load() == 0 {
		t.Fatal("nothing admitted")
	}
}

func TestStressWaitersOrder(t *testing.T) {
	// Many waiters of mixed weights: every one is served once, in order, and
	// in-flight never exceeds the limit.
	synctest.Test(t, func(t *testing.T) {
		const max = 7
		l := mustNew(t, concurrency.Config{Max: max})
		var inflight atomic.Int64
		var served [100]time.Time
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := int64(1 + i%max)
				p, d, err := l.Acquire(context.Background(), admit.Request{Key: "k", N: n})
				if err != nil || !d.Allowed {
					t.Errorf("waiter %d: %+v, %v", i, d, err)
					return
				}
				if v := inflight.Add(n); v > max {
					t.Errorf("%d in flight", v)
				}
				served[i] = time.Now()
				time.Sleep(time.Millisecond) // fake time: hold the slots a while
				inflight.Add(-n)
				p.Release()
			}()
			synctest.Wait() // start in order of i
		}
		wg.Wait()
		// Admitted in arrival order, strict FIFO: time stands still
		// while the waiters served by one release wake up, so no waiter
		// may have been served later than one that came after it.
		if !slices.IsSortedFunc(served[:], time.Time.Compare) {
			t.Fatalf("served at %v", served)
		}
	})
}
