package admit

import (
	"fmt"
	"strings"
	"time"
)

// Algorithm names one of the rate-limiting algorithms of this package. The
// zero value is AlgGCRA, the default.
type Algorithm uint8

const (
	// AlgGCRA is the generic cell rate algorithm: one timestamp per limit,
	// smooth, exact, and the cheapest to store (see NewGCRA).
	AlgGCRA Algorithm = iota
	// AlgTokenBucket is the token bucket of golang.org/x/time/rate (see
	// NewTokenBucket). It decides exactly as AlgGCRA does.
	AlgTokenBucket
	// AlgLeakyBucket is the leaky bucket used as a meter (see NewLeakyBucket).
	// It decides exactly as AlgTokenBucket does.
	AlgLeakyBucket
	// AlgFixedWindow counts events in windows aligned on the clock (see
	// NewFixedWindow).
	AlgFixedWindow
	// AlgSlidingWindow is the sliding-window counter, strict form (see
	// NewSlidingWindow).
	AlgSlidingWindow
	// AlgSlidingLog logs each admitted event's instant (see NewSlidingLog).
	AlgSlidingLog
	// AlgSlidingWindowApprox is the sliding-window counter in the
	// "estimate < limit" form of Cloudflare's description: it admits the
	// full rate under steady overload where AlgSlidingWindow admits one
	// event less per window, and may admit one event more than the bucket
	// bound (see NewSlidingWindow). New(AlgSlidingWindowApprox, l) makes one.
	AlgSlidingWindowApprox
)

var algorithmNames = [...]string{
	AlgGCRA:          "gcra",
	AlgTokenBucket:   "token_bucket",
	AlgLeakyBucket:   "leaky_bucket",
	AlgFixedWindow:   "fixed_window",
	AlgSlidingWindow: "sliding_window",
	AlgSlidingLog:    "sliding_log",

	AlgSlidingWindowApprox: "sliding_window_approx",
}

// Algorithms lists every Algorithm, in the order of their constants.
func Algorithms() []Algorithm {
	return []Algorithm{AlgGCRA, AlgTokenBucket, AlgLeakyBucket, AlgFixedWindow, AlgSlidingWindow, AlgSlidingLog, AlgSlidingWindowApprox}
}

// String returns the algorithm's name as ParseAlgorithm reads it:
// "gcra", "token_bucket", "leaky_bucket", "fixed_window", "sliding_window",
// "sliding_log", "sliding_window_approx".
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm returns the Algorithm named s (case-insensitive; "-" and
// " " may stand for "_"). An unknown name is an error wrapping
// ErrInvalidConfig.
func ParseAlgorithm(s string) (Algorithm, error) {
	k := strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
	for a, name := range algorithmNames {
		if k == name {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown algorithm %q (want one of gcra, token_bucket, leaky_bucket, fixed_window, sliding_window, sliding_log, sliding_window_approx)", ErrInvalidConfig, truncate(s))
}

// Limiter is the surface every single-key limiter of this package shares:
// what New, NewLeakyBucket and the constructors of the window algorithms
// (NewFixedWindow, NewSlidingWindow, NewSlidingLog) return; New alone makes
// the approximate sliding window (AlgSlidingWindowApprox). GCRA and
// TokenBucket implement it and have more (reservations, waits, tokens).
// All implementations are safe for concurrent use.
type Limiter interface {
	// Allow is shorthand for AllowN(clock.Now(), 1), on the limiter's
	// clock (Options.Clock).
	Allow() bool
	// AllowN reports whether n events may happen at instant now, and if so
	// consumes them.
	AllowN(now time.Time, n int) bool
	// Decide is shorthand for DecideN(clock.Now(), 1).
	Decide() Decision
	// DecideN is AllowN with the whole Decision.
	DecideN(now time.Time, n int) Decision
	// Limit returns the current limit, with Burst filled in.
	Limit() Limit
	// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
	SetLimit(l Limit) error
	// SetLimitAt changes the limit at instant now. The error wraps
	// ErrInvalidLimit; the old limit then stays.
	SetLimitAt(now time.Time, l Limit) error
}

// New returns a single-key limiter of the given algorithm, with the
// settings o (at most one; see Options). The error wraps ErrInvalidLimit
// for an invalid l, and ErrInvalidConfig for an unknown algorithm or
// invalid settings.
func New(a Algorithm, l Limit, o ...Options) (Limiter, error) {
	var lim Limiter
	var err error
	switch a {
	case AlgGCRA:
		lim, err = nonNil(NewGCRA(l, o...))
	case AlgTokenBucket:
		lim, err = nonNil(NewTokenBucket(l, o...))
	case AlgLeakyBucket:
		lim, err = nonNil(NewLeakyBucket(l, o...))
	case AlgFixedWindow:
		lim, err = nonNil(NewFixedWindow(l, o...))
	case AlgSlidingWindow:
		lim, err = nonNil(NewSlidingWindow(l, o...))
	case AlgSlidingLog:
		lim, err = nonNil(NewSlidingLog(l, o...))
	case AlgSlidingWindowApprox:
		lim, err = nonNil(newSlidingWindow("New", l, true, o))
	default:
		err = fmt.Errorf("%w: unknown algorithm %v", ErrInvalidConfig, a)
	}
	return lim, err
}

// nonNil keeps a nil *T from turning into a non-nil Limiter.
func nonNil[T Limiter](lim T, err error) (Limiter, error) {
	if err != nil {
		return nil, err
	}
	return lim, nil
}
