package admit

import (
	"context"
	"sync"
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// TokenBucket is the token bucket of golang.org/x/time/rate with exact
// integer arithmetic and whole Decisions. The bucket holds up to Burst
// tokens, starts full, and refills at Rate per Period; a request of n events
// takes n tokens if it finds them. Over any interval of length t, AllowN
// admits at most B + ⌊t/T⌋ events (T = Period/Rate), exactly as GCRA and
// the leaky bucket of NewLeakyBucket do: the three are one algorithm kept
// in different representations.
//
// It has x/time/rate's whole surface: AllowN, ReserveN (with Cancel giving
// back what later reservations did not rely on), WaitN, SetLimit, SetBurst
// and Tokens, each with an explicit instant and a shorthand reading the
// limiter's Clock. Given the same rate and burst and the same calls, it
// answers as a *rate.Limiter does, reservations, cancellations and n = 0
// included, except where x/time/rate's answer lets a caller take more than
// the limit, or is a float64 rounding:
//
//   - Time going backwards. An instant earlier than the latest one at which
//     the bucket took tokens, gave some back or changed its limit counts as
//     that latest instant: it neither refills nor drains the bucket.
//     x/time/rate moves its clock back to the earlier instant, and later
//     refills the same interval a second time.
//   - Cancelling. A reservation gives back at most the tokens it took, and
//     cancelling it again does nothing; one made under an unlimited limit
//     took nothing and gives nothing back. x/time/rate gives back again on
//     every call, and more than n tokens when other reservations were
//     cancelled out of order before it, up to the burst.
//   - A negative n is refused. x/time/rate admits it and adds the tokens.
//   - Rounding. Durations are exact and rounded up, so a delay (and a time to
//     act) may be up to 1ns longer than x/time/rate's, which rounds down,
//     and AllowN refuses what x/time/rate admits less than 1ns early. Tokens
//     are exact where x/time/rate's float64 rounds, and SetLimit carries
//     them over in the new limit's units, rounded down (less than one
//     nanosecond's refill).
//   - Limits a Limit does not state: a Burst of 0 means Burst = Rate (in
//     x/time/rate a burst of 0 refuses every n > 0), and a zero Rate has no
//     burst (in x/time/rate, rate 0 with burst b hands out b tokens once).
//     Under a zero limit, ReserveN(now, 0) while reservations hold the
//     bucket below zero is not OK, and WaitN(ctx, 0) fails at once
//     (x/time/rate: OK with an infinite delay, and a wait for the context).
//     A reservation may not reach more than 36 years ahead.
//
// WaitN's errors are admit's (see GCRA.WaitN): they fail and succeed when
// x/time/rate's do, with other messages.
//
// Like x/time/rate's Limiter, AllowN(now, 0) and DecideN(now, 0) are
// refused while reservations hold the bucket below zero, so the peek that
// is always allowed for the other limiters is not, here.
//
// The zero TokenBucket is not usable; create one with NewTokenBucket. A
// TokenBucket is safe for concurrent use.
type TokenBucket struct {
	mu    sync.Mutex
	p     algo.Params // the limit
	limit Limit
	// st holds the tokens at st.Last as a level in the units of u: u is p
	// while p limits; under an unlimited or zero limit it keeps the units
	// the tokens were last counted in, which carry over when the limit
	// returns (as x/time/rate carries its tokens over).
	st    algo.Bucket
	u     algo.Params
	event int64 // the latest time to act of a reservation (x/time/rate's lastEvent)
	clock Clock
	name  string
}

// NewTokenBucket returns a full token bucket for l, with the settings o
// (at most one; see Options). The error wraps ErrInvalidLimit for an
// invalid l and ErrInvalidConfig for invalid settings.
func NewTokenBucket(l Limit, o ...Options) (*TokenBucket, error) {
	p, err := l.compile()
	if err != nil {
		return nil, err
	}
	s, err := buildOptions("NewTokenBucket", o)
	if err != nil {
		return nil, err
	}
	b := &TokenBucket{p: p, limit: l.normal(), u: p, clock: s.clock, name: s.name}
	if p.Mode != algo.Normal {
		b.u = algo.UnitParams(p.Burst)
	}
	return b, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (b *TokenBucket) Allow() bool { return b.allowAt(clockNanos(b.clock), 1) }

// AllowN reports whether n tokens are available at instant now, and if so
// takes them. A negative n or an n above the burst is never allowed; n = 0
// is allowed unless reservations hold the bucket below zero.
func (b *TokenBucket) AllowN(now time.Time, n int) bool { return b.allowAt(nanos(now), n) }

func (b *TokenBucket) allowAt(t int64, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p.Mode == algo.Normal && n > 0 {
		var ok bool
		b.st, ok = algo.BucketAllow(b.st, &b.p, t, int64(n))
		if ok {
			b.event = b.st.Last
		}
		return ok
	}
	if b.p.Mode == algo.Unlimited {
		return true
	}
	if n != 0 {
		return false // negative, or above a zero limit's burst
	}
	return b.peekLocked(t).Allowed
}

// peekLocked decides n = 0 at t: allowed unless the bucket is below zero.
// Like any request allowed, it becomes the latest time to act; unlike one
// that takes tokens, it leaves the bucket's latest instant where it is.
func (b *TokenBucket) peekLocked(t int64) algo.Result {
	var r algo.Result
	if b.p.Mode == algo.Normal {
		r = algo.BucketPeek(b.st, &b.p, t)
	} else if r.Allowed = algo.BucketTokensCmp(b.st, &b.u, 0) >= 0; !r.Allowed {
		r.RetryAfter = algo.Never // a zero limit never refills
	}
	if r.Allowed {
		b.event = max(t, b.st.Last)
	}
	return r
}

// Decide is shorthand for DecideN(clock.Now(), 1).
func (b *TokenBucket) Decide() Decision { return b.decideAt(clockNanos(b.clock), 1) }

// DecideN is AllowN returning the whole Decision.
func (b *TokenBucket) DecideN(now time.Time, n int) Decision { return b.decideAt(nanos(now), n) }

func (b *TokenBucket) decideAt(t int64, n int) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 {
		return invalidCost(b.limit, b.name)
	}
	var r algo.Result
	if n == 0 && b.p.Mode != algo.Unlimited {
		r = b.peekLocked(t)
		if b.p.Mode == algo.Normal {
			return decision(r, b.limit, b.name)
		}
		return decision(algo.Result{Allowed: r.Allowed, RetryAfter: r.RetryAfter}, b.limit, b.name)
	}
	b.st, r = algo.BucketStep(b.st, &b.p, t, int64(n))
	if r.Allowed && b.p.Mode == algo.Normal {
		b.event = b.st.Last
	}
	return decision(r, b.limit, b.name)
}

// Limit returns the current limit, with Burst filled in.
func (b *TokenBucket) Limit() Limit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// Burst returns the current burst.
func (b *TokenBucket) Burst() int64 { return b.Limit().Burst }

// Tokens is shorthand for TokensAt(clock.Now()).
func (b *TokenBucket) Tokens() float64 { return b.TokensAt(b.clock.Now()) }

// TokensAt returns the tokens available at instant now (fractional, and
// negative while reservations are outstanding).
func (b *TokenBucket) TokensAt(now time.Time) float64 {
	t := nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.p.Mode {
	case algo.Normal:
		return algo.BucketTokens(b.st, &b.p, t)
	case algo.Closed:
		return min(algo.BucketTokens(b.st, &b.u, b.st.Last), 0)
	}
	if t > b.st.Last {
		return float64(b.p.Burst)
	}
	return min(algo.BucketTokens(b.st, &b.u, b.st.Last), float64(b.p.Burst))
}

// settleLocked brings the tokens to instant t (>= st.Last) under the
// current limit, making t the latest instant: a limit refills at its rate,
// a zero limit never refills and holds no tokens above zero, and an
// unlimited one is full once any time has passed.
func (b *TokenBucket) settleLocked(t int64) {
	switch b.p.Mode {
	case algo.Normal:
		b.st = algo.BucketSettle(b.st, &b.p, t)
	case algo.Closed:
		b.st = algo.Bucket{Last: t, Level: max(b.st.Level, b.u.CapN)}
	default:
		if t > b.st.Last || algo.BucketTokensCmp(b.st, &b.u, b.p.Burst) > 0 {
			b.u, b.st = algo.UnitParams(b.p.Burst), algo.Bucket{Last: t}
		}
		b.st.Last = t
	}
}

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (b *TokenBucket) SetLimit(l Limit) error { return b.SetLimitAt(b.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The tokens available at now
// carry over, capped at the new burst, as do the debts of outstanding
// reservations, which can still be cancelled. The error wraps
// ErrInvalidLimit; the old limit then stays.
func (b *TokenBucket) SetLimitAt(now time.Time, l Limit) error {
	p, err := l.compile()
	if err != nil {
		return err
	}
	t := nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleLocked(max(t, b.st.Last))
	if p.Mode == algo.Normal {
		b.st = algo.BucketRebase(b.st, &b.u, &p, b.st.Last)
		b.u = p
	}
	b.p, b.limit = p, l.normal()
	return nil
}

// SetBurst is shorthand for SetBurstAt(clock.Now(), n).
func (b *TokenBucket) SetBurst(n int64) error { return b.SetBurstAt(b.clock.Now(), n) }

// SetBurstAt changes the burst at instant now, keeping the rate.
func (b *TokenBucket) SetBurstAt(now time.Time, n int64) error {
	return b.SetLimitAt(now, b.Limit().WithBurst(n))
}

// Reserve is shorthand for ReserveN(clock.Now(), 1).
func (b *TokenBucket) Reserve() Reservation { return b.ReserveN(b.clock.Now(), 1) }

// ReserveN reserves n tokens at instant now, to be used after the
// Reservation's delay, whether or not they are available now; see
// GCRA.ReserveN. Its OK method reports false if n is negative or exceeds
// the burst. Cancelling it before its time to act (at that instant
// included) gives the tokens back, less those the limit refills between
// its time to act and that of the latest reservation: the tokens later
// reservations were scheduled on. That is x/time/rate's estimate: after
// cancels out of order it can, as x/time/rate's does, give back tokens a
// reservation still held was scheduled on, so that a new reservation acts
// with it beyond the burst (bench/parity's TestCancelOutOfOrderEstimate
// shows both limiters doing so).
func (b *TokenBucket) ReserveN(now time.Time, n int) Reservation {
	return b.reserve(nanos(now), int64(n), algo.MaxSpan)
}

func (b *TokenBucket) reserve(t, n, maxWait int64) Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := Reservation{n: n, limit: b.limit, act: max(t, b.st.Last)}
	switch {
	case n < 0:
	case b.p.Mode == algo.Unlimited:
		r.ok, r.lim = true, b // took nothing: r.after stays zero
	case b.p.Mode == algo.Closed:
		// n > 0 exceeds the zero burst; n = 0 waits for the tokens to
		// reach zero, which never happens if they are below it.
		if n == 0 && b.peekLocked(t).Allowed {
			r.ok, r.lim = true, b
		}
	default:
		next, wait, ok := algo.BucketReserve(b.st, &b.p, t, n, maxWait)
		if !ok {
			break
		}
		if n > 0 {
			b.st = next
		}
		r.ok, r.lim, r.act = true, b, r.act+wait
		r.after = [2]int64{b.p.Tn, b.p.Td}
		b.event = r.act
	}
	return r
}

// cancel gives back what a reservation of n tokens reserved (see ReserveN),
// unless its time to act is before now or the limit is unlimited. It
// reports whether it did (or the reservation had nothing to give back).
func (b *TokenBucket) cancel(_ any, act, n int64, after [2]int64, now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := max(now, b.st.Last)
	if act < t {
		return false
	}
	if b.p.Mode == algo.Unlimited {
		return false // nothing to give back to; a later cancel may find a limit
	}
	rTn, rTd := after[0], after[1]
	if rTn == 0 {
		return true // took nothing
	}
	floor := int64(0)
	if b.p.Mode == algo.Closed {
		floor = b.u.CapN
	}
	st := b.st
	b.settleLocked(t)
	var ok bool
	if b.st, ok = algo.BucketGiveBack(b.st, &b.u, n, b.event-act, rTn, rTd, floor); !ok {
		b.st = st // nothing given back: the latest instant stays
		return true
	}
	if act == b.event {
		// The latest reservation is gone: the one before it, if it was
		// scheduled in debt, acted n tokens earlier.
		if prev := act - algo.TokenSpan(n, rTn, rTd); prev >= t {
			b.event = prev
		}
	}
	return true
}

func (b *TokenBucket) now() time.Time { return b.clock.Now() }

// Wait is shorthand for WaitN(ctx, 1).
func (b *TokenBucket) Wait(ctx context.Context) error { return b.WaitN(ctx, 1) }

// WaitN blocks until n tokens are available; see GCRA.WaitN.
func (b *TokenBucket) WaitN(ctx context.Context, n int) error {
	return waitN(ctx, b.clock, b.Limit(), n, b.reserve)
}
