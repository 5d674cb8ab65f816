package parity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"golang.org/x/time/rate"
)

// base is the origin of the instants: a wall-clock instant without a
// monotonic reading, which both libraries take as it is.
var base = time.Unix(1_700_000_000, 0)

func at(ns int64) time.Time { return base.Add(time.Duration(ns)) }

// grid is the step of the instants of the exact shapes: 1/512 s. A
// duration that is a multiple of it is an exact float64 number of seconds
// (d.Seconds() = j/512), so with a rate of 2^k per second (k <= 9)
// x/time/rate's tokens are exact multiples of 2^(k-9) and its delays exact
// multiples of the grid: its float64 arithmetic then rounds nothing, and
// the two libraries must agree exactly.
const grid = int64(time.Second / 512)

type mode int

const (
	finite mode = iota
	unlimited
	zero
)

// limit is one limit as both libraries state it.
type limit struct {
	mode   mode
	xr     rate.Limit    // x/time/rate: events per second (finite)
	rate   int64         // admit: Rate per Period (finite)
	period time.Duration //
	k      int           // exact shapes: 2^k per second
	burst  int
}

// pow2 is the limit of 2^k per second.
func pow2(k, burst int) limit {
	l := limit{mode: finite, xr: rate.Limit(math.Ldexp(1, k)), k: k, burst: burst, rate: 1, period: time.Second}
	if k >= 0 {
		l.rate = 1 << k
	} else {
		l.period = time.Second << -k
	}
	return l
}

// per is the limit of n per period, for the inexact shapes.
func per(n int64, period time.Duration, burst int) limit {
	return limit{mode: finite, xr: rate.Limit(float64(n) / period.Seconds()), rate: n, period: period, burst: burst}
}

func (l limit) admit() admit.Limit {
	switch l.mode {
	case unlimited:
		return admit.Unlimited.WithBurst(int64(l.burst))
	case zero:
		return admit.Limit{}
	}
	return admit.Limit{Rate: l.rate, Period: l.period, Burst: int64(l.burst)}
}

func (l limit) x() rate.Limit {
	switch l.mode {
	case unlimited:
		return rate.Inf
	case zero:
		return 0
	}
	return l.xr
}

// interval is T in ns (0 when unlimited or zero).
func (l limit) interval() float64 {
	if l.mode != finite {
		return 0
	}
	return float64(l.period) / float64(l.rate)
}

func (l limit) String() string {
	switch l.mode {
	case unlimited:
		return fmt.Sprintf("inf burst %d", l.burst)
	case zero:
		return "zero"
	}
	return fmt.Sprintf("%d/%v burst %d", l.rate, l.period, l.burst)
}

// shape is a family of sequences: the limit they start with and the ones
// SetLimitAt picks from.
type shape struct {
	name   string
	exact  bool    // instants on the grid, rates 2^k/s: no rounding anywhere
	start  limit   //
	others []limit // finite limits SetLimitAt may change to (besides unlimited and zero)
	bursts []int   // bursts SetBurstAt picks from
}

// res is one reservation held on both limiters.
type res struct {
	x         *rate.Reservation
	a         admit.Reservation
	n         int
	xAct      int64 // ns: x/time/rate's time to act
	aAct      int64 // ns: admit's
	underInf  bool  // made under an unlimited limit
	lim       limit // the limit it was made under
	cancelled bool
}

// stats counts what a shape's sequences did.
type stats struct {
	ops, compared int
	resyncs       map[string]int
	bools         map[string][2]int // true/false answers per operation
}

func (s *stats) answer(op string, v bool) {
	c := s.bools[op]
	if v {
		c[0]++
	} else {
		c[1]++
	}
	s.bools[op] = c
}

// harness runs one sequence on both limiters.
type harness struct {
	t    *testing.T
	sh   shape
	rng  *rand.Rand
	st   *stats
	x    *rate.Limiter
	a    *admit.TokenBucket
	cur  limit
	minK int // exact shapes: the slowest rate since the last resync
	now  int64
	// The latest instant of each limiter (x/time/rate's last, admit's
	// latest instant) is needed to pass x/time/rate the instant admit
	// judges a request at when time goes backwards. c is the latest
	// instant at which both certainly moved to the same instant; u the
	// latest at which either may have moved (a peek moves only
	// x/time/rate's; a cancel moves both or neither, depending on what it
	// gives back). hasC is false after a resync.
	c, u  int64
	hasC  bool
	res   []*res
	drift float64 // inexact shapes: tokens the rounding may have moved apart
	// chain is set when a reservation cancelled in time had its
	// predecessor's time to act (its own less its n tokens' span) rounded
	// apart by the two libraries (inexact shapes).
	chain bool
	log   []string
}

func (h *harness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf("%d [drift %g]: ", h.now, h.drift)+fmt.Sprintf(format, args...))
	if len(h.log) > 60 {
		h.log = h.log[1:]
	}
}

// fail reports a difference with the calls that led to it.
func (h *harness) fail(format string, args ...any) {
	h.t.Helper()
	msg := fmt.Sprintf(format, args...)
	for _, l := range h.log {
		msg += "\n\t" + l
	}
	h.t.Fatalf("%s (%v): %s", h.sh.name, h.cur, msg)
}

// resync replaces both limiters with full ones under the current limit,
// after a difference the test allows: the sequence goes on from equal
// states.
func (h *harness) resync(why string) {
	h.st.resyncs[why]++
	h.logf("resync: %s", why)
	h.fresh()
}

func (h *harness) fresh() {
	var err error
	h.x = rate.NewLimiter(h.cur.x(), h.cur.burst)
	if h.cur.mode == zero {
		h.x = rate.NewLimiter(0, 0)
	}
	if h.a, err = admit.NewTokenBucket(h.cur.admit()); err != nil {
		h.t.Fatal(err)
	}
	h.res, h.hasC, h.u, h.drift, h.chain = nil, false, math.MinInt64, 0, false
	h.minK = math.MaxInt
	if h.cur.mode == finite {
		h.minK = h.cur.k
	}
}

// xAt is the instant x/time/rate is given for a call at t: t, or admit's
// latest instant if t is earlier (see c and u).
func (h *harness) xAt(t int64) int64 {
	if h.hasC && t < h.c {
		return h.c
	}
	return t
}

func (h *harness) movedBoth(t int64) {
	if !h.hasC || t > h.c {
		h.c, h.hasC = t, true
	}
	h.u = max(h.u, t)
}

func (h *harness) movedEither(t int64) { h.u = max(h.u, t) }
