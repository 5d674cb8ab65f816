package compose

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/admit-go/admit"
)

// The defaults of the options of NewGuard.
const (
	// DefaultTimeout is the default time a Guard gives each call of its
	// primary (see WithTimeout).
	DefaultTimeout = 50 * time.Millisecond
	// DefaultThreshold is the default number of consecutive failures after
	// which a Guard switches to its policy (see WithThreshold).
	DefaultThreshold = 5
	// DefaultProbeInterval is the default time between two probes of the
	// primary by a Breaker (see WithProbeInterval).
	DefaultProbeInterval = time.Second
	// DefaultRetryAfter is the default RetryAfter of FailClosed's denials
	// (see WithRetryAfter).
	DefaultRetryAfter = time.Second
)

// Option configures a Guard. The zero set of options gives the defaults
// documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	timeout    time.Duration
	threshold  int
	interval   time.Duration
	retryAfter time.Duration
	clock      admit.Clock
	name       string
	obs        admit.Observer
	log        *slog.Logger
	isFailure  func(error) bool
	err        error
}

func defaultOptions() options {
	return options{
		timeout:    DefaultTimeout,
		threshold:  DefaultThreshold,
		interval:   DefaultProbeInterval,
		retryAfter: DefaultRetryAfter,
		clock:      admit.SystemClock,
		isFailure:  IsFailure,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithTimeout bounds each call of the primary: it runs under
// context.WithTimeout(ctx, d), and a call that has not returned after d is
// a failure, decided by the policy. A store that is down must cost each
// request milliseconds, not the seconds of a TCP timeout, so keep d a small
// multiple of the store's usual latency. The primary must return when its
// context is done (go-redis and the limiters of this module do); the Guard
// starts no goroutine to abandon a call.
//
// d = 0 gives the primary the caller's context as it is, without a timeout
// of the Guard's own: use it for a primary that never waits, such as a
// keyed.Limiter, to save the cost of a timer per call. The default is
// DefaultTimeout (50ms); a negative d is an error.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.fail("WithTimeout(%v): want a duration >= 0 (0: no timeout)", d)
			return
		}
		o.timeout = d
	})
}

// WithThreshold sets the number of consecutive failures of the primary
// after which the Guard considers it down: it reports the switch (to the
// Observer and the logger) and, under a Breaker, stops calling it. A
// failure is an error of the primary (see IsFailure) or a timeout; a
// success resets the count. Failures below the threshold are decided by the
// policy too, one by one, and counted in Stats. The default is
// DefaultThreshold (5); n must be at least 1.
func WithThreshold(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 {
			o.fail("WithThreshold(%d): want at least 1 failure", n)
			return
		}
		o.threshold = n
	})
}

// WithProbeInterval sets how often a Breaker that is open lets one request
// through to the primary, to find out whether it is back. Only Breaker
// policies use it. The default is DefaultProbeInterval (1s); d must be
// positive.
func WithProbeInterval(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithProbeInterval(%v): want a positive duration", d)
			return
		}
		o.interval = d
	})
}

// WithRetryAfter sets the RetryAfter (and ResetAfter) of the denials of
// FailClosed: how long a client is told to wait while the store is
// failing. Only FailClosed policies use it. The default is
// DefaultRetryAfter (1s); d must be positive.
func WithRetryAfter(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithRetryAfter(%v): want a positive duration", d)
			return
		}
		o.retryAfter = d
	})
}

// WithClock sets the clock a Breaker reads to schedule its probes. The
// default is admit.SystemClock; a nil clock leaves the default.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithName names the Guard: the name is each FallbackEvent's and each
// logged switch's Limiter, and the start of the Rule of the decisions the
// policy makes (see Guard). The default is no name.
func WithName(name string) Option {
	return optionFunc(func(o *options) { o.name = name })
}

// WithObserver sets an observer told of each switch to the policy and back
// (FallbackChanged) and of each decision the policy makes (Decided). The
// primary's decisions are its own to report. The default is none.
func WithObserver(obs admit.Observer) Option {
	return optionFunc(func(o *options) { o.obs = obs })
}

// WithLogger sets a logger told of each switch to the policy (at level
// Warn) and back (at level Info), once per switch, never per request. The
// default, nil, logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.log = l })
}

// WithIsFailure sets the function that tells a failure of the primary (the
// store is failing: the policy decides) from an error about the request
// itself (returned to the caller as it is, counting neither way). The
// caller's own cancellation is never a failure, and a timeout always is,
// whatever f says. The default is IsFailure; a nil f leaves the default.
func WithIsFailure(f func(err error) bool) Option {
	return optionFunc(func(o *options) {
		if f != nil {
			o.isFailure = f
		}
	})
}

// IsFailure is the default test of WithIsFailure: every error is a failure
// of the primary except those about the request, which a working store
// would return too: errors wrapping admit.ErrInvalidCost,
// admit.ErrInvalidLimit, admit.ErrUnknownAlgorithm or admit.ErrKeyTooLong
// (which keyed and redisstore return).
// (Failing open on those would let a client past the limit with a bad
// request, such as a key one byte too long.)
func IsFailure(err error) bool {
	return !errors.Is(err, admit.ErrInvalidCost) &&
		!errors.Is(err, admit.ErrInvalidLimit) &&
		!errors.Is(err, admit.ErrUnknownAlgorithm) &&
		!errors.Is(err, admit.ErrKeyTooLong)
}
