// Package limits compiles an admit.Limit for an algorithm once and caches
// the result, for the keyed limiters (in memory and in Redis) that accept a
// limit per call. It also turns a step function's result into an
// admit.Decision, so that every keyed store reports decisions alike.
package limits

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

// Compiled is a limit checked and compiled for one algorithm.
type Compiled struct {
	Key   admit.Limit // as given
	Limit admit.Limit // with Burst filled in
	P     algo.Params
	Err   error // wraps admit.ErrInvalidLimit; P is unusable then

	// Ext is for the store using the limit: whatever it derives from it
	// (such as its arguments formatted for a script), set once, so that it
	// lives and goes with the compiled limit in the Cache.
	Ext atomic.Pointer[any]
}

// Compile checks l for algorithm alg and compiles it. The window
// algorithms also need a window of at least 1 ns.
func Compile(alg admit.Algorithm, l admit.Limit) *Compiled {
	c := &Compiled{Key: l, Limit: l}
	if l.Burst == 0 && l.Rate != admit.Inf {
		c.Limit.Burst = l.Rate
	}
	p, err := algo.Compile(l.Rate, int64(l.Period), l.Burst)
	if err == nil && alg >= admit.AlgFixedWindow {
		err = p.CheckWindow()
	}
	if err != nil {
		c.Err = fmt.Errorf("%w %v: %v", admit.ErrInvalidLimit, l, err)
	}
	c.P = p
	return c
}

// Decision is the admit.Decision for result r of a step under c, decided by
// the limiter named rule.
func (c *Compiled) Decision(r algo.Result, rule string) admit.Decision {
	return admit.Decision{
		Allowed:    r.Allowed,
		Limit:      c.Limit,
		Remaining:  r.Remaining,
		RetryAfter: time.Duration(r.RetryAfter),
		ResetAfter: time.Duration(r.ResetAfter),
		Rule:       rule,
	}
}

// Refusal is the decision that goes with an error: nothing admitted, and
// no retry that could succeed.
func (c *Compiled) Refusal(rule string) admit.Decision {
	return admit.Decision{Limit: c.Limit, RetryAfter: admit.InfDuration, Rule: rule}
}

// Cache remembers compiled limits, one per slot, replacing on a miss: tiers
// are few, so the hit rate is 100% in practice. The zero value is ready to
// use; it is safe for concurrent use.
type Cache struct {
	slots [64]atomic.Pointer[Compiled]
}

// Get returns l compiled for alg. A Cache must serve one algorithm only.
func (c *Cache) Get(alg admit.Algorithm, l admit.Limit) *Compiled {
	h := uint64(l.Rate)*0x9E3779B97F4A7C15 ^ uint64(l.Period)*0xC2B2AE3D27D4EB4F ^ uint64(l.Burst)*0x165667B19E3779F9
	i := (h ^ h>>32) % uint64(len(c.slots))
	if e := c.slots[i].Load(); e != nil && e.Key == l {
		return e
	}
	e := Compile(alg, l)
	c.slots[i].Store(e)
	return e
}
