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
	"github.com/admit-go/admit/internal/timeline"
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

// Delayed turns the decision of a request with a MaxDelay, made at now (on
// the time line of package timeline), into the Decision of the delay mode:
// an admission with a RetryAfter (algo.GCRADelay's) gets it as its Delay,
// and TimeToAct. (Only such requests: a partial grant is also allowed with
// a RetryAfter, the wait for one more event.)
func Delayed(d *admit.Decision, now int64) {
	if d.Allowed && d.RetryAfter > 0 {
		d.Delay, d.RetryAfter = d.RetryAfter, 0
		d.TimeToAct = timeline.Time(now + int64(d.Delay))
	}
}

// MaxDelay checks a request's MaxDelay for an algorithm and returns it in
// ns, at most algo.MaxSpan. The error wraps admit.ErrInvalidDelay and names
// pkg.
func MaxDelay(pkg string, alg admit.Algorithm, d time.Duration) (int64, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("%w: %s: MaxDelay %v: want >= 0", admit.ErrInvalidDelay, pkg, d)
	case d > 0 && !CanDelay(alg):
		return 0, fmt.Errorf("%w: %s: the %v algorithm cannot hold a slot ahead (MaxDelay %v): use gcra, token_bucket or leaky_bucket", admit.ErrInvalidDelay, pkg, alg, d)
	}
	return min(int64(d), algo.MaxSpan), nil
}

// CanDelay reports whether alg can admit a request with a delay
// (Request.MaxDelay): its state is a time line.
func CanDelay(alg admit.Algorithm) bool {
	return alg == admit.AlgGCRA || alg == admit.AlgTokenBucket || alg == admit.AlgLeakyBucket
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

// Share checks and compiles a budget shared by tenants (fair.ShareConfig's
// Budget and Idle, 0 meaning a second), for fair.Share and redisstore's
// share alike: the budget must be valid, limited and not zero (an error
// wrapping admit.ErrInvalidLimit), Idle from 2ns to an hour (an error
// wrapping admit.ErrInvalidConfig). The reserve of the budget is half its
// burst, rounded up; a window is half of Idle.
func Share(budget admit.Limit, idle time.Duration) (*Compiled, algo.ShareParams, error) {
	if budget.Rate == admit.Inf || budget.Rate == 0 {
		return nil, algo.ShareParams{}, fmt.Errorf("%w: budget %v: want a positive, limited rate", admit.ErrInvalidLimit, budget)
	}
	c := Compile(admit.AlgGCRA, budget)
	if c.Err != nil {
		return nil, algo.ShareParams{}, c.Err
	}
	if idle == 0 {
		idle = DefaultIdle
	}
	if idle < 2 || idle > time.Hour {
		return nil, algo.ShareParams{}, fmt.Errorf("%w: fair: Idle %v: want 2ns to 1h (or 0 for 1s)", admit.ErrInvalidConfig, idle)
	}
	keep := (c.P.Burst + 1) / 2
	return c, algo.ShareParams{P: c.P, LendN: (c.P.Burst - keep) * c.P.Tn, Window: int64(idle / 2)}, nil
}

// DefaultIdle is how long a tenant of a share stays active after its last
// request by default (fair.ShareConfig.Idle).
const DefaultIdle = time.Second

// Weight returns the weight f gives tenant (1 for a nil f), or an error
// wrapping admit.ErrInvalidConfig if it is outside [1, algo.ShareMaxWeight].
func Weight(f func(string) int64, tenant string) (int64, error) {
	if f == nil {
		return 1, nil
	}
	w := f(tenant)
	if w < 1 || w > algo.ShareMaxWeight {
		if len(tenant) > 64 {
			tenant = tenant[:64] + "..."
		}
		return 0, fmt.Errorf("%w: fair: invalid weight %d of tenant %q: want 1 to %d", admit.ErrInvalidConfig, w, tenant, algo.ShareMaxWeight)
	}
	return w, nil
}
