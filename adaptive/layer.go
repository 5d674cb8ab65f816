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

// aimdLayer is an AIMD seen as a keyed limiter, for AIMD.Layer.
type aimdLayer struct{ a *AIMD }

var (
	_ admit.KeyedLimiter = aimdLayer{}
	_ admit.Refunder     = aimdLayer{}
	_ compose.Learner    = aimdLayer{}
	_ compose.Finisher   = Token{}
)

// Layer returns a as an admit.KeyedLimiter whose keys all share a's one
// rate, for use as a layer of a compose.Chain, such as the rate a service
// allows itself towards one backend. The limiter is safe for concurrent
// use. Its Allow decides whether r.N events may happen at r.At (now by
// a's Clock when zero) under the current rate, whatever the key (it is
// DecideN; r.Limit is not used: the AIMD's rate is the limit); its error
// is non-nil only for r.N < 0 (admit.ErrInvalidCost), with a Decision
// that denies.
//
// The limiter is also an admit.Refunder: its Refund gives back r.N events
// admitted earlier, whatever the key, as far as the limit allows (the
// events available grow by r.N, up to the burst), so that a chain
// refunds it when a later layer refuses. And it is a compose.Learner: in
// a chain checked with a compose.Held, each request it admits records a
// grant in the Held, whose Finish(failed) reports the request's outcome
// to a, Dropped if failed, else Succeeded, with the latency since the
// grant measured by a's Clock (so AIMDConfig.LatencyThreshold applies);
// only the first call counts. The grant's Release reports nothing, since
// a chain releases the grants of a request a later layer refused, and a
// caller that releases does not know the outcome. Each grant is one
// allocation. Outcomes can also be reported to a directly (Feedback).
func (a *AIMD) Layer() admit.KeyedLimiter { return aimdLayer{a} }

// Allow is DecideN at r.At, whatever the key (see AIMD.Layer).
func (l aimdLayer) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if r.N < 0 {
		return l.a.decideAt(0, r.N), fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	}
	return l.a.decideAt(l.at(r.At), r.N), nil
}

// at returns t on the AIMD's time line, or its clock's now if t is zero.
func (l aimdLayer) at(t time.Time) int64 {
	if t.IsZero() {
		return l.a.now()
	}
	return timeline.Nanos(t)
}

// Refund gives back r.N events admitted earlier, whatever the key (see
// AIMD.Layer). The error is non-nil only for r.N < 0
// (admit.ErrInvalidCost).
func (l aimdLayer) Refund(ctx context.Context, r admit.Request) error {
	if r.N < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	}
	l.a.refundAt(l.at(r.At), r.N)
	return nil
}

// Track returns the grant of a request of n events the layer admitted,
// whatever the key, for a compose.Held (see compose.Learner and
// AIMD.Layer).
func (l aimdLayer) Track(key string, n int64) compose.Finisher {
	return &aimdGrant{a: l.a, start: l.a.now()}
}

// aimdGrant is what aimdLayer.Track records of an admitted request.
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

// gradientLayer is a Gradient seen as admit.Slots, for Gradient.Layer.
type gradientLayer struct{ g *Gradient }

var _ admit.Slots = gradientLayer{}

// Layer returns g as admit.Slots whose keys all share g's one limit, for
// use as a layer of a compose.Chain. The Slots are safe for concurrent
// use. Their TryAcquire is TryAcquireN(clock.Now(), r.N), whatever the key
// (r.Limit and r.At are not used).
//
// The Releaser of an admitted request with n > 0 is its Token, and so a
// compose.Finisher: releasing it reports a success, with the latency
// measured by g's Clock since the slots were granted; a compose.Held's
// Finish(failed) reports the outcome (a failure is Dropped). Refused
// requests and n = 0 get a nil Releaser. The Slots have no method beyond
// admit.Slots.
//
// In a chain, put the layer last: a request a later layer refuses
// releases its Token at once, which counts as a success of almost no
// latency. As concurrency.Limiter.Slots does, TryAcquire reports a request
// that can never be admitted (n > max, admit.ErrExceedsBurst) as a
// refusal, without an error.
func (g *Gradient) Layer() admit.Slots { return gradientLayer{g} }

// TryAcquire takes r.N slots of the Gradient if it can, whatever the key
// (see Gradient.Layer).
func (l gradientLayer) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	tok, d, err := l.g.tryAcquire(l.g.now(), r.N)
	if err != nil && errors.Is(err, admit.ErrExceedsBurst) {
		err = nil
	}
	if tok.g == nil {
		return nil, d, err
	}
	return tok, d, err
}
