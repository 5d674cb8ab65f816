package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// fixedWindow is the state of the limiters NewFixedWindow returns.
type fixedWindow struct {
	m meter[algo.FixedWindow]
}

// NewFixedWindow returns a fixed-window limiter for l, with the settings o
// (at most one; see Options). The error wraps ErrInvalidLimit for an
// invalid l, also when the window would be shorter than 1ns, and
// ErrInvalidConfig for invalid settings.
//
// The limiter counts events in fixed windows aligned on the clock. A window
// is W = Burst×Period/Rate long (one Period with the default Burst = Rate,
// so PerMinute(100) counts 100 per clock minute) and windows start at whole
// multiples of W since the Unix epoch. A request of n is admitted iff the
// window's count plus n is at most Burst.
//
// It is the simplest algorithm and the one envoyproxy/ratelimit and many
// gateways use, and it is the least smooth: any interval of length t holds
// at most B×(⌈t/W⌉+1) admitted events, so two full windows can meet at an
// edge (2B in an instant). Prefer GCRA unless clients expect counts that
// reset on the clock.
//
// Only an admission changes the state (a denial or a peek in a later window
// does not move the counter to it), and an instant earlier than the window
// of the latest admission counts in that window. The limiter is safe for concurrent use.
func NewFixedWindow(l Limit, o ...Options) (Limiter, error) {
	w := &fixedWindow{}
	w.m.step = fixedWindowStep
	w.m.rebase = rebaseWith(algo.FixedWindowRebase)
	if err := w.m.init("NewFixedWindow", l, true, o); err != nil {
		return nil, err
	}
	return w, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (w *fixedWindow) Allow() bool { return w.m.allowAt(clockNanos(w.m.clock), 1) }

// AllowN reports whether n events fit in the window holding instant now, and
// if so counts them.
func (w *fixedWindow) AllowN(now time.Time, n int) bool { return w.m.allowN(now, n) }

// Decide is shorthand for DecideN(clock.Now(), 1).
func (w *fixedWindow) Decide() Decision { return w.m.decideAt(clockNanos(w.m.clock), 1) }

// DecideN is AllowN returning the whole Decision. RetryAfter and ResetAfter
// run to the start of the next window.
func (w *fixedWindow) DecideN(now time.Time, n int) Decision { return w.m.decideN(now, n) }

// Limit returns the current limit, with Burst filled in.
func (w *fixedWindow) Limit() Limit { return w.m.getLimit() }

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (w *fixedWindow) SetLimit(l Limit) error { return w.SetLimitAt(w.m.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The count of the current
// window carries over into the new limit's window holding now. The error
// wraps ErrInvalidLimit; the old limit then stays.
func (w *fixedWindow) SetLimitAt(now time.Time, l Limit) error {
	return w.m.setLimitAt(now, l, true)
}
