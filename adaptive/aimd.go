package adaptive

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/adaptivehook"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/timeline"
)

// AIMD is a rate limiter whose rate adapts to the outcomes of the requests
// it admits, by additive increase and multiplicative decrease (AIMD, as
// TCP's congestion window): each success reported to Feedback adds the step
// to the rate (1 by default), each failure multiplies it by the factor (0.5
// by default, the result rounded down), and the rate never leaves
// [min, max]. So the rate climbs while the backend copes and halves when it
// stops coping, settling in a saw tooth just below the rate at which
// failures begin: the classic way to find an unknown and varying capacity
// with nothing but success and failure to go by. AIMDConfig.LatencyThreshold
// counts a success that took too long as a failure; IncreaseInterval,
// DecreaseInterval and IncreaseOnlyWhenLimited temper the two
// moves.
//
// The rate is a whole number of events per period (AIMDConfig.Period, default one
// second) and is enforced exactly, by the generic cell rate algorithm of
// admit.GCRA: at the current rate r and burst b, over any interval in
// which the rate does not change, at most b + r×t/period events are
// admitted. A change of the rate keeps the events available at that
// instant (capped at the new burst), as admit.GCRA's SetLimit does, so
// raising the rate never takes capacity away and lowering it never grants
// any. The burst is the rate (the default) or fixed by AIMDConfig.Burst.
//
// The methods follow golang.org/x/time/rate: AllowN(now, n) for a yes or
// no, DecideN for the whole admit.Decision, WaitN to wait; the shorthands
// without an instant read the limiter's Clock. Feedback reports outcomes.
// Layer adapts an AIMD to admit.KeyedLimiter.
//
// The zero AIMD is not usable; create one with NewAIMD. An AIMD is safe for
// concurrent use; its methods take one mutex and do not allocate.
type AIMD struct {
	mu      sync.Mutex
	p       algo.Params
	st      algo.GCRA
	gen     uint64 // changes of the rate; a wait reserved under another is not refunded
	rate    int64
	limit   admit.Limit
	changed int64 // instant of the last change of the rate (valid if hasChg)
	hasChg  bool
	cutAt   int64 // instant of the last cut (valid if hasCut)
	hasCut  bool
	limited bool // a request was refused or made to wait since the last change

	min, max, step int64
	factor         float64
	period         time.Duration
	burst          int64
	threshold      time.Duration
	incEvery       int64
	decEvery       int64
	gated          bool
	clock          admit.Clock
	sys            bool
	name           string
}

func init() {
	adaptivehook.AIMDBounds = func(v any) (min, max int64, ok bool) {
		if a, ok := v.(*AIMD); ok && a != nil {
			return a.min, a.max, true // fixed by NewAIMD: no lock
		}
		return 0, 0, false
	}
}

// NewAIMD returns an AIMD whose rate, in events per cfg.Period, starts at
// cfg.Initial (cfg.Min by default) and stays within [cfg.Min, cfg.Max]. It
// fails with an error wrapping admit.ErrInvalidConfig, naming the bounds,
// unless 1 <= Min <= Initial <= Max < admit.Inf, admit.ErrInvalidConfig
// naming the field for another field outside its domain, and admit.ErrInvalidLimit if a rate
// within the bounds, with its burst, is outside the domain of admit.Limit
// (a capacity burst×period/rate over 36 years, or burst×period over 2^63
// ns).
func NewAIMD(cfg AIMDConfig) (*AIMD, error) {
	c, err := cfg.check()
	if err != nil {
		return nil, err
	}
	min, max := cfg.Min, cfg.Max
	if min < 1 || min > max || max >= admit.Inf {
		return nil, badBounds("min %d, max %d: want 1 <= min <= max < admit.Inf", min, max)
	}
	initial := c.initial
	if initial == 0 {
		initial = min
	}
	if initial < min || initial > max {
		return nil, badBounds("initial rate %d outside [%d, %d]", initial, min, max)
	}
	// With burst×period within an int64, every rate in [min, max] compiles
	// (its capacity in units, burst×period/gcd, fits), so a change of the
	// rate never fails.
	b := c.burst
	if b == 0 {
		b = max
	}
	if hi, lo := bits.Mul64(uint64(b), uint64(c.period)); hi != 0 || lo > math.MaxInt64 {
		return nil, fmt.Errorf("%w: burst %d × period %v exceeds 2^63 ns", admit.ErrInvalidLimit, b, c.period)
	}
	for _, r := range []int64{min, max} {
		if err := (admit.Limit{Rate: r, Period: c.period, Burst: c.burst}).Validate(); err != nil {
			return nil, err
		}
	}
	a := &AIMD{
		min: min, max: max, step: c.step, factor: c.factor,
		period: c.period, burst: c.burst, threshold: c.threshold,
		incEvery: int64(c.incEvery), decEvery: int64(c.decEvery), gated: c.gated,
		clock: c.clock, sys: c.clock == admit.SystemClock, name: c.name,
	}
	if !a.setRate(0, initial) {
		return nil, fmt.Errorf("%w: rate %d per %v", admit.ErrInvalidLimit, initial, c.period)
	}
	a.hasChg = false
	return a, nil
}

// setRate makes r the rate at instant t (the first call sets it up). It
// reports false if r does not compile, which NewAIMD's checks rule out.
// It requires a.mu.
func (a *AIMD) setRate(t, r int64) bool {
	p, err := algo.Compile(r, int64(a.period), a.burst)
	if err != nil {
		return false
	}
	if a.rate != 0 {
		a.st = algo.GCRARebase(a.st, &a.p, &p, t)
	}
	a.p, a.rate = p, r
	a.limit = admit.Limit{Rate: r, Period: a.period, Burst: p.Burst}
	a.gen++
	a.changed, a.hasChg, a.limited = t, true, false
	return true
}

// now reads the clock on the step functions' time line.
func (a *AIMD) now() int64 {
	if a.sys {
		return timeline.Now()
	}
	return timeline.Nanos(a.clock.Now())
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (a *AIMD) Allow() bool { return a.allowAt(a.now(), 1) }

// AllowN reports whether n events may happen at instant now under the
// current rate, and if so consumes them. It never waits. A negative n or
// an n above the current burst is never allowed; n = 0 always is.
func (a *AIMD) AllowN(now time.Time, n int) bool { return a.allowAt(timeline.Nanos(now), int64(n)) }

func (a *AIMD) allowAt(t, n int64) bool {
	a.mu.Lock()
	next, ok := algo.GCRAAllow(a.st, &a.p, t, n)
	if ok {
		a.st = next
	} else if n > 0 {
		a.limited = true
	}
	a.mu.Unlock()
	return ok
}

// Decide is shorthand for DecideN(clock.Now(), 1).
func (a *AIMD) Decide() admit.Decision { return a.decideAt(a.now(), 1) }

// DecideN is AllowN returning the whole admit.Decision: the limit it was
// decided under (the current rate), what remains, when to retry and when
// the limit is full again. A negative n is denied with RetryAfter
// admit.InfDuration.
func (a *AIMD) DecideN(now time.Time, n int) admit.Decision {
	return a.decideAt(timeline.Nanos(now), int64(n))
}

func (a *AIMD) decideAt(t, n int64) admit.Decision {
	a.mu.Lock()
	l := a.limit
	if n < 0 {
		a.mu.Unlock()
		return admit.Decision{Limit: l, RetryAfter: admit.InfDuration, Rule: a.name}
	}
	next, r := algo.GCRAStep(a.st, &a.p, t, n)
	if r.Allowed {
		a.st = next
	} else {
		a.limited = true
	}
	a.mu.Unlock()
	return rateDecision(r, l, a.name)
}

// rateDecision builds a Decision from a step function's result.
func rateDecision(r algo.Result, l admit.Limit, rule string) admit.Decision {
	return admit.Decision{
		Allowed:    r.Allowed,
		Limit:      l,
		Remaining:  r.Remaining,
		RetryAfter: time.Duration(r.RetryAfter),
		ResetAfter: time.Duration(r.ResetAfter),
		Rule:       rule,
	}
}

// refundAt gives back n events admitted earlier, as far as the limit
// allows: the theoretical arrival time moves back by n emission
// intervals, never before t.
func (a *AIMD) refundAt(t, n int64) {
	if n <= 0 {
		return
	}
	a.mu.Lock()
	a.st = algo.GCRARefund(a.st, &a.p, t, a.st, n)
	a.mu.Unlock()
}

// Limit returns the current limit: the rate per period (Limit().Rate, the
// rate the AIMD adapts, always within [AIMDConfig.Min, AIMDConfig.Max]),
// with its burst.
func (a *AIMD) Limit() admit.Limit {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// Feedback is shorthand for FeedbackAt(clock.Now(), o, 0).
func (a *AIMD) Feedback(o Outcome) { a.feedbackAt(a.now(), o, 0) }

// FeedbackAt reports the outcome of a request at instant now, with its
// latency if known (0 if not). A success, unless its latency exceeds the
// threshold (AIMDConfig.LatencyThreshold), grows the rate by the step, up to max;
// a failure (Dropped, or a success over the threshold) multiplies it by
// the factor, rounded down, down to min; Ignored, and any value that is
// not an Outcome, changes nothing. AIMDConfig's IncreaseInterval,
// DecreaseInterval and IncreaseOnlyWhenLimited can make an
// outcome change nothing; see each. A negative latency counts as unknown.
func (a *AIMD) FeedbackAt(now time.Time, o Outcome, latency time.Duration) {
	a.feedbackAt(timeline.Nanos(now), o, latency)
}

func (a *AIMD) feedbackAt(t int64, o Outcome, latency time.Duration) {
	if o == Succeeded && a.threshold > 0 && latency > a.threshold {
		o = Dropped
	}
	switch o {
	case Succeeded:
		a.mu.Lock()
		if a.rate < a.max && (a.incEvery == 0 || !a.hasChg || t-a.changed >= a.incEvery) && (!a.gated || a.limited) {
			r := a.max
			if a.step < a.max-a.rate {
				r = a.rate + a.step
			}
			a.setRate(t, r)
		}
		a.mu.Unlock()
	case Dropped:
		a.mu.Lock()
		if a.rate > a.min && (a.decEvery == 0 || !a.hasCut || t-a.cutAt >= a.decEvery) {
			a.setRate(t, a.cut(a.rate))
			a.cutAt, a.hasCut = t, true
		}
		a.mu.Unlock()
	}
}

// cut returns r multiplied by the factor, rounded down, and not below min.
func (a *AIMD) cut(r int64) int64 {
	f := math.Floor(float64(r) * a.factor)
	next := r - 1
	if f < float64(r) { // float64(r) may round r up: keep next < r
		next = int64(f)
		if next >= r {
			next = r - 1
		}
	}
	return max(next, a.min)
}

// Wait is shorthand for WaitN(ctx, 1).
func (a *AIMD) Wait(ctx context.Context) error { return a.WaitN(ctx, 1) }

// WaitN blocks until n events are allowed under the rate at the time of
// the call, reading time from the limiter's Clock, and consumes them (it
// reserves them at once, so waiters are served in the order they came, at
// the rate's spacing). It returns an error wrapping admit.ErrInvalidCost
// for n < 0 and admit.ErrExceedsBurst for n above the current burst, the
// context's error if it is done first, and admit.ErrDeadline (which
// matches context.DeadlineExceeded) at once if the wait would end after
// the context's deadline. A wait that ends early gives its events back,
// unless the rate changed meanwhile.
func (a *AIMD) WaitN(ctx context.Context, n int) error {
	k := int64(n)
	if k < 0 {
		return fmt.Errorf("%w: WaitN(n=%d)", admit.ErrInvalidCost, n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := a.clock.Now()
	t := timeline.Nanos(now)
	maxWait := int64(admit.InfDuration)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = max(timeline.Nanos(dl)-t, 0)
	}
	a.mu.Lock()
	if k > a.p.Burst {
		b := a.p.Burst
		a.mu.Unlock()
		return fmt.Errorf("%w: WaitN(n=%d) with burst %d", admit.ErrExceedsBurst, n, b)
	}
	next, wait, ok := algo.GCRAReserve(a.st, &a.p, t, k, maxWait)
	if !ok {
		a.limited = true
		a.mu.Unlock()
		return fmt.Errorf("adaptive: WaitN(n=%d): %w", n, admit.ErrDeadline)
	}
	a.st = next
	gen := a.gen
	if wait > 0 {
		a.limited = true
	}
	a.mu.Unlock()
	if wait == 0 {
		return nil
	}
	timer := a.clock.NewTimer(time.Duration(wait))
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-ctx.Done():
		t := timeline.Nanos(a.clock.Now())
		a.mu.Lock()
		if a.gen == gen {
			a.st = algo.GCRARefund(a.st, &a.p, t, next, k)
		}
		a.mu.Unlock()
		return ctx.Err()
	}
}
