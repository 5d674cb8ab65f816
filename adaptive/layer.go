package adaptive

import (
	"context"
	"errors"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// AIMDLayer is an AIMD seen as a keyed limiter: a compose.Limiter (and
// compose.Refunder) whose keys all share the AIMD's one rate, for use as a
// layer of a compose.Chain, such as the rate a service allows itself
// towards one backend. Create one with AIMD.Layer. The zero AIMDLayer is
// not usable. An AIMDLayer is safe for concurrent use.
type AIMDLayer struct{ a *AIMD }

var (
	_ compose.Limiter  = AIMDLayer{}
	_ compose.Refunder = AIMDLayer{}
)

// Layer returns a as a compose.Limiter. Outcomes are still reported to a
// (Feedback), which the layer cannot see.
func (a *AIMD) Layer() AIMDLayer { return AIMDLayer{a} }

// Allow decides whether n events may happen now (by the AIMD's Clock)
// under the current rate, whatever the key: it is DecideN. The error is
// non-nil only for n < 0 (admit.ErrInvalidCost), with a Decision that
// denies.
func (l AIMDLayer) Allow(ctx context.Context, key string, n int64) (admit.Decision, error) {
	if n < 0 {
		return l.a.decideAt(0, n), fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	return l.a.decideAt(l.a.now(), n), nil
}

// Refund gives back n events admitted earlier, whatever the key, as far as
// the limit allows: the events available grow by n, up to the burst. The
// error is non-nil only for n < 0 (admit.ErrInvalidCost).
func (l AIMDLayer) Refund(ctx context.Context, key string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	l.a.refundAt(l.a.now(), n)
	return nil
}

// GradientLayer is a Gradient seen as a compose.Slots: every key shares the
// Gradient's one limit. Create one with Gradient.Layer. The zero
// GradientLayer is not usable. A GradientLayer is safe for concurrent use.
type GradientLayer struct{ g *Gradient }

var _ compose.Slots = GradientLayer{}

// Layer returns g as a compose.Slots.
func (g *Gradient) Layer() GradientLayer { return GradientLayer{g} }

// TryAcquire is TryAcquireN(clock.Now(), n), whatever the key. The
// Releaser of an admitted request with n > 0 is its Token: releasing it
// reports a success, with the latency measured by the Gradient's Clock
// since the slots were granted. A caller that can tell a failure should
// assert it to Token and call Done(Dropped) instead. Refused requests and
// n = 0 get a nil Releaser. As compose.LocalSlots does, it reports a
// request that can never be admitted (n > max, admit.ErrExceedsBurst) as
// a refusal, without an error.
func (l GradientLayer) TryAcquire(ctx context.Context, key string, n int64) (compose.Releaser, admit.Decision, error) {
	tok, d, err := l.g.tryAcquire(l.g.now(), n)
	if err != nil && errors.Is(err, admit.ErrExceedsBurst) {
		err = nil
	}
	if tok.g == nil {
		return nil, d, err
	}
	return tok, d, err
}
