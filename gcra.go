package admit

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// GCRA is a rate limiter using the generic cell rate algorithm (virtual
// scheduling). Its state is one instant, the theoretical arrival time (TAT):
// the instant at which the limit is back to full capacity. A request of n
// events at instant now is admitted iff
//
//	max(TAT, now) + n×T <= now + B×T
//
// where T = Period/Rate is the emission interval and B the burst; admitting
// it moves the TAT to max(TAT, now) + n×T. So a limiter idle long enough
// admits B events at once, then one every T: over any interval of length t
// it admits at most B + ⌊t/T⌋ events, and exactly that many when requests
// keep coming. A denied request changes nothing.
//
// GCRA decides exactly as TokenBucket and the leaky bucket of
// NewLeakyBucket do (they are one algorithm in three representations) and is the cheapest of them: when T is
// a whole number of nanoseconds (100/s, 10/min, 5000/h...), AllowN is one
// compare-and-swap on one word, without locks. Otherwise a mutex guards a
// two-word state; the arithmetic is exact either way.
//
// The methods follow golang.org/x/time/rate: AllowN(now, n) for a yes or no,
// DecideN for the whole Decision, ReserveN and WaitN for callers who can wait.
// The shorthands without an instant read the limiter's Clock. An instant
// earlier than the TAT's reference is judged as it is: a decision at an
// earlier instant sees more debt, never less.
//
// The zero GCRA is not usable; create one with NewGCRA. A GCRA is safe for
// concurrent use.
type GCRA struct {
	core  atomic.Pointer[gcraCore]
	mu    sync.Mutex // serialises SetLimit
	clock Clock
	name  string
}

// gcraCore is an immutable limit with its mutable state. SetLimit replaces
// the core, sealing the old one so that no update lands on it afterwards.
type gcraCore struct {
	p     algo.Params
	limit Limit
	fast  bool         // p.Mode == Normal && p.Td == 1: the state is tat
	tat   atomic.Int64 // fast path: the TAT, or sealed
	mu    sync.Mutex   // slow path
	st    algo.GCRA    // slow path state
	gone  bool         // slow path: sealed
}

const sealed = math.MinInt64

// NewGCRA returns a GCRA limiter for l, full, with the settings o (at
// most one; see Options: the default clock is SystemClock, and the Name is
// the Rule of its decisions). The error wraps ErrInvalidLimit for an
// invalid l and ErrInvalidConfig for invalid settings.
func NewGCRA(l Limit, o ...Options) (*GCRA, error) {
	p, err := l.compile()
	if err != nil {
		return nil, err
	}
	s, err := buildOptions("NewGCRA", o)
	if err != nil {
		return nil, err
	}
	g := &GCRA{clock: s.clock, name: s.name}
	g.core.Store(newGCRACore(p, l.normal(), algo.GCRA{}))
	return g, nil
}

func newGCRACore(p algo.Params, l Limit, st algo.GCRA) *gcraCore {
	c := &gcraCore{p: p, limit: l, fast: p.Mode == algo.Normal && p.Td == 1}
	if c.fast {
		c.tat.Store(st.At)
	} else {
		c.st = st
	}
	return c
}

// load returns the current core and, locked for the slow path, its state.
// Callers of a slow core must unlock c.mu.
func (g *GCRA) load() *gcraCore {
	for {
		c := g.core.Load()
		if c.fast {
			return c
		}
		c.mu.Lock()
		if !c.gone {
			return c
		}
		c.mu.Unlock()
		runtime.Gosched()
	}
}

// update applies f to the state of the current core and returns what f
// returned. On the fast path f may run several times.
func gcraUpdate[R any](g *GCRA, f func(c *gcraCore, s algo.GCRA) (algo.GCRA, R, bool)) R {
	for {
		c := g.load()
		if !c.fast {
			next, r, write := f(c, c.st)
			if write {
				c.st = next
			}
			c.mu.Unlock()
			return r
		}
		s := c.tat.Load()
		if s == sealed {
			runtime.Gosched()
			continue
		}
		next, r, write := f(c, algo.GCRA{At: s})
		if !write || next.At == s || c.tat.CompareAndSwap(s, next.At) {
			return r
		}
	}
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (g *GCRA) Allow() bool { return g.allowAt(clockNanos(g.clock), 1) }

// AllowN reports whether n events may happen at instant now, and if so
// consumes them. It never waits. A negative n or an n above the burst is
// never allowed; n = 0 always is.
func (g *GCRA) AllowN(now time.Time, n int) bool { return g.allowAt(nanos(now), n) }

func (g *GCRA) allowAt(t int64, n int) bool {
	c := g.core.Load()
	if c.fast {
		k := int64(n)
		if k > c.p.Burst || k < 0 {
			return false
		}
		if k == 0 {
			return true
		}
		room := c.p.CapN - k*c.p.Tn // >= 0
		for {
			s := c.tat.Load()
			if s == sealed { // SetLimit is replacing the core
				runtime.Gosched()
				return g.allowAt(t, n)
			}
			tat := s
			if tat < t {
				tat = t
			}
			if tat-t > room {
				return false
			}
			if c.tat.CompareAndSwap(s, tat+k*c.p.Tn) {
				return true
			}
		}
	}
	return gcraUpdate(g, func(c *gcraCore, s algo.GCRA) (algo.GCRA, bool, bool) {
		switch c.p.Mode {
		case algo.Unlimited:
			return s, true, false
		case algo.Closed:
			return s, n == 0, false
		}
		next, ok := algo.GCRAAllow(s, &c.p, t, int64(n))
		return next, ok, ok
	})
}

// Decide is shorthand for DecideN(clock.Now(), 1).
func (g *GCRA) Decide() Decision { return g.decideAt(clockNanos(g.clock), 1) }

// DecideN is AllowN returning the whole Decision: what remains, when to
// retry and when the limit is full again.
func (g *GCRA) DecideN(now time.Time, n int) Decision { return g.decideAt(nanos(now), n) }

func (g *GCRA) decideAt(t int64, n int) Decision {
	for {
		c := g.core.Load()
		if !c.fast {
			break
		}
		s := c.tat.Load()
		if s == sealed {
			runtime.Gosched()
			continue
		}
		if n < 0 {
			return invalidCost(c.limit, g.name)
		}
		next, r := algo.GCRAStep(algo.GCRA{At: s}, &c.p, t, int64(n))
		if !r.Allowed || n == 0 || c.tat.CompareAndSwap(s, next.At) {
			return decision(r, c.limit, g.name)
		}
	}
	return gcraUpdate(g, func(c *gcraCore, s algo.GCRA) (algo.GCRA, Decision, bool) {
		if n < 0 {
			return s, invalidCost(c.limit, g.name), false
		}
		next, r := algo.GCRAStep(s, &c.p, t, int64(n))
		return next, decision(r, c.limit, g.name), r.Allowed && n > 0
	})
}

// Limit returns the current limit, with Burst filled in.
func (g *GCRA) Limit() Limit { return g.core.Load().limit }

// Burst returns the current burst.
func (g *GCRA) Burst() int64 { return g.core.Load().limit.Burst }

// Tokens is shorthand for TokensAt(clock.Now()).
func (g *GCRA) Tokens() float64 { return g.TokensAt(g.clock.Now()) }

// TokensAt returns how many events the limit could admit at instant now
// (fractional, and negative while reservations are outstanding).
func (g *GCRA) TokensAt(now time.Time) float64 {
	t := nanos(now)
	return gcraUpdate(g, func(c *gcraCore, s algo.GCRA) (algo.GCRA, float64, bool) {
		return s, algo.GCRATokens(s, &c.p, t), false
	})
}

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (g *GCRA) SetLimit(l Limit) error { return g.SetLimitAt(g.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The events available at now
// carry over (capped at the new burst), as in golang.org/x/time/rate, so
// raising a limit never takes capacity away and lowering it never grants
// any. Reservations made before the change can no longer be cancelled. The
// error wraps ErrInvalidLimit; the old limit then stays.
func (g *GCRA) SetLimitAt(now time.Time, l Limit) error {
	p, err := l.compile()
	if err != nil {
		return err
	}
	t := nanos(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.core.Load()
	var st algo.GCRA
	if old.fast {
		for {
			s := old.tat.Load()
			if old.tat.CompareAndSwap(s, sealed) {
				st = algo.GCRA{At: s}
				break
			}
		}
	} else {
		old.mu.Lock()
		st, old.gone = old.st, true
		old.mu.Unlock()
	}
	g.core.Store(newGCRACore(p, l.normal(), algo.GCRARebase(st, &old.p, &p, t)))
	return nil
}

// SetBurst is shorthand for SetBurstAt(clock.Now(), b).
func (g *GCRA) SetBurst(b int64) error { return g.SetBurstAt(g.clock.Now(), b) }

// SetBurstAt changes the burst at instant now, keeping the rate.
func (g *GCRA) SetBurstAt(now time.Time, b int64) error {
	return g.SetLimitAt(now, g.Limit().WithBurst(b))
}

// Reserve is shorthand for ReserveN(clock.Now(), 1).
func (g *GCRA) Reserve() Reservation { return g.ReserveN(g.clock.Now(), 1) }

// ReserveN reserves n events at instant now, to be used after the
// Reservation's delay, whether or not they are available now. Its OK method
// reports false if n exceeds the burst (the events can never be available);
// otherwise the caller must wait Delay before acting, or Cancel. A
// reservation may not reach more than 36 years ahead.
//
//	r := lim.ReserveN(time.Now(), 1)
//	if !r.OK() {
//		return // not allowed to act
//	}
//	time.Sleep(r.Delay())
//	act()
func (g *GCRA) ReserveN(now time.Time, n int) Reservation {
	return g.reserve(nanos(now), int64(n), algo.MaxSpan)
}

func (g *GCRA) reserve(t, n, maxWait int64) Reservation {
	return gcraUpdate(g, func(c *gcraCore, s algo.GCRA) (algo.GCRA, Reservation, bool) {
		next, wait, ok := algo.GCRAReserve(s, &c.p, t, n, maxWait)
		r := Reservation{ok: ok, n: n, limit: c.limit, act: t + wait}
		if !ok {
			return s, r, false
		}
		r.lim, r.owner, r.after = g, c, [2]int64{next.At, next.Frac}
		return next, r, n > 0 && c.p.Mode == algo.Normal
	})
}

// cancel gives back what a reservation reserved, as far as later
// reservations did not rely on it, if its time to act is after t.
func (g *GCRA) cancel(owner any, act, n int64, after [2]int64, t int64) bool {
	if act <= t {
		return false
	}
	gcraUpdate(g, func(c *gcraCore, s algo.GCRA) (algo.GCRA, struct{}, bool) {
		if c != owner {
			return s, struct{}{}, false
		}
		prev := algo.GCRA{At: after[0], Frac: after[1]}
		return algo.GCRARefund(s, &c.p, t, prev, n), struct{}{}, true
	})
	return true
}

func (g *GCRA) now() time.Time { return g.clock.Now() }

// Wait is shorthand for WaitN(ctx, 1).
func (g *GCRA) Wait(ctx context.Context) error { return g.WaitN(ctx, 1) }

// WaitN blocks until n events are allowed, reading time from the limiter's
// Clock. It returns an error wrapping ErrExceedsBurst if n exceeds the burst,
// the context's error if it is done first, and ErrDeadline (which matches
// context.DeadlineExceeded) at once if the wait would end after the
// context's deadline. A wait that ends early gives its events back.
func (g *GCRA) WaitN(ctx context.Context, n int) error {
	return waitN(ctx, g.clock, g.Limit(), n, g.reserve)
}
