package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// slidingLog is the state of the limiters NewSlidingLog returns.
type slidingLog struct {
	m meter[algo.SlidingLog]
}

// NewSlidingLog returns an empty sliding log for l, with the settings o
// (at most one; see Options). The error wraps ErrInvalidLimit for an
// invalid l, also when the window would be shorter than 1ns, and
// ErrInvalidConfig for invalid settings.
//
// The limiter logs the instant of every admitted event and admits a request
// of n iff the events logged in the last W = Burst×Period/Rate (rounded up
// to the nanosecond) plus n are at most Burst. It is the exact sliding
// window: every interval of length W holds at most B admitted events. Its
// memory grows with the traffic, up to B entries of 16 bytes (events
// admitted at the same instant share one), so keep it for small bursts.
//
// An instant earlier than the latest logged event counts as that event's
// instant. The limiter is safe for concurrent use.
func NewSlidingLog(l Limit, o ...Options) (Limiter, error) {
	s := &slidingLog{}
	s.m.step = slidingLogStep
	s.m.rebase = func(*algo.SlidingLog, *algo.Params, *algo.Params, int64) {}
	if err := s.m.init("NewSlidingLog", l, true, o); err != nil {
		return nil, err
	}
	return s, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (s *slidingLog) Allow() bool { return s.m.allowAt(clockNanos(s.m.clock), 1) }

// AllowN reports whether n events fit in the window ending at instant now,
// and if so logs them.
func (s *slidingLog) AllowN(now time.Time, n int) bool { return s.m.allowN(now, n) }

// Decide is shorthand for DecideN(clock.Now(), 1).
func (s *slidingLog) Decide() Decision { return s.m.decideAt(clockNanos(s.m.clock), 1) }

// DecideN is AllowN returning the whole Decision. RetryAfter is the instant
// enough logged events leave the window.
func (s *slidingLog) DecideN(now time.Time, n int) Decision { return s.m.decideN(now, n) }

// Limit returns the current limit, with Burst filled in.
func (s *slidingLog) Limit() Limit { return s.m.getLimit() }

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (s *slidingLog) SetLimit(l Limit) error { return s.SetLimitAt(s.m.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The log carries over and is
// judged by the new window and burst. The error wraps ErrInvalidLimit; the
// old limit then stays.
func (s *slidingLog) SetLimitAt(now time.Time, l Limit) error {
	return s.m.setLimitAt(now, l, true)
}
