package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// slidingWindow is the state of the limiters NewSlidingWindow returns.
type slidingWindow struct {
	m meter[algo.SlidingWindow]
}

// NewSlidingWindow returns a sliding-window counter for l, with the
// settings o (at most one; see Options). The error wraps ErrInvalidLimit
// for an invalid l, also when the window would be shorter than 1ns, and
// ErrInvalidConfig for invalid settings.
//
// The limiter is the sliding-window counter (as in Cloudflare's and
// go-chi/httprate's limiters) in its strict form. It counts events in fixed
// windows of W = Burst×Period/Rate aligned on the clock, as FixedWindow does,
// and estimates the events of the last W by weighting the previous window's
// count by the part of it still inside the last W:
//
//	estimate = previous×(W-elapsed)/W + current
//
// A request of n is admitted iff estimate + n <= Burst, computed exactly: the
// estimate never exceeds the limit (the common "estimate < limit" form lets
// it). Over any interval of length t it admits at most B + t×B/W events, the
// bound of the bucket algorithms, and it needs two counters per key.
//
// Only an admission changes the state, and an instant earlier than the
// window of the latest admission counts at that window's start. The limiter is safe for concurrent use.
func NewSlidingWindow(l Limit, o ...Options) (Limiter, error) {
	w := &slidingWindow{}
	w.m.step = slidingWindowStep
	w.m.rebase = rebaseWith(algo.SlidingWindowRebase)
	if err := w.m.init("NewSlidingWindow", l, true, o); err != nil {
		return nil, err
	}
	return w, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (w *slidingWindow) Allow() bool { return w.m.allowAt(clockNanos(w.m.clock), 1) }

// AllowN reports whether n events fit under the estimate at instant now, and
// if so counts them.
func (w *slidingWindow) AllowN(now time.Time, n int) bool { return w.m.allowN(now, n) }

// Decide is shorthand for DecideN(clock.Now(), 1).
func (w *slidingWindow) Decide() Decision { return w.m.decideAt(clockNanos(w.m.clock), 1) }

// DecideN is AllowN returning the whole Decision. RetryAfter is the exact
// instant the estimate makes room for n.
func (w *slidingWindow) DecideN(now time.Time, n int) Decision { return w.m.decideN(now, n) }

// Limit returns the current limit, with Burst filled in.
func (w *slidingWindow) Limit() Limit { return w.m.getLimit() }

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (w *slidingWindow) SetLimit(l Limit) error { return w.SetLimitAt(w.m.clock.Now(), l) }

// SetLimitAt changes the limit at instant now; the current and previous
// counts carry over. The error wraps ErrInvalidLimit; the old limit then
// stays.
func (w *slidingWindow) SetLimitAt(now time.Time, l Limit) error {
	return w.m.setLimitAt(now, l, true)
}
