package compose

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// GuardConfig configures a Guard (NewGuard) or a guarded concurrency
// layer (GuardSlots). Set Policy; every other field's zero value is its
// default. A field outside its domain is an error wrapping
// admit.ErrInvalidConfig that names it.
type GuardConfig struct {
	// Options are the clock, name and observer (see admit.Options). The
	// clock is the one a Breaker reads to schedule its probes. The name is
	// each FallbackEvent's and each logged switch's Limiter, and the start
	// of the Rule of the decisions the policy makes (see Guard). The
	// observer is told of each switch to the policy and back
	// (FallbackChanged) and of each decision the policy makes (Decided);
	// the primary's decisions are its own to report. GuardSlots uses the
	// name only.
	admit.Options

	// Policy is what decides when the primary fails: FailOpen, FailClosed,
	// Fallback(local) (FallbackSlots(local) for GuardSlots), or any of
	// them as a Breaker. Required: the zero Policy is an error wrapping
	// admit.ErrInvalidConfig ("compose: invalid policy").
	Policy Policy

	// Timeout bounds each call of the primary: it runs under
	// context.WithTimeout(ctx, Timeout), and a call that has not returned
	// after it is a failure, decided by the policy. A store that is down
	// must cost each request milliseconds, not the seconds of a TCP
	// timeout, so keep it a small multiple of the store's usual latency.
	// The primary must return when its context is done (go-redis and the
	// limiters of this module do); the Guard starts no goroutine to
	// abandon a call. 0 means 50ms. A negative Timeout means none: the
	// primary gets the caller's context as it is, which saves the cost of
	// a timer per call for a primary that never waits, such as a
	// keyed.Limiter. GuardSlots has no timeout of its own and ignores it.
	Timeout time.Duration

	// Threshold is the number of consecutive failures of the primary after
	// which the Guard considers it down: it reports the switch (to the
	// Observer and the Logger) and, under a Breaker, stops calling it. A
	// failure is an error of the primary (see IsFailure) or a timeout; a
	// success resets the count. Failures below the threshold are decided by
	// the policy too, one by one, and counted in Stats. 0 means 5; a
	// negative value is an error. GuardSlots ignores it.
	Threshold int

	// ProbeInterval is how often a Breaker that is open lets one request
	// through to the primary, to find out whether it is back. Only Breaker
	// policies use it (and not GuardSlots). 0 means one second; a negative
	// value is an error.
	ProbeInterval time.Duration

	// RetryAfter is the RetryAfter (and ResetAfter) of the denials of
	// FailClosed: how long a client is told to wait while the store is
	// failing. Only FailClosed policies use it. 0 means one second; a
	// negative value is an error.
	RetryAfter time.Duration

	// Logger, if not nil, is told of each switch to the policy (at level
	// Warn) and back (at level Info), once per switch, never per request.
	// Nil logs nothing.
	Logger *slog.Logger

	// IsFailure tells a failure of the primary (the store is failing: the
	// policy decides) from an error about the request itself (returned to
	// the caller as it is, counting neither way). The caller's own
	// cancellation is never a failure, and a timeout always is, whatever
	// it says. Nil means the function IsFailure of this package.
	IsFailure func(err error) bool
}

// The defaults of GuardConfig's fields.
const (
	defaultTimeout       = 50 * time.Millisecond
	defaultThreshold     = 5
	defaultProbeInterval = time.Second
	defaultRetryAfter    = time.Second
)

// options are a GuardConfig checked, with its defaults filled in.
type options struct {
	timeout    time.Duration // 0: none
	threshold  int
	interval   time.Duration
	retryAfter time.Duration
	clock      admit.Clock
	name       string
	obs        admit.Observer
	log        *slog.Logger
	isFailure  func(error) bool
}

// options checks cfg's fields but the Policy and fills in their defaults.
func (cfg *GuardConfig) options() (options, error) {
	o := options{
		timeout: cfg.Timeout, threshold: cfg.Threshold, interval: cfg.ProbeInterval, retryAfter: cfg.RetryAfter,
		clock: defaults.Clock(cfg.Options), name: cfg.Name, obs: cfg.Observer, log: cfg.Logger, isFailure: cfg.IsFailure,
	}
	switch {
	case cfg.Threshold < 0:
		return o, fmt.Errorf("%w: compose: Threshold %d: want >= 0", admit.ErrInvalidConfig, cfg.Threshold)
	case cfg.ProbeInterval < 0:
		return o, fmt.Errorf("%w: compose: ProbeInterval %v: want >= 0", admit.ErrInvalidConfig, cfg.ProbeInterval)
	case cfg.RetryAfter < 0:
		return o, fmt.Errorf("%w: compose: RetryAfter %v: want >= 0", admit.ErrInvalidConfig, cfg.RetryAfter)
	}
	switch {
	case o.timeout == 0:
		o.timeout = defaultTimeout
	case o.timeout < 0:
		o.timeout = 0
	}
	if o.threshold == 0 {
		o.threshold = defaultThreshold
	}
	if o.interval == 0 {
		o.interval = defaultProbeInterval
	}
	if o.retryAfter == 0 {
		o.retryAfter = defaultRetryAfter
	}
	if o.isFailure == nil {
		o.isFailure = IsFailure
	}
	return o, nil
}

// IsFailure is the default GuardConfig.IsFailure: every error is a failure
// of the primary except those about the request, which a working store
// would return too: errors wrapping admit.ErrInvalidCost, admit.ErrInvalidDelay,
// admit.ErrInvalidLimit, admit.ErrInvalidConfig or admit.ErrKeyTooLong
// (which keyed and redisstore return).
// (Failing open on those would let a client past the limit with a bad
// request, such as a key one byte too long.)
func IsFailure(err error) bool {
	return !errors.Is(err, admit.ErrInvalidCost) &&
		!errors.Is(err, admit.ErrInvalidDelay) &&
		!errors.Is(err, admit.ErrInvalidLimit) &&
		!errors.Is(err, admit.ErrInvalidConfig) &&
		!errors.Is(err, admit.ErrKeyTooLong)
}
