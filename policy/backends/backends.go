// Package backends holds the stores a policy.Engine keeps its rules in:
// Memory, the process's memory (packages keyed, quota and concurrency),
// and Redis, a Redis or Redis Cluster shared by a fleet (package
// redisstore). They implement policy.Backend, the seam through which the
// engine knows them, so that package policy imports neither.
//
// Which one should I use? Memory always, under the name
// policy.StoreLocal: it keeps the rules of admit's YAML format that name
// no store, adaptive limits and lanes, and the local limiters of Fallback
// failure policies. Redis, under the name "redis", when several instances
// must enforce one limit together; give it as the default store
// (policy.Config.DefaultStore) so that the rules of envoyproxy/ratelimit's
// files, which name no store, are kept there too. Stores gives both for
// a Redis store, or Memory alone for nil.
//
// A new store (Postgres, memcached) is a Backend of its own: four methods
// building the root's limiters from a policy.Spec, and a name rules give
// in store:. Redis's rate limiters grant part of a request
// (admit.PartialAllower), so the rules kept there may prefetch
// (policy.Rule.Prefetch: the engine wraps them in a prefetch.Limiter).
package backends

import (
	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/internal/stores/inredis"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/redisstore"
)

// Memory returns the backend keeping limiters in the process's memory:
// keyed.Limiter for rates, quota.Quota for quotas and concurrency.Limiter
// for slots, on the Spec's clock, each holding at most Spec.MaxKeys keys
// (each package's default for 0). Its state is not shared: a policy's
// failure policies do not apply to it. It holds nothing itself; every
// Memory is the same backend.
func Memory() policy.Backend { return memory{} }

type memory struct{}

func (memory) Rate(s policy.Spec) (admit.KeyedLimiter, error)  { return stores.Rate(stores.Spec(s)) }
func (memory) Quota(s policy.Spec) (admit.KeyedLimiter, error) { return stores.Quota(stores.Spec(s)) }
func (memory) Slots(s policy.Spec) (admit.Slots, error)        { return stores.Slots(stores.Spec(s)) }
func (memory) Shared() bool                                    { return false }

// Redis returns the backend keeping limiters in the Redis of s:
// redisstore's Limiter, Quota and ConcurrencyLimiter (whose slots always
// have a lease: Spec.Lease, or redisstore's default), named after the
// Spec's name with ':', '{', '}' and '%' escaped (%3A...), which Redis
// keys do not take in a name. They decide on Redis's clock (TIME), so
// that the instances of a fleet agree, unless clock is not nil: then each
// request without an instant of its own is decided at clock.Now(), for
// exact tests and simulations on a manual clock (a fleet must not do
// that). Spec.Clock and Spec.MaxKeys do not apply. Its state is shared:
// a policy's failure policies apply. The backend does not own s.
func Redis(s *redisstore.Store, clock admit.Clock) policy.Backend {
	return &redisBackend{inredis.Redis{Store: s, Clock: clock}}
}

type redisBackend struct{ r inredis.Redis }

func (r *redisBackend) Rate(s policy.Spec) (admit.KeyedLimiter, error) {
	return r.r.Rate(stores.Spec(s))
}
func (r *redisBackend) Quota(s policy.Spec) (admit.KeyedLimiter, error) {
	return r.r.Quota(stores.Spec(s))
}

// Rates decides several rates of a key in one script call, all or nothing
// (found by the policy engine for rules with several rates).
func (r *redisBackend) Rates(specs []policy.Spec) (admit.KeyedLimiter, error) {
	ss := make([]stores.Spec, len(specs))
	for i, s := range specs {
		ss[i] = stores.Spec(s)
	}
	return r.r.Rates(ss)
}
func (r *redisBackend) Slots(s policy.Spec) (admit.Slots, error) { return r.r.Slots(stores.Spec(s)) }
func (r *redisBackend) Shared() bool                             { return true }

// Stores returns the stores of a service, to set as a policy.Config's
// Backends and DefaultStore: Memory as policy.StoreLocal, and with a Redis
// store s (not nil), Redis(s, nil) as "redis", the default store. This is
// the one place that chooses the stores of admit serve.
//
//	cfg := policy.Config{KeyPrefix: "api:"}
//	cfg.Backends, cfg.DefaultStore = backends.Stores(store)
func Stores(s *redisstore.Store) (stores map[string]policy.Backend, defaultStore string) {
	stores = map[string]policy.Backend{policy.StoreLocal: Memory()}
	if s == nil {
		return stores, policy.StoreLocal
	}
	stores["redis"] = Redis(s, nil)
	return stores, "redis"
}
