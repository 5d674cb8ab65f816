package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/redisstore"
)

// clayer is one limiter of a compiled rule or tier: a rate limit or quota
// (lim) or a concurrency cap (slots), with what statuses report of it.
type clayer struct {
	kind   admit.Kind
	class  uint8  // the order of evaluation: see classOf
	label  string // Decision.Rule: the rule [/tier] [/kind]
	prefix string // label + "/": the start of the Rule of its failure policy's decisions (and of its lanes')
	limit  admit.Limit
	lim    admit.KeyedLimiter
	refund admit.Refunder
	slots  admit.Slots
	learn  compose.Learner // an adaptive rate, learning from outcomes
	print  string          // the definition, for WithPrevious
	// shortKey: the limiter keeps no reference to the keys it is given
	// (it copies what it stores), so they may be scratch space.
	shortKey bool
	// lanes marks a lanes layer: lane is the index of the match entry
	// whose value picks the lane, and laneOnly says that the other
	// entries make no key (one budget).
	lanes    bool
	lane     int
	laneOnly bool
}

// The classes of layers, in the order a check asks them: cheap local
// limits first, so that a request they refuse costs no round trip, and
// concurrency caps last, so that their slots are rarely taken only to be
// given back.
//
// Adaptive concurrency caps come last of all: a request a later layer
// refuses would give back their slots at once, which would count as a
// success of no latency.
const (
	classLocal uint8 = iota
	classRemote
	classLocalSlots
	classRemoteSlots
	classAdaptiveSlots
)

func classOf(kind admit.Kind, redis bool) uint8 {
	c := classLocal
	if kind == admit.KindConcurrency {
		c = classLocalSlots
	}
	if redis {
		c++
	}
	return c
}

// failure returns the error of call c for its descriptor's status: its
// limiter's, or ErrStoreFailed when its rule's failure policy decided. A
// layer kept in Redis (classRemote, classRemoteSlots) is always behind one
// (compose.Guard, redisSlots), whose decisions, and only they, have a Rule
// under the layer's prefix ("fail-open", "fail-closed", "fallback").
func (c *call) failure() error {
	switch {
	case c.err != nil:
		return c.err
	case c.done && (c.l.class == classRemote || c.l.class == classRemoteSlots) && strings.HasPrefix(c.d.Rule, c.l.prefix):
		return ErrStoreFailed
	}
	return nil
}

// clocked makes a Redis limiter decide at its clock's instants (see
// WithStoreClock).
type clocked struct {
	lim   admit.KeyedLimiter
	clock admit.Clock
}

func (c *clocked) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if r.At.IsZero() {
		r.At = c.clock.Now()
	}
	return c.lim.Allow(ctx, r)
}

// Refund gives back r.N events at the clock's instant.
func (c *clocked) Refund(ctx context.Context, r admit.Request) error {
	rf, ok := c.lim.(admit.Refunder)
	if !ok {
		return nil
	}
	if r.At.IsZero() {
		r.At = c.clock.Now()
	}
	return rf.Refund(ctx, r)
}

// Reset forwards to the limiter.
func (c *clocked) Reset(ctx context.Context, key string) error {
	if r, ok := c.lim.(admit.Resetter); ok {
		return r.Reset(ctx, key)
	}
	return fmt.Errorf("%w: %T", compose.ErrNotResetter, c.lim)
}

// Healthy forwards the limiter's health (see compose.Guard).
func (c *clocked) Healthy() bool {
	if h, ok := c.lim.(admit.HealthReporter); ok {
		return h.Healthy()
	}
	return true
}

// localSlots adapts a concurrency.Limiter to admit.Slots. Its Releasers
// are recycled (a free list, not a sync.Pool, so that the count of
// allocations is deterministic), so a grant allocates nothing once the
// list holds as many as are in flight.
type localSlots struct {
	c    *concurrency.Limiter
	mu   sync.Mutex
	free []*permitBox
}

// maxFree bounds the free list of a localSlots.
const maxFree = 1024

func newLocalSlots(c *concurrency.Limiter) *localSlots { return &localSlots{c: c} }

func (s *localSlots) get() *permitBox {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return b
	}
	s.mu.Unlock()
	return &permitBox{s: s}
}

func (s *localSlots) put(b *permitBox) {
	s.mu.Lock()
	if len(s.free) < maxFree {
		s.free = append(s.free, b)
	}
	s.mu.Unlock()
}

func (s *localSlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	p, d, err := s.c.TryAcquire(ctx, r)
	if err != nil {
		if errors.Is(err, admit.ErrExceedsBurst) {
			// More slots than the cap: never admitted, a refusal.
			return nil, d, nil
		}
		return nil, d, err
	}
	if p == (concurrency.Permit{}) {
		return nil, d, nil
	}
	b := s.get()
	b.p = p
	return b, d, nil
}

// permitBox holds a Permit for a compose.Held, which releases it once and
// forgets it; the box then goes back to its free list.
type permitBox struct {
	p concurrency.Permit
	s *localSlots
}

func (b *permitBox) Release() {
	p := b.p
	if p == (concurrency.Permit{}) {
		return
	}
	b.p = concurrency.Permit{}
	p.Release()
	b.s.put(b)
}

// redisSlots adapts a redisstore.ConcurrencyLimiter to admit.Slots, with
// a failure policy applied to each call that fails (there is no breaker
// for concurrency: each call asks Redis, within the Store's timeout).
type redisSlots struct {
	primary    admit.Slots // the limiter's own adapter (leases released once)
	policy     FailurePolicy
	local      *localSlots // Fallback's
	retryAfter time.Duration
	openD      admit.Decision
	closedD    admit.Decision
	fallback   string
}

func newRedisSlots(c *redisstore.ConcurrencyLimiter, label string, f Failure, local *localSlots) *redisSlots {
	ra := f.RetryAfter
	if ra == 0 {
		ra = compose.DefaultRetryAfter
	}
	return &redisSlots{
		primary:    c.Slots(),
		policy:     f.Policy,
		local:      local,
		retryAfter: ra,
		openD:      admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: math.MaxInt64, Rule: label + "/fail-open", Kind: admit.KindConcurrency},
		closedD:    admit.Decision{RetryAfter: ra, ResetAfter: ra, Rule: label + "/fail-closed", Kind: admit.KindConcurrency},
		fallback:   label + "/fallback",
	}
}

func (s *redisSlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	rel, d, err := s.primary.TryAcquire(ctx, r)
	if err == nil || ctx.Err() != nil || !compose.IsFailure(err) {
		return rel, d, err
	}
	switch s.policy {
	case FailOpen:
		return nil, s.openD, nil
	case FailClosed:
		if r.N == 0 {
			return nil, admit.Decision{Allowed: true, Rule: s.closedD.Rule, Kind: admit.KindConcurrency}, nil
		}
		return nil, s.closedD, nil
	}
	rel, d, err = s.local.TryAcquire(ctx, r)
	d.Rule = s.fallback
	return rel, d, err
}
