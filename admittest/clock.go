package admittest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/admit-go/admit"
)

// ManualClock is an admit.Clock whose time moves only when a test moves it,
// with Advance or Set. Its timers fire when the time reaches their
// deadlines, in deadline order (timers with the same deadline in the order
// they were made): each receives its deadline on its channel, which is
// buffered, so firing never blocks. BlockUntilTimers lets a test wait until
// the code under test is parked on a timer before moving the time, so
// blocking code is driven without sleeping:
//
//	clk := admittest.NewManualClock(admittest.Epoch)
//	lim, _ := admit.NewGCRA(admit.Every(time.Second), admit.Options{Clock: clk})
//	lim.Allow()
//	go func() { done <- lim.Wait(ctx) }()
//	clk.BlockUntilTimers(ctx, 1) // Wait is blocked on its timer
//	clk.Advance(time.Second)     // fires it: Wait returns nil
//
// The zero ManualClock reads the zero time.Time. A ManualClock is safe for
// concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	pending []*manualTimer // not yet fired nor stopped
	changed chan struct{}  // closed (and replaced) when pending changes
}

var _ admit.Clock = (*ManualClock)(nil)

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once the clock reaches Now()+d. A
// timer with d <= 0 has fired when NewTimer returns.
func (c *ManualClock) NewTimer(d time.Duration) admit.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{clock: c, ch: make(chan time.Time, 1), at: c.now.Add(d), seq: c.seq}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.pending = append(c.pending, t)
	c.notify()
	return t
}

// Advance moves the clock d forward (backward if d < 0), firing the timers
// it reaches.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t, firing the timers whose deadlines are at or
// before t, in deadline order. Setting an earlier time moves the clock
// backwards and fires nothing.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(t)
}

func (c *ManualClock) set(t time.Time) {
	slices.SortFunc(c.pending, func(a, b *manualTimer) int {
		if r := a.at.Compare(b.at); r != 0 {
			return r
		}
		return cmp.Compare(a.seq, b.seq)
	})
	fired := 0
	for _, tm := range c.pending {
		if tm.at.After(t) {
			break
		}
		// The clock passes through each deadline as it fires.
		c.now = tm.at
		tm.ch <- tm.at
		fired++
	}
	c.pending = append(c.pending[:0], c.pending[fired:]...)
	c.now = t
	if fired > 0 {
		c.notify()
	}
}

// Timers returns the number of timers waiting to fire.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// BlockUntilTimers waits until at least n timers are waiting to fire, and
// returns nil; or until ctx is done, and returns its error.
func (c *ManualClock) BlockUntilTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if len(c.pending) >= n {
			c.mu.Unlock()
			return nil
		}
		ch := c.changedLocked()
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changedLocked returns the channel closed at the next change of pending.
func (c *ManualClock) changedLocked() chan struct{} {
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// notify wakes the goroutines in BlockUntilTimers. c.mu is held.
func (c *ManualClock) notify() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// manualTimer is a ManualClock's timer.
type manualTimer struct {
	clock *ManualClock
	ch    chan time.Time
	at    time.Time
	seq   uint64
}

// C returns the channel on which the timer fires.
func (t *manualTimer) C() <-chan time.Time { return t.ch }

// Stop prevents the timer from firing. It reports whether it did so: false
// if the timer had already fired or been stopped.
func (t *manualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.pending, t)
	if i < 0 {
		return false
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	c.notify()
	return true
}
