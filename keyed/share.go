package keyed

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/admit-go/admit"
)

// LocalShare returns a Limiter configured by cfg but for its limit, which
// is this instance's share of cfg.Limit, the limit shared among instances
// instances (see admit.Limit.Share): the local limiter of a
// compose.Fallback for a fleet of a known size. The error wraps
// admit.ErrInvalidConfig (instances below 1), admit.ErrInvalidLimit or
// one of New's.
func LocalShare(cfg Config, instances int) (*Limiter, error) {
	l, err := cfg.Limit.Share(instances)
	if err != nil {
		return nil, err
	}
	cfg.Limit = l
	return New(cfg)
}

// Shared is a keyed limiter whose limit is this instance's share of a limit
// shared by a number of live instances that may change, such as the
// members of a fleet that a service registry or a gossip protocol reports:
// the local limiter of a compose.Fallback for a fleet that scales. Each
// call reads the live count and decides under shared.Share(count),
// computed again only when the count changes; a key keeps its state across
// a change (as under a per-call limit of Limiter.Allow). A count below 1
// counts as 1: this instance is live.
//
// The zero Shared is not usable; create one with LiveShare. A Shared is
// safe for concurrent use.
type Shared struct {
	lim    *Limiter
	shared admit.Limit
	live   func() int
	cur    atomic.Pointer[share]
}

// The contract of admit that a Shared meets.
var (
	_ admit.KeyedLimiter = (*Shared)(nil)
	_ admit.Refunder     = (*Shared)(nil)
	_ admit.Resetter     = (*Shared)(nil)
)

// share is the share for a number of instances.
type share struct {
	instances int
	l         admit.Limit
	err       error
}

// LiveShare returns a Shared configured by cfg, deciding with this
// instance's share of cfg.Limit, the limit shared among live() instances.
// live is called on every request, so it must be cheap (an atomic load)
// and safe for concurrent use. The error wraps admit.ErrInvalidConfig
// (a nil live), admit.ErrInvalidLimit or one of New's.
func LiveShare(cfg Config, live func() int) (*Shared, error) {
	if live == nil {
		return nil, fmt.Errorf("%w: keyed: LiveShare needs a function counting the live instances", admit.ErrInvalidConfig)
	}
	lim, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s := &Shared{lim: lim, shared: cfg.Limit, live: live}
	s.cur.Store(s.compute(1))
	return s, nil
}

func (s *Shared) compute(instances int) *share {
	l, err := s.shared.Share(instances)
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

// Allow decides r as Limiter.Allow does, under this instance's current
// share (r.Limit is ignored: the share is the limit). The share for a
// count it cannot represent is an error wrapping admit.ErrInvalidLimit
// (see admit.Limit.Share).
func (s *Shared) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	c := s.current()
	if c.err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, c.err
	}
	r.Limit = c.l
	return s.lim.Allow(ctx, r)
}

// Refund gives back r.N events of r.Key under this instance's current
// share, as Limiter.Refund does: a Shared used as Fallback's local
// limiter, or as a layer of a chain, is undone this way. If the live count
// changed since the events were admitted, they are given back under the
// new share (the key's state carries over, as for Allow). The error is
// that of Limiter.Refund, or the share's (see Allow).
func (s *Shared) Refund(ctx context.Context, r admit.Request) error {
	c := s.current()
	if c.err != nil {
		return c.err
	}
	r.Limit = c.l
	return s.lim.Refund(ctx, r)
}

// Reset forgets key's state (see Limiter.Reset).
func (s *Shared) Reset(ctx context.Context, key string) error { return s.lim.Reset(ctx, key) }

// Limit returns this instance's share for the live count now.
func (s *Shared) Limit() admit.Limit { return s.current().l }

// Limiter returns the Limiter that holds the keys' states, for Len.
func (s *Shared) Limiter() *Limiter { return s.lim }
