package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/redisstore/internal/lua"
	"github.com/redis/go-redis/v9"
)

var shareScript = redis.NewScript(lua.Share)

// Share returns a limiter sharing cfg.Budget among tenants in proportion
// to their weights, as fair.Share does (see there for the model), whose
// budget and tenants live in the store's Redis, so that every process
// using the same Redis and name shares one budget. The key of a request
// is the tenant; cfg.Weight gives its weight. It decides exactly as a
// fair.Share of the same configuration at the same instants (the same
// step function, in Lua), on Redis's clock or at the instants the caller
// gives, in one script call per decision.
//
// cfg.Name names the limiter as LimiterConfig.Name does (it may not
// contain ':', '{' or '}', at most 128 bytes) and is part of its keys; the
// budget's state is kept at
//
//	<prefix>{<tag>}:share:<Name>:
//
// and each tenant's at <prefix>{<tag>}:sharet:<Name>:0:<tenant>, all in the
// slot of one hash tag, so that Redis Cluster decides each request in one
// slot. Keys expire once their states are full and their tenants idle
// (Config.MinTTL bounds their expiry from below, as for a Limiter). The
// clock and MaxTenants of cfg are not used: Redis holds any number of
// tenants. The Observer is told of each decision.
//
// The limiter is an admit.KeyedLimiter, an admit.Refunder (Refund gives
// events back as fair.Share.Refund does) and an admit.HealthReporter. It
// calls Redis directly, one round trip per call, bounded by the Store's
// timeout (Config.Timeout) and the caller's context, and keeps no deny
// cache (a tenant's denial depends on the others). The error wraps
// admit.ErrInvalidLimit or admit.ErrInvalidConfig for a configuration
// fair.NewShare would refuse, or a bad name.
func (s *Store) Share(cfg fair.ShareConfig) (admit.KeyedLimiter, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	c, sp, err := limits.Share(cfg.Budget, cfg.Idle)
	if err != nil {
		return nil, err
	}
	return &share{
		s:      s,
		c:      c,
		sp:     sp,
		args:   lua.ShareArgs(&sp),
		weight: cfg.Weight,
		name:   cfg.Name,
		obs:    cfg.Observer,
		head:   ":share:" + cfg.Name + ":",
		thead:  ":sharet:" + cfg.Name + ":",
	}, nil
}

// share is the limiter Store.Share returns.
type share struct {
	s      *Store
	c      *limits.Compiled
	sp     algo.ShareParams
	args   []any // ARGV[4..10]
	weight func(string) int64
	name   string
	obs    admit.Observer
	head   string // ":share:<name>:"
	thead  string // ":sharet:<name>:"
}

var (
	_ admit.KeyedLimiter   = (*share)(nil)
	_ admit.Refunder       = (*share)(nil)
	_ admit.HealthReporter = (*share)(nil)
)

// Allow decides r.N events of the tenant r.Key (see Store.Share).
func (l *share) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	return l.AllowIn(ctx, "", r)
}

// Refund gives back r.N events admitted to the tenant r.Key.
func (l *share) Refund(ctx context.Context, r admit.Request) error {
	return l.RefundIn(ctx, "", r)
}

// AllowIn is Allow for the budget named budget (Allow's is ""): a limiter
// holds any number of budgets, each shared by its own tenants (the policy
// engine's rules keep one budget per key). Package internal/stores reaches
// it through an interface of its own.
func (l *share) AllowIn(ctx context.Context, budget string, r admit.Request) (admit.Decision, error) {
	res, err := l.call(ctx, lua.ShareAllow, budget, r)
	if err != nil {
		return l.c.Refusal(l.name), err
	}
	d := l.c.Decision(res, l.name)
	if l.obs != nil {
		l.obs.Decided(admit.DecisionEvent{Limiter: l.name, Key: r.Key, N: r.N, Decision: d})
	}
	return d, nil
}

// RefundIn is Refund for the budget named budget (see AllowIn).
func (l *share) RefundIn(ctx context.Context, budget string, r admit.Request) error {
	if r.N == 0 {
		return l.s.checkInput(budget+r.Key, 0)
	}
	_, err := l.call(ctx, lua.ShareRefund, budget, r)
	return err
}

// Healthy reports whether the Store's latest round trip to Redis got an
// answer.
func (l *share) Healthy() bool { return !l.s.down.Load() }

// call runs the Share script in mode for tenant r.Key of budget.
func (l *share) call(ctx context.Context, mode, budget string, r admit.Request) (algo.Result, error) {
	if err := l.s.checkInput(budget+r.Key, r.N); err != nil {
		return algo.Result{}, err
	}
	w, err := limits.Weight(l.weight, r.Key)
	if err != nil {
		return algo.Result{}, err
	}
	if l.s.closed.Load() {
		return algo.Result{}, errClosed
	}
	now := ""
	if t := instant(r.At); t >= 0 {
		now = strconv.FormatInt(t, 10)
	}
	keys := l.keys(budget, r.Key)
	args := make([]any, 0, 12)
	args = append(args, mode, now, strconv.FormatInt(l.s.o.minTTL.Milliseconds(), 10))
	args = append(args, l.args...)
	args = append(args, strconv.FormatInt(r.N, 10), strconv.FormatInt(w, 10))
	var res algo.Result
	err = l.s.call(ctx, "share", 2, func(ctx context.Context) error {
		v, err := shareScript.Run(ctx, l.s.client, keys, args...).Result()
		var rerr redis.Error
		l.s.down.Store(err != nil && !errors.As(err, &rerr))
		if err != nil {
			return err
		}
		_, rs, err := lua.ParseReply(v, 1)
		if err == nil {
			res = rs[0]
		}
		return err
	})
	return res, err
}

// keys returns the Redis keys of budget and of its tenant: prefix, the
// hash tag of the budget, then ":share:<name>:<budget>" and
// ":sharet:<name>:<len(budget)>:<budget><tenant>" (the length keeps the
// pairs of budget and tenant apart).
func (l *share) keys(budget, tenant string) []string {
	var tag [18]byte
	tag[0], tag[17] = '{', '}'
	putHex(tag[1:17], hashOf(budget))
	var b strings.Builder
	b.WriteString(l.s.prefix)
	b.Write(tag[:])
	b.WriteString(l.head)
	b.WriteString(budget)
	bk := b.String()
	b.Reset()
	b.WriteString(l.s.prefix)
	b.Write(tag[:])
	b.WriteString(l.thead)
	b.WriteString(strconv.Itoa(len(budget)))
	b.WriteByte(':')
	b.WriteString(budget)
	b.WriteString(tenant)
	return []string{bk, b.String()}
}
