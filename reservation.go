package admit

import (
	"context"
	"fmt"
	"time"
)

// A Reservation holds events reserved by a limiter for a future instant
// (see GCRA.ReserveN and TokenBucket.ReserveN). The zero Reservation is not
// OK. A Reservation is not safe for concurrent use.
type Reservation struct {
	ok    bool
	lim   canceller // nil if there is nothing to cancel
	owner any       // GCRA: the limiter state the reservation was made on
	n     int64
	act   int64 // ns: the instant the events may be used
	// after is what the limiter needs to cancel: GCRA's state right after
	// reserving; TokenBucket's emission interval (Tn, Td) when reserving,
	// zero if the reservation took nothing.
	after     [2]int64
	limit     Limit
	cancelled bool
}

type canceller interface {
	// cancel gives back what a reservation of n events, to act at act,
	// reserved (owner and after as in Reservation), at instant now, and
	// reports whether it was in time to (the limiter's rule). It takes the
	// fields rather than the Reservation, which would then escape.
	cancel(owner any, act, n int64, after [2]int64, now int64) bool
	now() time.Time
}

// OK reports whether the limiter can provide the events by the time to act.
// If false, Delay returns InfDuration and Cancel does nothing.
func (r Reservation) OK() bool { return r.ok }

// Limit returns the limit the reservation was made under.
func (r Reservation) Limit() Limit { return r.limit }

// TimeToAct returns the instant the reserved events may be used.
func (r Reservation) TimeToAct() time.Time { return fromNanos(r.act) }

// Delay is shorthand for DelayFrom(clock.Now()) with the limiter's clock.
func (r Reservation) Delay() time.Duration {
	if r.lim == nil {
		return r.DelayFrom(time.Now())
	}
	return r.DelayFrom(r.lim.now())
}

// DelayFrom returns how long after instant now the holder must wait before
// acting: 0 means act now, InfDuration means the reservation is not OK.
func (r Reservation) DelayFrom(now time.Time) time.Duration {
	if !r.ok {
		return InfDuration
	}
	if d := r.act - nanos(now); d > 0 {
		return time.Duration(d)
	}
	return 0
}

// Cancel is shorthand for CancelAt(clock.Now()) with the limiter's clock.
func (r *Reservation) Cancel() {
	if r.lim != nil {
		r.CancelAt(r.lim.now())
	}
}

// CancelAt tells the limiter, at instant now, that the reservation will not
// be used. If it is in time, the limiter takes its events back, less what
// reservations made after it have relied on: a GCRA before the time to act,
// a TokenBucket up to the time to act included, as golang.org/x/time/rate
// does (see TokenBucket.ReserveN). Cancelling twice does nothing, and a
// GCRA's reservation cannot be cancelled after its limit changed.
func (r *Reservation) CancelAt(now time.Time) {
	if !r.ok || r.cancelled || r.lim == nil || r.n == 0 {
		return
	}
	r.cancelled = r.lim.cancel(r.owner, r.act, r.n, r.after, nanos(now))
}

// waitN is the blocking loop shared by the limiters with reservations.
func waitN(ctx context.Context, clock Clock, l Limit, n int, reserve func(now, n, maxWait int64) Reservation) error {
	if n < 0 {
		return fmt.Errorf("%w: WaitN(n=%d)", ErrInvalidCost, n)
	}
	if l.Rate != Inf && int64(n) > l.Burst {
		return fmt.Errorf("%w: WaitN(n=%d) with burst %d", ErrExceedsBurst, n, l.Burst)
	}
	if l.Rate == 0 && n > 0 {
		return fmt.Errorf("%w: WaitN(n=%d) under a zero limit", ErrExceedsBurst, n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := clock.Now()
	t := nanos(now)
	maxWait := int64(InfDuration)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = nanos(dl) - t
		if maxWait < 0 {
			maxWait = 0
		}
	}
	r := reserve(t, int64(n), maxWait)
	if !r.ok {
		return fmt.Errorf("admit: WaitN(n=%d): %w", n, ErrDeadline)
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	if err := sleep(ctx, clock, d); err != nil {
		r.CancelAt(clock.Now())
		return err
	}
	return nil
}
