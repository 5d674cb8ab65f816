package inredis

import (
	"context"
	"strconv"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/redisstore"
)

// Redis builds limiters in the Redis of Store, deciding at Clock.Now()
// when Clock is not nil (see policy/backends.Redis).
type Redis struct {
	Store *redisstore.Store
	Clock admit.Clock
}

// name escapes ':', '{', '}' and '%' in a limiter's name.
func name(n string) string {
	if !strings.ContainsAny(n, ":{}%") {
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

// redisOptions are the settings of s a Redis limiter takes: its name,
// escaped, and its observer (Redis's clock decides).
func redisOptions(s *stores.Spec) admit.Options {
	return admit.Options{Name: name(s.Name), Observer: s.Observer}
}

func (r *Redis) Rate(s stores.Spec) (admit.KeyedLimiter, error) {
	if s.Share != nil {
		return r.share(s)
	}
	lim, err := r.Store.Limiter(redisstore.LimiterConfig{
		Options:   redisOptions(&s),
		Algorithm: s.Algorithm,
		Limit:     s.Limit,
	})
	if err != nil {
		return nil, err
	}
	return r.clocked(lim), nil
}

func (r *Redis) Quota(s stores.Spec) (admit.KeyedLimiter, error) {
	q, err := r.Store.Quota(redisstore.QuotaConfig{
		Options:   redisOptions(&s),
		Limit:     s.Limit.Rate,
		Period:    s.Period,
		Location:  s.Location,
		WeekStart: &s.WeekStart,
	})
	if err != nil {
		return nil, err
	}
	return r.clocked(q), nil
}

func (r *Redis) Slots(s stores.Spec) (admit.Slots, error) {
	c, err := r.Store.Concurrency(redisstore.ConcurrencyConfig{
		Options: redisOptions(&s),
		Max:     s.Limit.Rate,
		Lease:   max(s.Lease, 0), // 0: the default lease
	})
	if err != nil {
		return nil, err
	}
	slots := c.Slots()
	if x, ok := slots.(leases.Countable); ok {
		// Counted, for admit serve's status page and metrics: the slots
		// held through this process (internal/enginehook.SlotCounter),
		// their leases running out on r's clock, or else the engine's.
		clock := r.Clock
		if clock == nil {
			clock = s.Clock
		}
		slots = x.CountHeld(clock)
	}
	return slots, nil
}

// limiter is what redisstore's Limiter and Quota implement of the contract.
type limiter interface {
	admit.KeyedLimiter
	admit.Refunder
	admit.Resetter
}

// partial is what a redisstore.Limiter that grants part of a request
// implements of prefetch.Store, beyond limiter.
type partial interface {
	admit.PartialAllower
	Algorithm() admit.Algorithm
	Limit() admit.Limit
}

// clocked returns l, deciding the requests without an At at r.Clock.Now()
// if r.Clock is not nil (a prefetch.Store still if l is one).
func (r *Redis) clocked(l limiter) admit.KeyedLimiter {
	if r.Clock == nil {
		return l
	}
	c := &clocked{l, r.Clock}
	if p, ok := l.(partial); ok {
		return &clockedPartial{c, p}
	}
	return c
}

// clockedPartial is a clocked limiter that grants part of a request.
type clockedPartial struct {
	*clocked
	p partial
}

func (c *clockedPartial) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	return c.p.AllowAtMost(ctx, c.at(r))
}

func (c *clockedPartial) Algorithm() admit.Algorithm { return c.p.Algorithm() }
func (c *clockedPartial) Limit() admit.Limit         { return c.p.Limit() }

// clocked makes a limiter decide at its clock's instants.
type clocked struct {
	limiter
	clock admit.Clock
}

func (c *clocked) at(r admit.Request) admit.Request {
	if r.At.IsZero() {
		r.At = c.clock.Now()
	}
	return r
}

func (c *clocked) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	return c.limiter.Allow(ctx, c.at(r))
}

func (c *clocked) Refund(ctx context.Context, r admit.Request) error {
	return c.limiter.Refund(ctx, c.at(r))
}

// Cached answers from the limiter's deny cache, if it has one.
func (c *clocked) Cached(r admit.Request) (admit.Decision, bool) {
	if x, ok := c.limiter.(admit.Cacher); ok {
		return x.Cached(c.at(r))
	}
	return admit.Decision{}, false
}

// Healthy forwards the limiter's health, if it reports one.
func (c *clocked) Healthy() bool {
	if h, ok := c.limiter.(admit.HealthReporter); ok {
		return h.Healthy()
	}
	return true
}

// LeaseRecords returns the lease records of store (see leases.Records),
// for admit serve's lease table, or nil for a nil store. They are reached
// through the Slots of a concurrency limit of store, whose method
// LeaseRecords names a type of internal/leases, so that they are no part
// of redisstore's public surface; making the limit sends nothing to Redis.
func LeaseRecords(store *redisstore.Store) leases.Records[redisstore.Lease] {
	if store == nil {
		return nil
	}
	c, err := store.Concurrency(redisstore.ConcurrencyConfig{Max: 1})
	if err != nil {
		panic("stores: a concurrency limit of the defaults: " + err.Error()) // cannot happen
	}
	return c.Slots().(leases.Source[redisstore.Lease]).LeaseRecords()
}
