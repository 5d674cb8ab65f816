package admit

import (
	"context"
	"fmt"
	"time"
)

// Wait asks lim to admit r, letting it wait for its slot up to r.MaxDelay
// and no later than ctx's deadline, and if the slot comes later, sleeps
// until it does, on clock's timer (nil means SystemClock). It is the keyed
// form of GCRA.WaitN, over any limiter that honours Request.MaxDelay
// (keyed.Limiter, redisstore.Limiter), and what the middleware of package
// httplimit does in delay mode.
//
// It returns the limiter's Decision: a denial (the wait would pass the
// bound, or the request can never be admitted) comes back at once with a
// nil error, as from Allow, and so does an admission, after its Delay.
// If ctx ends during the wait, Wait gives the slot back when it can (a
// refund at d.TimeToAct, if lim is a Refunder: see Decision.TimeToAct)
// and returns ctx's error. Any other error is the limiter's; a negative
// r.MaxDelay is an error wrapping ErrInvalidDelay.
//
// Wait is a function, not a method of the limiters, so that one helper
// serves every backend and the limiters themselves never sleep: a caller
// with its own way to wait (a timer of its event loop, a queue) calls
// Allow with r.MaxDelay and waits Decision.Delay itself.
func Wait(ctx context.Context, lim KeyedLimiter, r Request, clock Clock) (Decision, error) {
	if r.MaxDelay < 0 {
		return Decision{RetryAfter: InfDuration}, fmt.Errorf("%w: admit: MaxDelay %v: want >= 0", ErrInvalidDelay, r.MaxDelay)
	}
	if err := ctx.Err(); err != nil {
		return Decision{RetryAfter: InfDuration}, err
	}
	if clock == nil {
		clock = SystemClock
	}
	if dl, ok := ctx.Deadline(); ok && r.MaxDelay > 0 {
		r.MaxDelay = max(min(r.MaxDelay, dl.Sub(clock.Now())), 0)
	}
	d, err := lim.Allow(ctx, r)
	if err != nil || !d.Allowed || d.Delay <= 0 {
		return d, err
	}
	if err := sleep(ctx, clock, d.Delay); err != nil {
		if rf, ok := lim.(Refunder); ok && !d.TimeToAct.IsZero() {
			_ = rf.Refund(context.WithoutCancel(ctx), Request{Key: r.Key, N: r.N, Limit: r.Limit, At: d.TimeToAct})
		}
		return d, err
	}
	return d, nil
}

// sleep waits d on clock's timer, or until ctx ends (its error).
func sleep(ctx context.Context, clock Clock, d time.Duration) error {
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
