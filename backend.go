package admit

import (
	"context"
	"time"
)

// This file holds the contract every backend meets: the in-memory packages
// (keyed, quota, concurrency), redisstore, and any later store. Everything
// above the backends (compose, policy, server, the middleware) knows them
// only through these interfaces.

// Request is one question to a keyed limiter: may N events happen for Key?
// The zero values of its other fields ask the limiter's own defaults, so
// Request{Key: k, N: 1} is the common case.
type Request struct {
	// Key names what is limited (a client, a tenant, a route). Any bytes
	// are allowed, the empty string included; each backend documents how
	// long a key may be.
	Key string

	// N is the number of events (the cost). 0 is a peek: always allowed,
	// it consumes nothing and reports the key's state. A negative N is
	// refused, as is an N above the limit's burst (RetryAfter is then
	// InfDuration).
	N int64

	// Limit, unless it is the zero Limit, replaces the limiter's own limit
	// for this request, so that one limiter serves any number of limit
	// shapes (tiers). For a rate limiter it is the whole Limit (Burst 0
	// defaults to Rate); for a quota only Rate counts, the events allowed
	// per period; for concurrency slots only Rate counts, the slots. The
	// zero Limit (every field zero) asks for the limiter's own limit, so a
	// rate limit that denies everything must say so with a Period: Rate 0
	// per second, as ParseLimit("0/s") gives. (A quota or slots of Rate 0
	// is invalid input, an error, whatever the Period.)
	Limit Limit

	// At, when not zero, is the instant of the request; the zero Time means
	// now by the limiter's clock (the store's clock for a shared store).
	// Explicit instants make tests exact.
	At time.Time

	// MaxDelay is how long the caller will wait for the request's slot:
	// the delay mode of nginx's limit_req (burst= and delay=). 0, the
	// default, asks for an answer now: a request that does not fit is
	// denied. A request that does not fit now but would within MaxDelay is
	// admitted with Decision.Delay, the wait for its slot: the limiter
	// moves the key's state ahead at once, so the slot is held (as
	// GCRA.ReserveN does for a single key), and the caller must wait Delay
	// before acting (Wait does). A request that would wait longer is
	// denied as without MaxDelay, holding nothing. The limiter never
	// sleeps. Only limiters whose state is a time line can hold a slot
	// ahead: the keyed and Redis limiters of AlgGCRA, AlgTokenBucket and
	// AlgLeakyBucket; they refuse MaxDelay with the window algorithms, and
	// a negative MaxDelay, with an error wrapping ErrInvalidDelay. Other
	// limiters of this module (quotas, concurrency slots, prefetch,
	// adaptive) ignore it. A MaxDelay above 36 years counts as 36 years.
	MaxDelay time.Duration
}

// KeyedLimiter decides requests for many keys, each limited on its own: a
// rate limiter (keyed.Limiter, redisstore.Limiter) or a quota (quota.Quota,
// redisstore.Quota). A denial is a Decision with Allowed false; an error
// means the limiter or the context failed (and then the Decision says
// nothing). Implementations must be safe for concurrent use.
type KeyedLimiter interface {
	Allow(ctx context.Context, r Request) (Decision, error)
}

// Refunder is implemented by keyed limiters that can give back events they
// admitted: Refund undoes an admission of r.N events for r.Key as far as
// the limit allows (a GCRA's theoretical arrival time moves back, a bucket
// regains tokens up to its burst, a window's count goes down; nothing goes
// past a full state). r.Limit and r.At must be those of the admission.
type Refunder interface {
	Refund(ctx context.Context, r Request) error
}

// PartialAllower is implemented by keyed rate limiters that can admit part
// of a request, as batch consumers and prefetching need: AllowAtMost admits
// as many of r.N events as fit at r.At, from 0 to r.N, consumes them and
// returns how many. Nothing is refused for being above the burst: at most
// the burst fits. The Decision describes the key after the grant: Allowed
// is true when at least one event was granted (or r.N is 0, a peek),
// Remaining is what still fits, RetryAfter is 0 when all r.N were granted
// and otherwise how long until one more event would fit, and ResetAfter is
// as for Allow. Errors are those of Allow, and then nothing is granted.
type PartialAllower interface {
	AllowAtMost(ctx context.Context, r Request) (granted int64, d Decision, err error)
}

// Resetter is implemented by limiters that can forget a key, so that it
// starts full again (an operator unblocking a client). Resetting a key the
// limiter does not hold is not an error.
type Resetter interface {
	Reset(ctx context.Context, key string) error
}

// HealthReporter is implemented by limiters that depend on something that
// can fail, such as a store over the network. Healthy reports whether the
// last calls succeeded; it must be cheap, since it is asked on hot paths
// (compose.Guard skips an unhealthy primary under a breaker).
type HealthReporter interface {
	Healthy() bool
}

// Cacher is implemented by limiters that can answer some requests without
// their store: Cached returns the decision for r and true when it is known
// locally (a key denied until a later instant stays denied until then), or
// false when only the store can tell. It must not block.
type Cacher interface {
	Cached(r Request) (Decision, bool)
}

// Slots is a concurrency limit seen as a layer: TryAcquire holds r.N slots
// for r.Key if they are free, without waiting, and the Releaser gives them
// back. r.At is not used (slots are held from now); r.Limit.Rate, if
// r.Limit is not zero, is the slots per key instead of the limit's own. A
// request of more slots than the limit can ever grant is a refusal
// (RetryAfter InfDuration), not an error, as a rate limiter refuses more
// than its burst. A denied or failed TryAcquire holds nothing and may return a nil
// Releaser, as may a request of N = 0. concurrency.Limiter and
// redisstore.ConcurrencyLimiter give one with their Slots method.
type Slots interface {
	TryAcquire(ctx context.Context, r Request) (Releaser, Decision, error)
}

// Releaser gives back what a Slots layer granted. Release must be safe to
// call more than once; only the first call gives anything back.
type Releaser interface {
	Release()
}
