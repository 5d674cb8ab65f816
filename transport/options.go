package transport

import (
	"fmt"
	"math"
	"time"

	"github.com/admit-go/admit"
)

// reserver is what Config.Limiter is: a rate limiter with reservations.
type reserver interface {
	ReserveN(now time.Time, n int) admit.Reservation
}

// Config configures a Transport (see New). The zero Config is valid: no
// rate limit, pauses honoured up to 5 minutes, waits up to 10 seconds,
// no retries.
type Config struct {
	// Clock is the clock the Transport reads and waits on, for its
	// pauses, its host limits and the retry budget (see
	// admit.Options.Clock). Nil means admit.SystemClock; tests use
	// admittest.ManualClock, with a Limiter on the same clock.
	Clock admit.Clock

	// Limiter makes every request wait for one of its tokens, shared by
	// all hosts, before it is sent (each retry too). It is a rate limiter
	// with reservations, such as *admit.GCRA and *admit.TokenBucket:
	// ReserveN reserves n events at instant now and says when they may be
	// used; the reservation can be cancelled. It must read the same clock
	// as the Transport. Nil means none.
	Limiter interface {
		ReserveN(now time.Time, n int) admit.Reservation
	}

	// HostLimit gives each host its own GCRA limit: requests to a host
	// wait for a token of its limit before they are sent (each retry
	// too). The host is the request URL's host, lower-cased, without the
	// scheme's default port. The zero Limit means none; any other must be
	// valid (admit.Limit.Validate).
	HostLimit admit.Limit

	// MaxWait is the longest time a request waits for its turn (rate
	// limit tokens and the end of a pause together). A request that would
	// wait longer fails at once with an error wrapping
	// admit.ErrWaitTooLong; one whose wait would pass its context's
	// deadline fails at once with an error wrapping admit.ErrDeadline. 0
	// means 10 seconds; a negative MaxWait never waits: requests go at
	// once or fail.
	MaxWait time.Duration

	// MaxPause caps the pause an upstream can ask for with Retry-After,
	// RateLimit or X-RateLimit-Reset: a longer one (a year, a date far
	// away, a garbled number) pauses the host for MaxPause. 0 means 5
	// minutes; a negative MaxPause ignores pauses.
	MaxPause time.Duration

	// MaxHosts caps the number of hosts the Transport tracks (their
	// limits and pauses). Hosts whose limit is full and that are not
	// paused are forgotten when the cap is reached, which changes
	// nothing; beyond that, a request to a new host fails with an error
	// wrapping admit.ErrTooManyKeys if it needs a host limit, and a new
	// host's pause is not recorded. 0 means 10,000; it must not be
	// negative.
	MaxHosts int

	// Retries retries requests answered 429 (Too Many Requests) or 503
	// (Service Unavailable) up to Retries times, if they are idempotent
	// (GET, HEAD, OPTIONS, TRACE, or with an Idempotency-Key or
	// X-Idempotency-Key header) and their body can be sent again (none,
	// or a GetBody, which http.NewRequest sets for in-memory bodies).
	// Each retry waits for the host's pause (the response's Retry-After)
	// and a jittered exponential backoff (Backoff), within the maximum
	// wait and the deadline, and takes a token of the retry budget
	// (RetryRatio, RetryMin, RetryWindow); when it cannot, the 429 or 503
	// is returned as it came. 0 means no retries; it must not be
	// negative.
	Retries int

	// RetryRatio, RetryMin and RetryWindow are the retry budget, which
	// bounds retries so that a limit never becomes a retry storm: over
	// any window of RetryWindow, retries may be at most RetryRatio × the
	// requests sent in it (not counting retries) plus RetryMin. When
	// RetryRatio and RetryMin are both 0 they mean 0.2 and 10 (retries
	// may add 20% to the requests, plus 10); RetryRatio must be in
	// [0, 10] and RetryMin must not be negative. RetryWindow 0 means 10
	// seconds; otherwise it must be at least a millisecond. The budget
	// matters only with Retries.
	RetryRatio  float64
	RetryMin    int
	RetryWindow time.Duration

	// Backoff and MaxBackoff bound the backoff between retries: before
	// retry k (from 1) a request waits at least a random duration between
	// half and all of Backoff×2^(k-1), capped at MaxBackoff, or the
	// host's pause if that is longer. Backoff 0 means 100ms, a negative
	// Backoff none; MaxBackoff 0 means 10 seconds (or Backoff, if that is
	// longer). MaxBackoff must not be negative nor less than Backoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// The defaults of Config's fields.
const (
	defaultMaxWait     = 10 * time.Second
	defaultMaxPause    = 5 * time.Minute
	defaultMaxHosts    = 10000
	defaultRetryRatio  = 0.2
	defaultRetryMin    = 10
	defaultRetryWindow = 10 * time.Second
	defaultBackoff     = 100 * time.Millisecond
	defaultMaxBackoff  = 10 * time.Second
)

// options are a valid Config with its defaults filled in.
type options struct {
	lim        reserver
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
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: transport: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// resolve checks cfg and returns its options, defaults filled in.
func (cfg *Config) resolve() (options, error) {
	o := options{
		lim:        cfg.Limiter,
		maxWait:    offable(cfg.MaxWait, defaultMaxWait),
		maxPause:   offable(cfg.MaxPause, defaultMaxPause),
		maxHosts:   cfg.MaxHosts,
		retries:    cfg.Retries,
		ratio:      cfg.RetryRatio,
		budgetMin:  int64(cfg.RetryMin),
		window:     cfg.RetryWindow,
		backoff:    offable(cfg.Backoff, defaultBackoff),
		maxBackoff: cfg.MaxBackoff,
		clock:      cfg.Clock,
	}
	if o.clock == nil {
		o.clock = admit.SystemClock
	}
	if cfg.HostLimit != (admit.Limit{}) {
		if err := cfg.HostLimit.Validate(); err != nil {
			return o, invalid("HostLimit %v: %v", cfg.HostLimit, err)
		}
		l := cfg.HostLimit
		o.hostLimit = &l
	}
	switch {
	case o.maxHosts < 0:
		return o, invalid("MaxHosts %d: want >= 0", o.maxHosts)
	case o.maxHosts == 0:
		o.maxHosts = defaultMaxHosts
	}
	if o.retries < 0 {
		return o, invalid("Retries %d: want >= 0", o.retries)
	}
	if o.ratio == 0 && o.budgetMin == 0 {
		o.ratio, o.budgetMin = defaultRetryRatio, defaultRetryMin
	}
	if math.IsNaN(o.ratio) || o.ratio < 0 || o.ratio > 10 {
		return o, invalid("RetryRatio %v: want a ratio in [0, 10]", cfg.RetryRatio)
	}
	if o.budgetMin < 0 {
		return o, invalid("RetryMin %d: want >= 0", cfg.RetryMin)
	}
	switch {
	case o.window == 0:
		o.window = defaultRetryWindow
	case o.window < time.Millisecond:
		return o, invalid("RetryWindow %v: want at least 1ms", o.window)
	}
	switch {
	case o.maxBackoff < 0:
		return o, invalid("MaxBackoff %v: want >= 0", o.maxBackoff)
	case o.maxBackoff == 0:
		o.maxBackoff = max(defaultMaxBackoff, o.backoff)
	case o.maxBackoff < o.backoff:
		return o, invalid("MaxBackoff %v: want at least Backoff (%v)", o.maxBackoff, o.backoff)
	}
	return o, nil
}

// offable returns d, def if d is 0, or 0 if d is negative (off).
func offable(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}
