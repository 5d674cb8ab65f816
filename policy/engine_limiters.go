package policy

// Building the limiters of layers through the engine's backends (see
// Backend): rates, quotas and concurrency caps, those of a shared store
// behind a failure policy (compose.Guard, compose.GuardSlots) whose
// Fallback keeps this instance's share of the limit in the local store.

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// spec returns the Spec of the limiter of label, without its limit.
func (e *Engine) spec(label string) Spec {
	return Spec{Name: e.o.prefix + label, Clock: e.o.clock, Observer: e.o.obs, MaxKeys: e.o.maxKeys}
}

// local returns the local store, which keeps Fallback's limiters.
func (e *Engine) local() (Backend, error) {
	if b := e.o.backends[StoreLocal]; b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("%w: the failure policy falls back to store %q, which the engine was not given (it has %s; see Config.Backends)", ErrNoStore, StoreLocal, e.storeNames())
}

// policyOf returns the compose.Policy of f, with local as Fallback's
// limiter.
func policyOf(f Failure, local admit.KeyedLimiter) compose.Policy {
	var p compose.Policy
	switch f.Policy {
	case FailClosed:
		p = compose.FailClosed
	case Fallback:
		p = compose.Fallback(local)
	default:
		p = compose.FailOpen
	}
	if f.Breaker {
		p = compose.Breaker(p)
	}
	return p
}

func (e *Engine) guard(primary admit.KeyedLimiter, label string, f Failure, local admit.KeyedLimiter) (admit.KeyedLimiter, error) {
	g, err := compose.NewGuard(primary, compose.GuardConfig{
		Options:       admit.Options{Name: label, Clock: e.o.clock, Observer: e.o.obs},
		Policy:        policyOf(f, local),
		Timeout:       f.Timeout,
		Threshold:     f.Threshold,
		ProbeInterval: f.ProbeInterval,
		RetryAfter:    f.RetryAfter,
		Logger:        e.o.log,
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func share(f Failure) int {
	if f.LocalShare > 0 {
		return f.LocalShare
	}
	return 1
}

// ceilShare is this instance's share of n among those of f.
func ceilShare(n int64, f Failure) int64 {
	return (n + int64(share(f)) - 1) / int64(share(f))
}

// keyedLimiter sets the limiter of c: lim, or in a shared store lim behind
// the failure policy f, whose Fallback asks what fallback builds in the
// local store.
func (e *Engine) keyedLimiter(c *clayer, lim admit.KeyedLimiter, st store, f Failure, fallback func(Backend) (admit.KeyedLimiter, error)) error {
	if !st.shared {
		c.lim = lim
		return nil
	}
	var local admit.KeyedLimiter
	if f.Policy == Fallback {
		b, err := e.local()
		if err != nil {
			return err
		}
		ll, err := fallback(b)
		if err != nil {
			return err
		}
		local = ll
	}
	var err error
	c.lim, err = e.guard(lim, c.label, f, local)
	return err
}

// buildRate sets the rate limiter of c, prefetching blocks of at most
// prefetch events (see Rule.Prefetch) if not 0.
func (e *Engine) buildRate(c *clayer, alg admit.Algorithm, l admit.Limit, st store, f Failure, prefetch int64) error {
	s := e.spec(c.label)
	s.Algorithm, s.Limit = alg, l
	if prefetch != 0 && s.Observer != nil {
		// The prefetching limiter reports the decisions it returns; the
		// store's would count its block grants as decisions.
		s.Observer = noDecisions{s.Observer}
	}
	lim, err := st.b.Rate(s)
	if err != nil {
		return err
	}
	if prefetch != 0 {
		if lim, err = e.prefetch(c, lim, l, st, prefetch); err != nil {
			return err
		}
	}
	return e.keyedLimiter(c, lim, st, f, func(b Backend) (admit.KeyedLimiter, error) {
		ls := e.spec(c.label + "/fallback")
		ls.Algorithm = alg
		if ls.Limit, err = l.Share(share(f)); err != nil {
			return nil, err
		}
		return b.Rate(ls)
	})
}

// location returns the time zone of q (UTC for nil).
func location(q *Quota) *time.Location {
	if q.Location == nil {
		return time.UTC
	}
	return q.Location
}

func (e *Engine) buildQuota(c *clayer, q *Quota, st store, f Failure) error {
	spec := func(label string, n int64) Spec {
		s := e.spec(label)
		s.Limit = admit.Limit{Rate: n, Burst: n}
		s.Period, s.Location, s.WeekStart = q.Period, location(q), q.WeekStart
		return s
	}
	lim, err := st.b.Quota(spec(c.label, q.Limit))
	if err != nil {
		return err
	}
	return e.keyedLimiter(c, lim, st, f, func(b Backend) (admit.KeyedLimiter, error) {
		return b.Quota(spec(c.label+"/fallback", ceilShare(q.Limit, f)))
	})
}

func (e *Engine) buildConcurrency(c *clayer, cc *Concurrency, st store, f Failure) error {
	spec := func(label string, n int64) Spec {
		s := e.spec(label)
		s.Limit, s.Lease = admit.Limit{Rate: n, Burst: n}, cc.Lease
		return s
	}
	slots, err := st.b.Slots(spec(c.label, cc.Max))
	if err != nil {
		return err
	}
	if !st.shared {
		c.slots = slots
		return nil
	}
	held := heldCounts(nil, slots)
	p := compose.FailOpen
	switch f.Policy {
	case FailClosed:
		p = compose.FailClosed
	case Fallback:
		b, err := e.local()
		if err != nil {
			return err
		}
		local, err := b.Slots(spec(c.label+"/fallback", ceilShare(cc.Max, f)))
		if err != nil {
			return err
		}
		p = compose.FallbackSlots(local)
		if held != nil {
			held = heldCounts(held, local)
		}
	}
	c.held = held
	c.slots, err = compose.GuardSlots(slots, compose.GuardConfig{Options: admit.Options{Name: c.label}, Policy: p, RetryAfter: f.RetryAfter})
	return err
}

// noDecisions is an Observer that drops decisions and passes on the rest.
type noDecisions struct{ admit.Observer }

func (noDecisions) Decided(admit.DecisionEvent) {}
