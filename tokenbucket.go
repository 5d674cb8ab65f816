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
// takes n tokens if it finds them. Over any interval of length t it admits at
// most B + ⌊t/T⌋ events (T = Period/Rate), exactly as GCRA and LeakyBucket
// do: the three are one algorithm kept in different representations.
//
// It has x/time/rate's whole surface: AllowN, ReserveN (with Cancel giving
// back what later reservations did not rely on), WaitN, SetLimit, SetBurst
// and Tokens, each with an explicit instant and a shorthand reading the
// limiter's Clock. An instant earlier than the latest one seen counts as the
// latest: time going backwards neither refills nor drains the bucket.
//
// The zero TokenBucket is not usable; create one with NewTokenBucket. A
// TokenBucket is safe for concurrent use.
type TokenBucket struct {
	mu    sync.Mutex
	p     algo.Params
	limit Limit
	st    algo.Bucket
	gen   *int // changes with the limit; reservations compare it
	clock Clock
	name  string
}

// NewTokenBucket returns a full token bucket for l. The error wraps
// ErrInvalidLimit.
func NewTokenBucket(l Limit, opts ...Option) (*TokenBucket, error) {
	p, err := l.compile()
	if err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	return &TokenBucket{p: p, limit: l.normal(), gen: new(int), clock: o.clock, name: o.name}, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (b *TokenBucket) Allow() bool { return b.allowAt(clockNanos(b.clock), 1) }

// AllowN reports whether n tokens are available at instant now, and if so
// takes them. A negative n or an n above the burst is never allowed; n = 0
// always is.
func (b *TokenBucket) AllowN(now time.Time, n int) bool { return b.allowAt(nanos(now), n) }

func (b *TokenBucket) allowAt(t int64, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.p.Mode {
	case algo.Unlimited:
		return true
	case algo.Closed:
		return n == 0
	}
	var ok bool
	b.st, ok = algo.BucketAllow(b.st, &b.p, t, int64(n))
	return ok
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
	b.st, r = algo.BucketStep(b.st, &b.p, t, int64(n))
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
	return algo.BucketTokens(b.st, &b.p, t)
}

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (b *TokenBucket) SetLimit(l Limit) error { return b.SetLimitAt(b.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The tokens available at now
// carry over, capped at the new burst. Reservations made before the change
// can no longer be cancelled. The error wraps ErrInvalidLimit; the old limit
// then stays.
func (b *TokenBucket) SetLimitAt(now time.Time, l Limit) error {
	p, err := l.compile()
	if err != nil {
		return err
	}
	t := nanos(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st = algo.BucketRebase(b.st, &b.p, &p, t)
	b.p, b.limit, b.gen = p, l.normal(), new(int)
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
// Reservation's delay; see GCRA.ReserveN.
func (b *TokenBucket) ReserveN(now time.Time, n int) Reservation {
	return b.reserve(nanos(now), int64(n), algo.MaxSpan)
}

func (b *TokenBucket) reserve(t, n, maxWait int64) Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	next, wait, ok := algo.BucketReserve(b.st, &b.p, t, n, maxWait)
	r := Reservation{ok: ok, n: n, limit: b.limit, act: max(t, b.st.Last) + wait}
	if ok {
		b.st = next
		r.lim, r.owner, r.after = b, b.gen, [2]int64{next.Last, next.Level}
	}
	return r
}

func (b *TokenBucket) cancel(owner any, after [2]int64, n, t int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if owner != b.gen {
		return
	}
	prev := algo.Bucket{Last: after[0], Level: after[1]}
	b.st = algo.BucketRefund(b.st, &b.p, t, prev, n)
}

func (b *TokenBucket) now() time.Time { return b.clock.Now() }

// Wait is shorthand for WaitN(ctx, 1).
func (b *TokenBucket) Wait(ctx context.Context) error { return b.WaitN(ctx, 1) }

// WaitN blocks until n tokens are available; see GCRA.WaitN.
func (b *TokenBucket) WaitN(ctx context.Context, n int) error {
	return waitN(ctx, b.clock, b.Limit(), n, b.reserve)
}
