package admit

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// In these tests time is synctest's fake clock: a goroutine blocked on a
// timer lets time jump to the timer's deadline, so nothing sleeps for real.

func mustPacer(t *testing.T, l Limit, c ...PacerConfig) *Pacer {
	t.Helper()
	p, err := NewPacer(l, c...)
	if err != nil {
		t.Fatalf("NewPacer(%v): %v", l, err)
	}
	return p
}

// takeAll runs count sequential Takes and returns their instants relative to
// the start.
func takeAll(t *testing.T, p *Pacer, count int) []time.Duration {
	t.Helper()
	start := time.Now()
	var got []time.Duration
	for range count {
		at, err := p.Take()
		if err != nil {
			t.Fatalf("Take: %v", err)
		}
		got = append(got, at.Sub(start))
	}
	return got
}

func TestPacerExactSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// T = 333333333⅓ns: slot k is at ⌈k×T⌉, with no drift.
		p := mustPacer(t, PerSecond(3))
		got := takeAll(t, p, 3001)
		for k, d := range got {
			want := time.Duration((int64(k)*int64(time.Second) + 2) / 3)
			if d != want {
				t.Fatalf("event %d released at %v, want %v", k, d, want)
			}
		}
		if got[3000] != 1000*time.Second {
			t.Fatalf("event 3000 at %v, want 1000s", got[3000])
		}
	})
}

func TestPacerIdleGivesNoBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, PerSecond(10)) // Burst 10 is ignored
		if b := p.Limit().Burst; b != 1 {
			t.Fatalf("Limit().Burst = %d, want 1", b)
		}
		takeAll(t, p, 2)
		time.Sleep(time.Hour)
		got := takeAll(t, p, 3)
		want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}
		if !slices.Equal(got, want) {
			t.Fatalf("after idle: %v, want %v", got, want)
		}
	})
}

// queue starts count waiters one after another, each queued before the
// next starts, and returns the order and instants of their releases.
func queue(t *testing.T, p *Pacer, ctxs []context.Context) (order []int, at []time.Duration, errs []error) {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	errs = make([]error, len(ctxs))
	var wg sync.WaitGroup
	for i, ctx := range ctxs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.Wait(ctx)
			mu.Lock()
			defer mu.Unlock()
			errs[i] = err
			if err == nil {
				order = append(order, i)
				at = append(at, time.Since(start))
			}
		}()
		synctest.Wait()
	}
	wg.Wait()
	return order, at, errs
}

func backgrounds(n int) []context.Context {
	c := make([]context.Context, n)
	for i := range c {
		c[i] = context.Background()
	}
	return c
}

func TestPacerFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, Every(time.Second))
		order, at, _ := queue(t, p, backgrounds(20))
		for i := range order {
			if order[i] != i || at[i] != time.Duration(i)*time.Second {
				t.Fatalf("release %d: waiter %d at %v; want waiter %d at %ds", i, order[i], at[i], i, i)
			}
		}
		if p.Len() != 0 {
			t.Fatalf("Len = %d after all released", p.Len())
		}
	})
}

func TestPacerConcurrentSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Many goroutines at once: every release is one interval after the
		// previous, whatever order the goroutines queued in.
		p := mustPacer(t, PerSecond(1000))
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 10 {
					if _, err := p.Take(); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					at = append(at, time.Since(start))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(at)
		for i, d := range at {
			if want := time.Duration(i) * time.Millisecond; d != want {
				t.Fatalf("release %d at %v, want %v", i, d, want)
			}
		}
	})
}

func TestPacerBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, Every(time.Second), PacerConfig{MaxQueue: 2})
		takeAll(t, p, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go p.Wait(ctx)
		go p.Wait(ctx)
		synctest.Wait()
		if _, err := p.Take(); !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "Pacer: 2 callers waiting") {
			t.Fatalf("third waiter: %v, want ErrQueueFull", err)
		}
		cancel()
		synctest.Wait()
		if p.Len() != 0 {
			t.Fatalf("Len = %d after cancel", p.Len())
		}

		p = mustPacer(t, Every(time.Second), PacerConfig{MaxWait: time.Second})
		got := takeAll(t, p, 2) // the second waits exactly the maximum
		if got[1] != time.Second {
			t.Fatalf("second release at %v", got[1])
		}
		go p.Take()
		synctest.Wait()
		if _, err := p.Take(); !errors.Is(err, ErrWaitTooLong) || !strings.Contains(err.Error(), "Pacer: the slot is 2s away, the maximum is 1s") {
			t.Fatalf("slot 2s away with max wait 1s: %v, want ErrWaitTooLong", err)
		}

		// Fail fast on the context's deadline.
		p = mustPacer(t, Every(time.Second))
		takeAll(t, p, 1)
		dctx, dcancel := context.WithTimeout(context.Background(), 999*time.Millisecond)
		defer dcancel()
		start := time.Now()
		err := p.Wait(dctx)
		if !errors.Is(err, ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slot after the deadline: %v, want ErrDeadline", err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("refusal took %v, want at once", time.Since(start))
		}
		dctx2, dcancel2 := context.WithTimeout(context.Background(), time.Second)
		defer dcancel2()
		if err := p.Wait(dctx2); err != nil {
			t.Fatalf("slot at the deadline: %v", err)
		}

		// A negative MaxQueue or MaxWait: only a free slot is taken.
		for c, want := range map[PacerConfig]error{{MaxQueue: -1}: ErrQueueFull, {MaxWait: -1}: ErrWaitTooLong} {
			p = mustPacer(t, Every(time.Second), c)
			takeAll(t, p, 1)
			if _, err := p.Take(); !errors.Is(err, want) {
				t.Fatalf("%+v: %v, want %v", c, err, want)
			}
			time.Sleep(time.Second)
			takeAll(t, p, 1)
		}
	})
}

func TestPacerCancelFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, Every(time.Second))
		takeAll(t, p, 1) // slot 0 taken; next at 1s
		start := time.Now()
		ctxs := backgrounds(4)
		cctx, cancelHead := context.WithCancel(context.Background())
		mctx, cancelMid := context.WithCancel(context.Background())
		ctxs[0], ctxs[2] = cctx, mctx
		go func() {
			// Cancel the head (slot 1s) and a waiter in the middle (slot
			// 3s) at 500ms: waiters 1 and 3 get slots 1s and 2s.
			time.Sleep(500 * time.Millisecond)
			cancelHead()
			cancelMid()
		}()
		order, at, errs := queue(t, p, ctxs)
		if !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[2], context.Canceled) {
			t.Fatalf("cancelled waiters returned %v, %v", errs[0], errs[2])
		}
		if !slices.Equal(order, []int{1, 3}) || !slices.Equal(at, []time.Duration{time.Second, 2 * time.Second}) {
			t.Fatalf("released %v at %v, want [1 3] at [1s 2s]", order, at)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("done at %v", d)
		}
		// The next caller gets 3s: nothing was lost or double-booked.
		if got := takeAll(t, p, 1); got[0] != time.Second {
			t.Fatalf("next caller after %v, want 1s", got[0])
		}
	})
}

func TestPacerDegenerate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, Unlimited)
		if got := takeAll(t, p, 1000); got[999] != 0 {
			t.Fatalf("unlimited pacer waited %v", got[999])
		}
		p = mustPacer(t, Limit{})
		if _, err := p.Take(); !errors.Is(err, ErrExceedsBurst) {
			t.Fatalf("zero limit: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		p = mustPacer(t, PerSecond(1))
		if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled context: %v", err)
		}
	})
	for _, l := range []Limit{{Rate: -1, Period: time.Second}, {Rate: 1}, {Rate: 1, Period: 100 * 365 * 24 * time.Hour}} {
		if _, err := NewPacer(l); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("NewPacer(%+v) = %v, want ErrInvalidLimit", l, err)
		}
	}
}

// stepClock moves one second each time it is read.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func (c *stepClock) NewTimer(time.Duration) Timer { panic("stepClock has no timers") }

func TestPacerTakeAllocs(t *testing.T) {
	p := mustPacer(t, Unlimited)
	q := mustPacer(t, PerSecond(3), PacerConfig{Options: Options{Clock: &stepClock{now: epoch}}})
	for name, p := range map[string]*Pacer{"unlimited": p, "1e9/s": q} {
		if a := testing.AllocsPerRun(100, func() { p.Take() }); a != 0 {
			t.Errorf("%s: Take allocates %v", name, a)
		}
	}
}

// TestPacerNoLeak uses the system clock: waiters whose contexts are
// cancelled leave no goroutine or timer behind and no place in the queue.
func TestPacerNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	p := mustPacer(t, Every(time.Hour))
	if _, err := p.Take(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("Wait = %v, want context.Canceled", err)
			}
		})
	}
	for p.Len() < 50 {
		runtime.Gosched()
	}
	cancel()
	wg.Wait()
	if p.Len() != 0 {
		t.Fatalf("Len = %d after every waiter left", p.Len())
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines before, %d after", before, n)
	}
}

// TestPacerStats: Stats counts the callers that waited, released at their
// slot or gone with their context, and the time they waited by the
// pacer's clock; a caller released or refused at once did not wait.
func TestPacerStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPacer(t, Every(time.Second), PacerConfig{MaxQueue: 2})
		takeAll(t, p, 1) // released at once
		go p.Take()      // released at 1s
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		go p.Wait(ctx) // its slot is at 2s; it leaves at 1.5s
		synctest.Wait()
		if _, err := p.Take(); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("a third waiter: %v, want ErrQueueFull", err)
		}
		if s := p.Stats(); s != (PacerStats{Waiting: 2}) {
			t.Fatalf("Stats with two waiting: %+v", s)
		}
		time.Sleep(1500 * time.Millisecond)
		cancel()
		synctest.Wait()
		if s := p.Stats(); s != (PacerStats{Waits: 2, Waited: 2500 * time.Millisecond}) {
			t.Fatalf("Stats at the end: %+v, want 2 waits of 2.5s in all", s)
		}
	})
}
