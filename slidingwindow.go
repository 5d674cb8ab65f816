package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// slidingWindow is the state of the limiters NewSlidingWindow returns.
type slidingWindow struct {
	m meter[algo.SlidingWindow]
}

// NewSlidingWindow returns a sliding-window counter for l in its strict
// form, with the settings o (at most one; see Options);
// New(AlgSlidingWindowApprox, l, o...) returns one in its approximate form.
// The error wraps ErrInvalidLimit for an invalid l, also when the window
// would be shorter than 1ns, and ErrInvalidConfig for invalid settings.
//
// The limiter is the sliding-window counter (as in Cloudflare's and
// go-chi/httprate's limiters), in two counters per key. It counts events in
// fixed windows of W = B×T aligned on the clock (B = Burst, T =
// Period/Rate), as FixedWindow does, and estimates the events of the last W
// by weighting the previous window's count by the part of it still inside
// the last W:
//
//	estimate = previous×(W-elapsed)/W + current
//
// computed exactly. The two forms round the weighted term differently:
//
//   - Strict (AlgSlidingWindow, NewSlidingWindow): n is admitted iff
//     estimate + n <= B, so the estimate never exceeds the limit. While the
//     previous window holds events the weighted term stays above 0 until
//     the window ends, so such a window admits at most B-1: under steady
//     overload B-1 per window after the first, Rate×(B-1)/B (3/s admits
//     2/s, 100/s 99/s), and for B = 1 one event every other window. Over
//     any interval of length t > 0 it admits at most B + ⌈t/T⌉ - 1 events,
//     within the bucket bound B + ⌊t/T⌋ (2B-1 over any W).
//   - Approximate (AlgSlidingWindowApprox): n is admitted iff
//     ⌊previous×(W-elapsed)/W⌋ + current + n <= B, that is iff estimate + n
//     < B+1 (for n = 1: the estimate before the request is below B, the
//     "estimate < limit" of Cloudflare's description). Under steady
//     overload it admits B per window, the full rate. Over any interval of
//     length t it admits at most B + ⌈t/T⌉ events: one more than the
//     bucket bound when t/T is not whole, and 2B over any W, as the bucket.
//
// Both bounds are reached. Against the sliding log (at most B in any
// interval shorter than W) the counters admit more when the previous
// window's events came late (they are weighed as if spread over it): up to
// B-1 (strict) or B (approximate) more over an interval of length W. They
// admit less when those events came early: a request can be refused while
// the last W holds fewer than B. bench/RESULTS.md measures both forms
// against the log on the same traffic.
//
// Only an admission changes the state, and an instant earlier than the
// window of the latest admission counts at that window's start. (The
// approximate form forgets the previous window's count at an admission
// where it weighs less than one event for the rest of the window, so that
// the limiter is empty from ResetAfter on; only such an earlier instant
// can tell.) The limiter is safe for concurrent use.
func NewSlidingWindow(l Limit, o ...Options) (Limiter, error) {
	return nonNil(newSlidingWindow("NewSlidingWindow", l, false, o))
}

// newSlidingWindow returns the strict sliding window, or the approximate
// one, for the constructor fn.
func newSlidingWindow(fn string, l Limit, approx bool, o []Options) (*slidingWindow, error) {
	w := &slidingWindow{}
	w.m.step = slidingWindowStep
	if approx {
		w.m.step = slidingWindowApproxStep
	}
	w.m.rebase = rebaseWith(algo.SlidingWindowRebase)
	if err := w.m.init(fn, l, true, o); err != nil {
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
