package sim

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
)

// epoch is the instant a run starts at: Monday 5 January 2026, midnight
// UTC, so that calendar quotas start a day, a week and a month with it.
var epoch = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// clock is the simulated clock of a run: the limiters read it, the run
// moves it forward. Timers fire when the run moves past their instant
// (the engine's limiters never wait in a run, which asks without
// blocking; the timers are there so that any that did would see time).
type clock struct {
	now atomic.Int64 // nanoseconds since epoch

	mu     sync.Mutex
	timers []*timer
}

var _ admit.Clock = (*clock)(nil)

func (c *clock) Now() time.Time { return epoch.Add(time.Duration(c.now.Load())) }

// at returns the simulated time, in nanoseconds since epoch.
func (c *clock) at() int64 { return c.now.Load() }

// set moves the clock to t (never backwards) and fires the timers due.
func (c *clock) set(t int64) {
	if t <= c.now.Load() {
		return
	}
	c.now.Store(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return
	}
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at <= t {
			tm.ch <- epoch.Add(time.Duration(tm.at))
			continue
		}
		kept = append(kept, tm)
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

func (c *clock) NewTimer(d time.Duration) admit.Timer {
	tm := &timer{c: c, at: c.now.Load() + int64(max(d, 0)), ch: make(chan time.Time, 1)}
	if d <= 0 {
		tm.ch <- c.Now()
		return tm
	}
	c.mu.Lock()
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	return tm
}

type timer struct {
	c  *clock
	at int64
	ch chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, tm := range t.c.timers {
		if tm == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
