// Package algo holds admit's rate-limiting algorithms as pure step functions:
// each takes a small state value, the current instant, a cost n and a
// compiled limit, and returns the next state and the decision. They do not
// allocate, do not read the clock and do not lock; the root package wraps
// them in concurrency-safe limiters, the keyed package stores their states
// per key, and the Redis package's Lua scripts mirror them line for line.
//
// All arithmetic is exact. Instants are nanoseconds on the Unix time line,
// clamped to [0, MaxTime]. A limit of Rate events per Period has the emission
// interval T = Period/Rate ns, which need not be a whole number: it is kept as
// the reduced fraction Tn/Td, and the step functions count time in units of
// 1/Td ns, multiplying in 128 bits where a product can exceed 64.
package algo

import (
	"errors"
	"math"
)

const (
	// MaxTime is the latest instant (ns since the Unix epoch, in 2116) the
	// step functions accept; later instants are clamped to it, and instants
	// before the epoch are clamped to 0.
	MaxTime = int64(1) << 62

	// MaxSpan is the longest capacity a limit may have: Burst × Period/Rate
	// must not exceed about 36.5 years.
	MaxSpan = int64(1) << 60

	// MaxUnits bounds the scaled capacity Burst×Tn: it must fit an int64.
	// (A day at a prime rate such as 100003/d needs 8.64e18 units.)
	MaxUnits = int64(math.MaxInt64)

	// Never is the duration (ns) reported as RetryAfter when a request can
	// never be admitted.
	Never = int64(math.MaxInt64)

	// InfRate is the Rate that means "no limit".
	InfRate = int64(math.MaxInt64)

	// farFuture is the latest TAT a state can hold (a saturated debt). It
	// exceeds MaxTime by less than 2^62, so TAT-now never overflows.
	farFuture = MaxTime + 2*MaxSpan
)

// Mode says whether a limit limits at all.
type Mode uint8

const (
	// Normal limits to Rate per Period with the given Burst.
	Normal Mode = iota
	// Unlimited admits everything.
	Unlimited
	// Closed denies everything (a zero rate).
	Closed
)

// Params is a compiled limit: the emission interval T = Tn/Td ns in lowest
// terms, the burst B, and the capacity B×T expressed as CapN = B×Tn units of
// 1/Td ns. The window algorithms use a window of length B×T (so that the
// default Burst = Rate gives a window of one Period holding Rate events).
type Params struct {
	Mode  Mode
	Burst int64 // B, events
	Tn    int64 // numerator of T (ns)
	Td    int64 // denominator of T
	CapN  int64 // B×Tn: capacity in units of 1/Td ns
}

// The errors Compile returns; the root package wraps them in ErrInvalidLimit.
var (
	ErrNegative     = errors.New("rate, period and burst must not be negative")
	ErrNoPeriod     = errors.New("a positive rate needs a positive period")
	ErrZeroBurst    = errors.New("a zero rate denies every request, so it cannot have a burst")
	ErrTooLong      = errors.New("burst × period/rate is longer than 36 years")
	ErrTooFine      = errors.New("burst × period/rate is too fine to represent exactly")
	ErrWindowTooSub = errors.New("the window (burst × period/rate) is shorter than 1ns")
)

// Compile validates a limit of rate events per period (ns) with the given
// burst (0 means burst = rate) and returns its compiled form.
func Compile(rate, period, burst int64) (Params, error) {
	switch {
	case rate < 0 || period < 0 || burst < 0:
		return Params{}, ErrNegative
	case rate == InfRate:
		return Params{Mode: Unlimited, Burst: burst}, nil
	case rate == 0:
		if burst != 0 {
			return Params{}, ErrZeroBurst
		}
		return Params{Mode: Closed}, nil
	case period == 0:
		return Params{}, ErrNoPeriod
	}
	if burst == 0 {
		burst = rate
	}
	var tn, td int64
	if period%rate == 0 {
		tn, td = period/rate, 1
	} else {
		g := int64(gcd(uint64(rate), uint64(period)))
		tn, td = period/g, rate/g
	}
	capN := mul64(uint64(burst), uint64(tn))
	if capN.hi != 0 || capN.lo > uint64(MaxUnits) {
		// B×T may still be a sensible duration with a huge Td; but then the
		// scaled capacity overflows our units.
		if capN.div63(uint64(td)) > MaxSpan {
			return Params{}, ErrTooLong
		}
		return Params{}, ErrTooFine
	}
	if int64(capN.lo)/td > MaxSpan {
		return Params{}, ErrTooLong
	}
	return Params{Mode: Normal, Burst: burst, Tn: tn, Td: td, CapN: int64(capN.lo)}, nil
}

// CheckWindow reports an error if the limit's window B×T is shorter than one
// nanosecond, which the window algorithms cannot represent.
func (p *Params) CheckWindow() error {
	if p.Mode == Normal && p.CapN < p.Td {
		return ErrWindowTooSub
	}
	return nil
}

// Window returns the window length B×T rounded up to whole nanoseconds.
func (p *Params) Window() int64 {
	if p.Mode != Normal {
		return 0
	}
	return ceilDiv(p.CapN, p.Td)
}

// Result is what a step function decides.
type Result struct {
	Allowed    bool
	Remaining  int64 // events that could still be admitted now
	RetryAfter int64 // ns until this request would be admitted; 0 if allowed, Never if never
	ResetAfter int64 // ns until the state is back to full capacity
}

// shift adds gap ns to a result's durations: the result was computed at an
// instant gap ns after the caller's (time went backwards and was clamped).
func (r Result) shift(gap int64) Result {
	if gap <= 0 {
		return r
	}
	if r.RetryAfter != 0 {
		r.RetryAfter = addSat(r.RetryAfter, gap)
	}
	if r.ResetAfter != 0 {
		r.ResetAfter = addSat(r.ResetAfter, gap)
	}
	return r
}

// Clamp maps an instant to the step functions' domain [0, MaxTime].
func Clamp(now int64) int64 {
	if now < 0 {
		return 0
	}
	if now > MaxTime {
		return MaxTime
	}
	return now
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// unlimited and closed are the results of the two degenerate modes.
func unlimited() Result {
	return Result{Allowed: true, Remaining: math.MaxInt64}
}

func closed(n int64) Result {
	if n == 0 {
		return Result{Allowed: true}
	}
	return Result{RetryAfter: Never}
}
