package admittest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// fired returns what t has sent, if anything, without blocking.
func fired(t admit.Timer) (time.Time, bool) {
	select {
	case at := <-t.C():
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestManualClockTimers(t *testing.T) {
	c := NewManualClock(Epoch)
	t3, t1, t2, t2b := c.NewTimer(3*sec), c.NewTimer(sec), c.NewTimer(2*sec), c.NewTimer(2*sec)
	if c.Timers() != 4 || !c.Now().Equal(Epoch) {
		t.Fatalf("Timers %d Now %v", c.Timers(), c.Now())
	}
	c.Advance(sec - ns)
	if _, ok := fired(t1); ok {
		t.Fatal("fired 1ns early")
	}
	c.Advance(ns)
	if at, ok := fired(t1); !ok || !at.Equal(At(sec)) {
		t.Fatalf("t1: %v %v", at, ok)
	}
	if c.Timers() != 3 {
		t.Fatalf("Timers %d after one fired", c.Timers())
	}
	if !t2b.Stop() || t2b.Stop() || t1.Stop() {
		t.Fatal("Stop: want true once for a pending timer, false after")
	}
	c.Set(At(10 * sec))
	if at, ok := fired(t2); !ok || !at.Equal(At(2*sec)) {
		t.Errorf("t2: %v %v", at, ok)
	}
	if at, ok := fired(t3); !ok || !at.Equal(At(3*sec)) {
		t.Errorf("t3: %v %v", at, ok)
	}
	if _, ok := fired(t2b); ok {
		t.Error("a stopped timer fired")
	}
	if c.Timers() != 0 || !c.Now().Equal(At(10*sec)) {
		t.Errorf("Timers %d Now %v", c.Timers(), c.Now())
	}
	// Going backwards fires nothing; the timer fires when time comes back.
	t4 := c.NewTimer(sec) // at +11s
	c.Set(t0)
	c.Advance(10 * sec)
	if _, ok := fired(t4); ok || c.Timers() != 1 {
		t.Fatal("fired after going backwards")
	}
	c.Advance(sec)
	if at, ok := fired(t4); !ok || !at.Equal(At(11*sec)) {
		t.Errorf("t4: %v %v", at, ok)
	}
	// d <= 0 fires at once.
	for _, d := range []time.Duration{0, -sec} {
		tm := c.NewTimer(d)
		if at, ok := fired(tm); !ok || !at.Equal(c.Now()) || tm.Stop() {
			t.Errorf("NewTimer(%v): %v %v", d, at, ok)
		}
	}
	var zero ManualClock
	if !zero.Now().IsZero() {
		t.Error("zero ManualClock does not read the zero time")
	}
}

func TestManualClockBlockUntilTimers(t *testing.T) {
	c := NewManualClock(Epoch)
	ctx := t.Context()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			c.NewTimer(sec)
		}
	}()
	if err := c.BlockUntilTimers(ctx, 3); err != nil {
		t.Fatal(err)
	}
	<-done
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.BlockUntilTimers(cctx, 4); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if err := c.BlockUntilTimers(cctx, 3); err != nil {
		t.Errorf("already 3 timers: %v", err)
	}
}

// TestManualClockConcurrent drives goroutines that each wait on timers in
// turn; run it with -race.
func TestManualClockConcurrent(t *testing.T) {
	const workers, rounds = 8, 50
	c := NewManualClock(Epoch)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				tm := c.NewTimer(time.Duration(1+(w*rounds+i)%97) * ms)
				if i%5 == 4 { // stopped ones do not fire; start another
					tm.Stop()
					tm = c.NewTimer(ms)
				}
				at := <-tm.C()
				if now := c.Now(); now.Before(at) {
					t.Errorf("fired at %v before its deadline %v", now, at)
				}
			}
		}()
	}
	// Advance whenever a timer is pending, until every worker is done. (A
	// timer counted here may be stopped or fire before its worker stops
	// it; either way the worker starts another.)
	bctx, cancel := context.WithCancel(ctx)
	go func() {
		wg.Wait()
		cancel()
	}()
	for c.BlockUntilTimers(bctx, 1) == nil {
		c.Advance(100 * ms)
	}
	wg.Wait()
	if c.Timers() != 0 {
		t.Errorf("%d timers left", c.Timers())
	}
}

// TestManualClockDrivesWaitN: a limiter's WaitN parks on the clock's timer
// and returns when the clock reaches its slot, not before.
func TestManualClockDrivesWaitN(t *testing.T) {
	c := NewManualClock(Epoch)
	lim, err := admit.NewGCRA(admit.PerSecond(3).WithBurst(1), admit.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	if !lim.Allow() {
		t.Fatal("first Allow denied")
	}
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- lim.Wait(ctx) }()
	if err := c.BlockUntilTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(333333333 * ns) // T = 333333333⅓ns: the slot is at ⌈T⌉
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v 1ns early", err)
	default:
	}
	c.Advance(ns)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
