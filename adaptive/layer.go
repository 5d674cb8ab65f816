package adaptive

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/timeline"
)

// AIMDLayer is an AIMD seen as a keyed limiter: an admit.KeyedLimiter (and
// admit.Refunder) whose keys all share the AIMD's one rate, for use as a
// layer of a compose.Chain, such as the rate a service allows itself
// towards one backend. Create one with AIMD.Layer. The zero AIMDLayer is
// not usable. An AIMDLayer is safe for concurrent use.
type AIMDLayer struct{ a *AIMD }

var (
	_ admit.KeyedLimiter = AIMDLayer{}
	_ admit.Refunder     = AIMDLayer{}
	_ compose.Learner    = AIMDLayer{}
	_ compose.Finisher   = Token{}
)

// Layer returns a as an admit.KeyedLimiter. It is a compose.Learner: in a
// chain checked with a compose.Held, each request it admits records a
// grant in the Held, whose Finish reports the request's outcome to a (see
// Track). Outcomes can also be reported to a directly (Feedback).
func (a *AIMD) Layer() AIMDLayer { return AIMDLayer{a} }

// Allow decides whether r.N events may happen at r.At (now by the AIMD's
// Clock when zero) under the current rate, whatever the key: it is
// DecideN. r.Limit is not used: the AIMD's rate is the limit. The error is
// non-nil only for r.N < 0 (admit.ErrInvalidCost), with a Decision that
// denies.
func (l AIMDLayer) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if r.N < 0 {
		return l.a.decideAt(0, r.N), fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	}
	return l.a.decideAt(l.at(r.At), r.N), nil
}

// at returns t on the AIMD's time line, or its clock's now if t is zero.
func (l AIMDLayer) at(t time.Time) int64 {
	if t.IsZero() {
		return l.a.now()
	}
	return timeline.Nanos(t)
}

// Refund gives back r.N events admitted earlier, whatever the key, as far
// as the limit allows: the events available grow by r.N, up to the burst.
// The error is non-nil only for r.N < 0 (admit.ErrInvalidCost).
func (l AIMDLayer) Refund(ctx context.Context, r admit.Request) error {
	if r.N < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	}
	l.a.refundAt(l.at(r.At), r.N)
	return nil
}

// Track returns the grant of a request of n events the layer admitted,
// whatever the key, for a compose.Held (see compose.Learner): its
// Finish(failed) reports the outcome to the AIMD, Dropped if failed, else
// Succeeded, with the latency since Track measured by the AIMD's Clock (so
// AIMDConfig.LatencyThreshold applies); only the first call counts. Its Release
// reports nothing, since a chain releases the grants of a request a later
// layer refused, and a caller that releases does not know the outcome.
// Each grant is one allocation.
func (l AIMDLayer) Track(key string, n int64) compose.Finisher {
	return &aimdGrant{a: l.a, start: l.a.now()}
}

// aimdGrant is what AIMDLayer.Track records of an admitted request.
type aimdGrant struct {
	a     *AIMD
	start int64
	done  atomic.Bool
}

func (g *aimdGrant) Release() { g.done.Store(true) }

func (g *aimdGrant) Finish(failed bool) {
	if g.done.Swap(true) {
		return
	}
	o := Succeeded
	if failed {
		o = Dropped
	}
	t := g.a.now()
	g.a.feedbackAt(t, o, time.Duration(max(t-g.start, 0)))
}

// GradientLayer is a Gradient seen as admit.Slots: every key shares the
// Gradient's one limit. Create one with Gradient.Layer. The zero
// GradientLayer is not usable. A GradientLayer is safe for concurrent use.
type GradientLayer struct{ g *Gradient }

var _ admit.Slots = GradientLayer{}

// Layer returns g as admit.Slots.
func (g *Gradient) Layer() GradientLayer { return GradientLayer{g} }

// TryAcquire is TryAcquireN(clock.Now(), r.N), whatever the key (r.Limit
// and r.At are not used). The
// Releaser of an admitted request with n > 0 is its Token, a
// compose.Finisher: releasing it reports a success, with the latency
// measured by the Gradient's Clock since the slots were granted; a
// compose.Held's Finish(failed) reports the outcome (a failure is
// Dropped). Refused requests and n = 0 get a nil Releaser.
//
// In a chain, put the layer last: a request a later layer refuses releases
// its Token at once, which counts as a success of almost no latency. As concurrency.Limiter.Slots does, it reports a
// request that can never be admitted (n > max, admit.ErrExceedsBurst) as
// a refusal, without an error.
func (l GradientLayer) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	tok, d, err := l.g.tryAcquire(l.g.now(), r.N)
	if err != nil && errors.Is(err, admit.ErrExceedsBurst) {
		err = nil
	}
	if tok.g == nil {
		return nil, d, err
	}
	return tok, d, err
}
