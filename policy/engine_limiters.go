package policy

// Building the limiters of layers: in memory, or kept in Redis behind a compose.Guard applying the rule's failure policy; rates, quotas and concurrency caps.

import (
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/quota"
	"github.com/admit-go/admit/redisstore"
)

// name returns a limiter's name: the key prefix and the label, escaped for
// Redis (which refuses ':', '{' and '}' in names) when redis is set.
func (e *Engine) name(label string, redis bool) string {
	n := e.o.prefix + label
	if !redis || !strings.ContainsAny(n, ":{}%") {
		return n
	}
	var sb strings.Builder
	for i := 0; i < len(n); i++ {
		switch c := n[i]; c {
		case ':', '{', '}', '%':
			sb.WriteByte('%')
			sb.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (e *Engine) keyedOptions(name string) []keyed.Option {
	opts := []keyed.Option{keyed.WithClock(e.o.clock), keyed.WithName(name), keyed.WithObserver(e.o.obs)}
	if e.o.maxKeys > 0 {
		opts = append(opts, keyed.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) guard(primary admit.KeyedLimiter, label string, f Failure, local admit.KeyedLimiter) (admit.KeyedLimiter, admit.Refunder, error) {
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
	opts := []compose.Option{compose.WithName(label), compose.WithClock(e.o.clock), compose.WithObserver(e.o.obs), compose.WithLogger(e.o.log)}
	if f.Timeout > 0 {
		opts = append(opts, compose.WithTimeout(f.Timeout))
	}
	if f.Threshold > 0 {
		opts = append(opts, compose.WithThreshold(f.Threshold))
	}
	if f.ProbeInterval > 0 {
		opts = append(opts, compose.WithProbeInterval(f.ProbeInterval))
	}
	if f.RetryAfter > 0 {
		opts = append(opts, compose.WithRetryAfter(f.RetryAfter))
	}
	g, err := compose.NewGuard(primary, p, opts...)
	if err != nil {
		return nil, nil, err
	}
	return g, g, nil
}

func share(f Failure) int {
	if f.LocalShare > 0 {
		return f.LocalShare
	}
	return 1
}

func (e *Engine) buildRate(c *clayer, alg admit.Algorithm, l admit.Limit, redis bool, f Failure) error {
	if !redis {
		lim, err := keyed.New(alg, l, e.keyedOptions(e.name(c.label, false))...)
		if err != nil {
			return err
		}
		c.lim, c.refund = lim, refunder(lim)
		return nil
	}
	rl, err := e.o.store.Limiter(alg, l, redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs))
	if err != nil {
		return err
	}
	var primary admit.KeyedLimiter = rl
	if e.o.storeClock != nil {
		primary = &clocked{lim: rl, clock: e.o.storeClock}
	}
	var local admit.KeyedLimiter
	if f.Policy == Fallback {
		if local, err = keyed.LocalShare(alg, l, share(f), e.keyedOptions(e.name(c.label+"/fallback", false))...); err != nil {
			return err
		}
	}
	c.lim, c.refund, err = e.guard(primary, c.label, f, local)
	return err
}

// location returns the time zone of q (UTC for nil).
func location(q *Quota) *time.Location {
	if q.Location == nil {
		return time.UTC
	}
	return q.Location
}

// refunder returns l as an admit.Refunder, or nil.
func refunder(l any) admit.Refunder {
	r, _ := l.(admit.Refunder)
	return r
}

func (e *Engine) quotaOptions(name string, q *Quota) []quota.Option {
	opts := []quota.Option{quota.WithClock(e.o.clock), quota.WithName(name), quota.WithObserver(e.o.obs), quota.WithLocation(location(q)), quota.WithWeekStart(q.WeekStart)}
	if e.o.maxKeys > 0 {
		opts = append(opts, quota.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) buildQuota(c *clayer, q *Quota, redis bool, f Failure) error {
	if !redis {
		lim, err := quota.New(q.Limit, q.Period, e.quotaOptions(e.name(c.label, false), q)...)
		if err != nil {
			return err
		}
		c.lim, c.refund = lim, refunder(lim)
		return nil
	}
	rq, err := e.o.store.Quota(q.Limit, q.Period, redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs),
		redisstore.WithLocation(location(q)), redisstore.WithWeekStart(q.WeekStart))
	if err != nil {
		return err
	}
	var primary admit.KeyedLimiter = rq
	if e.o.storeClock != nil {
		primary = &clocked{lim: rq, clock: e.o.storeClock}
	}
	var local admit.KeyedLimiter
	if f.Policy == Fallback {
		n := (q.Limit + int64(share(f)) - 1) / int64(share(f))
		if local, err = quota.New(n, q.Period, e.quotaOptions(e.name(c.label+"/fallback", false), q)...); err != nil {
			return err
		}
	}
	c.lim, c.refund, err = e.guard(primary, c.label, f, local)
	return err
}

func (e *Engine) concurrencyOptions(name string, cc *Concurrency) []concurrency.Option {
	opts := []concurrency.Option{concurrency.WithClock(e.o.clock), concurrency.WithName(name), concurrency.WithObserver(e.o.obs)}
	if cc.Lease > 0 {
		opts = append(opts, concurrency.WithLease(cc.Lease))
	}
	if e.o.maxKeys > 0 {
		opts = append(opts, concurrency.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) buildConcurrency(c *clayer, cc *Concurrency, redis bool, f Failure) error {
	if !redis {
		lim, err := concurrency.New(cc.Max, e.concurrencyOptions(e.name(c.label, false), cc)...)
		if err != nil {
			return err
		}
		c.slots = newLocalSlots(lim)
		return nil
	}
	opts := []redisstore.Option{redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs)}
	if cc.Lease > 0 {
		opts = append(opts, redisstore.WithLease(cc.Lease))
	}
	rc, err := e.o.store.Concurrency(cc.Max, opts...)
	if err != nil {
		return err
	}
	var local *localSlots
	if f.Policy == Fallback {
		n := (cc.Max + int64(share(f)) - 1) / int64(share(f))
		lim, err := concurrency.New(n, e.concurrencyOptions(e.name(c.label+"/fallback", false), cc)...)
		if err != nil {
			return err
		}
		local = newLocalSlots(lim)
	}
	c.slots = newRedisSlots(rc, c.label, f, local)
	return nil
}
