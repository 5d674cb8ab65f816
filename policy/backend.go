package policy

// The seam between the engine and the stores its rules are kept in:
// Backend, the Spec of each limiter, and the names of the stores.

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/calendar"
)

// StoreLocal names the store kept in the process's memory: the
// store of the rules of this package's YAML format that name none, of
// adaptive limits and lanes, and of the local limiters of Fallback
// failure policies. An engine has it when it is given a Backend of this
// name (policy/backends.Memory).
const StoreLocal = "local"

// storeDefault, an empty Rule.Store or Override.Store, names the engine's
// default store (Config.DefaultStore): StoreLocal, or a shared store the
// engine is configured to default to. The Envoy loader uses it, since
// envoyproxy/ratelimit's files do not say; in this package's YAML format,
// it is store: default.
const storeDefault = ""

// Backend builds the limiters of the rules kept in one store: keyed rate
// limiters, calendar quotas and concurrency slots, behind the root's
// contract (admit.KeyedLimiter, admit.Slots), each for one Spec. The
// engine builds each limiter once (and hands it over on a reload, see
// Config.Previous), and asks it with requests of a key and a cost (the zero
// Limit and At: the limiter's own limit, and now by its clock); it resets
// keys through admit.Resetter, and a Guard around a shared store's
// limiters uses admit.HealthReporter and admit.Cacher where they are
// implemented.
//
// A rule kept in a shared store may prefetch (Rule.Prefetch) if the
// store's rate limiters can grant part of a request: if Rate's limiters
// are prefetch.Stores (admit.PartialAllower, with Algorithm and Limit
// methods), as redisstore's are; the engine wraps them in a
// prefetch.Limiter.
//
// policy/backends.Memory (the in-memory packages keyed, quota and
// concurrency) and policy/backends.Redis (package redisstore) implement
// it; any other store implements these four methods and is given to the
// engine by name (Config.Backends). A Backend must be safe for concurrent use.
type Backend interface {
	// Rate returns a keyed rate limiter deciding by s.Algorithm under
	// s.Limit.
	Rate(s Spec) (admit.KeyedLimiter, error)
	// Quota returns a calendar quota: s.Limit.Rate events per key per
	// s.Period in s.Location (weeks starting on s.WeekStart).
	Quota(s Spec) (admit.KeyedLimiter, error)
	// Slots returns a cap of s.Limit.Rate slots per key, whose holders
	// lose them after s.Lease if it is positive (a shared store should
	// always bound how long a slot can be held, so that a crashed holder
	// cannot leak it).
	Slots(s Spec) (admit.Slots, error)
	// Shared reports whether the store's state is shared with other
	// instances (a Redis is, memory is not). The rules of a shared store
	// apply their failure policies (Rule.Failure), whose Fallback
	// divides the limit among Failure.LocalShare instances in the local
	// store, and their layers are asked after the local ones, so that a
	// request a local layer refuses costs no round trip.
	Shared() bool
}

// Spec is what a Backend builds a limiter of. Which fields a limiter uses
// is said by Backend's methods; the others are zero.
type Spec struct {
	// Name names the limiter (its metrics, and in a shared store its
	// keys): the engine's key prefix (Config.KeyPrefix) followed by the
	// rule's name, tier and kind, as in Decision.Rule (rule/tier/kind).
	// A backend escapes what its store cannot hold.
	Name string
	// Algorithm is a rate limiter's algorithm.
	Algorithm admit.Algorithm
	// Limit is a rate limiter's limit (Burst 0 defaults to Rate); for a
	// quota, Rate is the events per period, and for slots, the slots per
	// key.
	Limit admit.Limit
	// Period, Location and WeekStart are a quota's calendar period (a
	// quota.Period), its time zone (never nil) and the first day of its
	// weeks.
	Period    calendar.Period
	Location  *time.Location
	WeekStart time.Weekday
	// Lease bounds how long slots can be held; 0 means the backend's
	// default.
	Lease time.Duration
	// Clock, Observer and MaxKeys are the engine's (Config.Clock,
	// Config.Observer, Config.MaxKeys; MaxKeys 0 means the backend's
	// default).
	// A shared store decides on its own clock unless told otherwise
	// (backends.Redis with a clock).
	Clock    admit.Clock
	Observer admit.Observer
	MaxKeys  int
	// Share, if not nil, asks Rate for a limiter sharing Limit (Share's
	// Budget) among tenants by Share's weights, as fair.Share does (and
	// redisstore's Store.Share): the key of each request names the
	// tenant and its budget, as "<length of the tenant in decimal>:",
	// the tenant, then the key of the budget. The engine asks only a
	// shared store for one (it keeps the shares of rules kept in memory
	// itself); a shared store that cannot share a budget must refuse
	// such a Spec with an error.
	Share *fair.ShareConfig
}

// maxStoreName bounds the length of a store's name.
const maxStoreName = 64

// validStoreName reports whether s may name a store.
func validStoreName(s string) bool {
	if s == "" || len(s) > maxStoreName || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// store is a store of the engine, resolved from a rule's name.
type store struct {
	name   string
	b      Backend
	shared bool
}

// store returns the store of name (empty: the default store).
func (e *Engine) store(name string) (store, error) {
	if name == "" {
		name = e.o.defStore
	}
	b := e.o.backends[name]
	if b == nil {
		return store{name: name}, fmt.Errorf("%w: the rule is kept in store %q, which the engine was not given (it has %s; see Config.Backends)", ErrNoStore, name, e.storeNames())
	}
	return store{name: name, b: b, shared: b.Shared()}, nil
}

// storeNames lists the engine's stores for errors.
func (e *Engine) storeNames() string {
	names := sortedKeys(e.o.backends)
	if len(names) == 0 {
		return "none"
	}
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
