package compose

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
)

// Share returns the part of the limit shared that each of instances
// instances should enforce on its own, so that together they enforce about
// shared: the rate divided exactly, the burst rounded up.
//
// The rate is divided without rounding by scaling the Period: Rate/instances
// per Period is written as Rate/g per Period×instances/g, where g is the
// greatest common divisor of Rate and instances. So 100/s among 4 is 25/s,
// and 10/s among 3 is 10 per 3s, an event every 300ms. The burst is
// ⌈Burst/instances⌉ (Burst 0 standing for Rate, as always), at least 1, so
// the instances together admit at most instances-1 events more at once
// than shared does. The window algorithms, whose window is
// Burst×Period/Rate, keep the shared window when instances divides the
// burst, and a window longer by less than instances emission intervals of
// shared otherwise.
//
// When Period×instances/g does not fit a time.Duration, or the share would
// be outside the domain of Limit (a capacity over 36 years), the rate is
// rounded up instead: ⌈Rate/instances⌉ per Period. admit.Unlimited and the
// zero Limit are shared as they are. An instances below 1 is an error
// wrapping ErrInvalidInstances, an invalid shared limit an error wrapping
// admit.ErrInvalidLimit.
func Share(shared admit.Limit, instances int) (admit.Limit, error) {
	if instances < 1 {
		return admit.Limit{}, fmt.Errorf("%w: %d (want at least 1)", ErrInvalidInstances, instances)
	}
	if err := shared.Validate(); err != nil {
		return admit.Limit{}, err
	}
	if shared.Rate == admit.Inf || shared.Rate == 0 {
		return shared, nil
	}
	n := int64(instances)
	burst := shared.Burst
	if burst == 0 {
		burst = shared.Rate
	}
	burst = ceilDiv(burst, n)
	g := gcd(shared.Rate, n)
	if m := n / g; int64(shared.Period) <= math.MaxInt64/m {
		exact := admit.Limit{Rate: shared.Rate / g, Period: shared.Period * time.Duration(m), Burst: burst}
		if exact.Validate() == nil {
			return exact, nil
		}
	}
	rounded := admit.Limit{Rate: ceilDiv(shared.Rate, n), Period: shared.Period, Burst: burst}
	if err := rounded.Validate(); err != nil {
		return admit.Limit{}, fmt.Errorf("the share of %v among %d instances: %w", shared, instances, err)
	}
	return rounded, nil
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 {
	if a == 0 {
		return 0
	}
	return (a-1)/b + 1
}

// gcd returns the greatest common divisor of a and b (both > 0).
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// LocalShare returns a keyed.Limiter deciding by algorithm alg with this
// instance's share of the limit shared among instances instances (see
// Share): the local limiter of a Fallback for a fleet of a known size.
// opts configure the keyed.Limiter (name it, give it a clock...). The error
// wraps ErrInvalidInstances, admit.ErrInvalidLimit or one of keyed.New's.
func LocalShare(alg admit.Algorithm, shared admit.Limit, instances int, opts ...keyed.Option) (*keyed.Limiter, error) {
	l, err := Share(shared, instances)
	if err != nil {
		return nil, err
	}
	return keyed.New(alg, l, opts...)
}

// Shared is a keyed limiter whose limit is this instance's share of a limit
// shared by a number of live instances that may change, such as the
// members of a fleet that a service registry or a gossip protocol reports:
// the local limiter of a Fallback for a fleet that scales. Each call reads
// the live count and decides under Share(shared, count), computed again
// only when the count changes; a key keeps its state across a change (see
// keyed.Limiter.AllowLimit). A count below 1 counts as 1: this instance is
// live.
//
// The zero Shared is not usable; create one with LiveShare. A Shared is
// safe for concurrent use.
type Shared struct {
	lim    *keyed.Limiter
	shared admit.Limit
	live   func() int
	cur    atomic.Pointer[share]
}

// share is the share for a number of instances.
type share struct {
	instances int
	l         admit.Limit
	err       error
}

// LiveShare returns a Shared deciding by algorithm alg with this instance's
// share of shared among live() instances. live is called on every request,
// so it must be cheap (an atomic load) and safe for concurrent use. opts
// configure the underlying keyed.Limiter. The error wraps
// ErrInvalidInstances (a nil live), admit.ErrInvalidLimit or one of
// keyed.New's.
func LiveShare(alg admit.Algorithm, shared admit.Limit, live func() int, opts ...keyed.Option) (*Shared, error) {
	if live == nil {
		return nil, fmt.Errorf("%w: LiveShare needs a function counting the live instances", ErrInvalidInstances)
	}
	lim, err := keyed.New(alg, shared, opts...)
	if err != nil {
		return nil, err
	}
	s := &Shared{lim: lim, shared: shared, live: live}
	s.cur.Store(s.compute(1))
	return s, nil
}

func (s *Shared) compute(instances int) *share {
	l, err := Share(s.shared, instances)
	return &share{instances: instances, l: l, err: err}
}

// current returns the share for the live count now.
func (s *Shared) current() *share {
	k := max(s.live(), 1)
	c := s.cur.Load()
	if c.instances != k {
		c = s.compute(k)
		s.cur.Store(c)
	}
	return c
}

// Allow decides whether n events may happen for key now under this
// instance's current share, as keyed.Limiter.AllowLimit does. The share
// for a count it cannot represent is an error wrapping
// admit.ErrInvalidLimit (see Share).
func (s *Shared) Allow(ctx context.Context, key string, n int64) (admit.Decision, error) {
	c := s.current()
	if c.err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, c.err
	}
	return s.lim.AllowLimit(ctx, key, c.l, n)
}

// Refund gives back n events of key under this instance's current share,
// as keyed.Limiter.RefundLimit does: a Shared used as Fallback's local
// limiter, or as a layer of a chain, is undone this way. If the live count
// changed since the events were admitted, they are given back under the
// new share (the key's state carries over, as for Allow). The error is
// that of RefundLimit, or the share's (see Allow).
func (s *Shared) Refund(ctx context.Context, key string, n int64) error {
	c := s.current()
	if c.err != nil {
		return c.err
	}
	return s.lim.RefundLimit(ctx, key, c.l, n)
}

// Limit returns this instance's share for the live count now.
func (s *Shared) Limit() admit.Limit { return s.current().l }

// Limiter returns the keyed.Limiter that holds the keys' states, for Len
// and Reset.
func (s *Shared) Limiter() *keyed.Limiter { return s.lim }
