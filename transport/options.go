package transport

import (
	"fmt"
	"math"
	"time"

	"github.com/admit-go/admit"
)

// The defaults of the options.
const (
	// DefaultMaxWait is the default longest time a request waits for its
	// turn (see WithMaxWait).
	DefaultMaxWait = 10 * time.Second
	// DefaultMaxPause is the default longest pause an upstream can ask for
	// (see WithMaxPause).
	DefaultMaxPause = 5 * time.Minute
	// DefaultMaxHosts is the default number of hosts a Transport tracks
	// (see WithMaxHosts).
	DefaultMaxHosts = 10000
	// DefaultBudgetRatio, DefaultBudgetMin and DefaultBudgetWindow are the
	// default retry budget: retries may add 20% to the requests of the
	// last 10 seconds, plus 10 (see WithRetryBudget).
	DefaultBudgetRatio  = 0.2
	DefaultBudgetMin    = 10
	DefaultBudgetWindow = 10 * time.Second
	// DefaultBackoff and DefaultMaxBackoff bound the jittered exponential
	// backoff between retries (see WithBackoff).
	DefaultBackoff    = 100 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
)

// Reserver is a rate limiter with reservations, such as *admit.GCRA and
// *admit.TokenBucket: ReserveN reserves n events at instant now and says
// when they may be used; the reservation can be cancelled.
type Reserver interface {
	ReserveN(now time.Time, n int) admit.Reservation
}

// Option configures a Transport. The zero set of options gives the
// defaults documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	lim        Reserver
	hostLimit  *admit.Limit
	maxWait    time.Duration
	maxPause   time.Duration
	maxHosts   int
	retries    int
	ratio      float64
	budgetMin  int64
	window     time.Duration
	backoff    time.Duration
	maxBackoff time.Duration
	clock      admit.Clock
	err        error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithLimiter makes every request wait for a token of lim, shared by all
// hosts, before it is sent (each retry too). lim must read the same clock
// as the Transport (WithClock). The default is none.
func WithLimiter(lim Reserver) Option {
	return optionFunc(func(o *options) {
		if lim == nil {
			o.fail("WithLimiter(nil)")
			return
		}
		o.lim = lim
	})
}

// WithHostLimit gives each host its own GCRA limit l: requests to a host
// wait for a token of its limit before they are sent (each retry too). The
// host is the request URL's host, lower-cased, without the scheme's
// default port. The default is none. l must be a valid Limit.
func WithHostLimit(l admit.Limit) Option {
	return optionFunc(func(o *options) {
		if err := l.Validate(); err != nil {
			o.fail("WithHostLimit(%v): %v", l, err)
			return
		}
		o.hostLimit = &l
	})
}

// WithMaxWait sets the longest time a request waits for its turn (rate
// limit tokens and the end of a pause together). A request that would
// wait longer fails at once with an error wrapping ErrWaitTooLong; one
// whose wait would pass its context's deadline fails at once with
// ErrDeadline. The default is DefaultMaxWait; d must not be negative
// (0 never waits: requests go at once or fail).
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.fail("WithMaxWait(%v): want a duration >= 0", d)
			return
		}
		o.maxWait = d
	})
}

// WithMaxPause caps the pause an upstream can ask for with Retry-After,
// RateLimit or X-RateLimit-Reset: a longer one (a year, a date far away, a
// garbled number) pauses the host for d. The default is DefaultMaxPause; d
// must not be negative (0 ignores pauses).
func WithMaxPause(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.fail("WithMaxPause(%v): want a duration >= 0", d)
			return
		}
		o.maxPause = d
	})
}

// WithMaxHosts caps the number of hosts the Transport tracks (their
// limits and pauses). Hosts whose limit is full and that are not paused
// are forgotten when the cap is reached, which changes nothing; beyond
// that, a request to a new host fails with ErrTooManyHosts if it needs a
// host limit, and a new host's pause is not recorded. The default is
// DefaultMaxHosts; n must be positive.
func WithMaxHosts(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxHosts(%d): want n > 0", n)
			return
		}
		o.maxHosts = n
	})
}

// WithRetries retries requests answered 429 (Too Many Requests) or 503
// (Service Unavailable) up to n times, if they are idempotent (GET, HEAD,
// OPTIONS, TRACE, or with an Idempotency-Key or X-Idempotency-Key header)
// and their body can be sent again (none, or a GetBody, which
// http.NewRequest sets for in-memory bodies). Each retry waits for the
// host's pause (the response's Retry-After) and a jittered exponential
// backoff (WithBackoff), within the maximum wait and the deadline, and
// takes a token of the retry budget (WithRetryBudget); when it cannot,
// the 429 or 503 is returned as it came. The default is 0: no retries;
// n must not be negative.
func WithRetries(n int) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.fail("WithRetries(%d): want n >= 0", n)
			return
		}
		o.retries = n
	})
}

// WithRetryBudget bounds retries, so that a limit never becomes a retry
// storm: over any window of the given length, retries may be at most
// ratio × the requests sent in it (not counting retries) plus min. The
// default is DefaultBudgetRatio, DefaultBudgetMin and DefaultBudgetWindow;
// ratio must be in [0, 10], min must not be negative, and window must be
// at least a millisecond. The budget matters only with WithRetries.
func WithRetryBudget(ratio float64, min int, window time.Duration) Option {
	return optionFunc(func(o *options) {
		if math.IsNaN(ratio) || ratio < 0 || ratio > 10 || min < 0 || window < time.Millisecond {
			o.fail("WithRetryBudget(%v, %d, %v): want ratio in [0, 10], min >= 0, window >= 1ms", ratio, min, window)
			return
		}
		o.ratio, o.budgetMin, o.window = ratio, int64(min), window
	})
}

// WithBackoff sets the backoff between retries: before retry k (from 1) a
// request waits at least a random duration between half and all of
// base×2^(k-1), capped at max, or the host's pause if that is longer.
// The defaults are DefaultBackoff and DefaultMaxBackoff; 0 <= base <= max.
func WithBackoff(base, max time.Duration) Option {
	return optionFunc(func(o *options) {
		if base < 0 || max < base {
			o.fail("WithBackoff(%v, %v): want 0 <= base <= max", base, max)
			return
		}
		o.backoff, o.maxBackoff = base, max
	})
}

// WithClock sets the clock the Transport reads and waits on, for its
// pauses, its host limits and the retry budget. The default is
// admit.SystemClock; tests use admittest.ManualClock, with a limiter of
// WithLimiter on the same clock.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}
