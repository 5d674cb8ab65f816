package stores

// Adapters from the limiters' methods of today (key, n, with At / Limit /
// LimitAt variants) to the root's contract (one admit.Request). They go
// away once keyed, quota and redisstore implement the contract themselves.

import (
	"context"
	"time"

	"github.com/admit-go/admit"
)

// RateMethods are the methods of keyed.Limiter and redisstore.Limiter.
type RateMethods interface {
	Allow(ctx context.Context, key string, n int64) (admit.Decision, error)
	AllowAt(ctx context.Context, now time.Time, key string, n int64) (admit.Decision, error)
	AllowLimit(ctx context.Context, key string, l admit.Limit, n int64) (admit.Decision, error)
	AllowLimitAt(ctx context.Context, now time.Time, key string, l admit.Limit, n int64) (admit.Decision, error)
	Refund(ctx context.Context, key string, n int64) error
	RefundAt(ctx context.Context, now time.Time, key string, n int64) error
	RefundLimit(ctx context.Context, key string, l admit.Limit, n int64) error
	RefundLimitAt(ctx context.Context, now time.Time, key string, l admit.Limit, n int64) error
}

// QuotaMethods are the methods of quota.Quota and redisstore.Quota.
type QuotaMethods interface {
	Allow(ctx context.Context, key string, n int64) (admit.Decision, error)
	AllowAt(ctx context.Context, now time.Time, key string, n int64) (admit.Decision, error)
	AllowLimit(ctx context.Context, key string, limit, n int64) (admit.Decision, error)
	AllowLimitAt(ctx context.Context, now time.Time, key string, limit, n int64) (admit.Decision, error)
	Refund(ctx context.Context, key string, n int64) error
	RefundAt(ctx context.Context, now time.Time, key string, n int64) error
}

// Limiter is an adapted limiter: an admit.KeyedLimiter, Refunder,
// Resetter, HealthReporter and Cacher (the last three as far as the
// limiter is).
type Limiter struct {
	allow  func(ctx context.Context, r admit.Request) (admit.Decision, error)
	refund func(ctx context.Context, r admit.Request) error
	inner  any
	// Clock, if not nil, is the clock of the requests without an At.
	Clock admit.Clock
}

// AdaptRate adapts a rate limiter.
func AdaptRate(l RateMethods) *Limiter {
	return &Limiter{
		inner: l,
		allow: func(ctx context.Context, r admit.Request) (admit.Decision, error) {
			switch {
			case r.Limit == (admit.Limit{}) && r.At.IsZero():
				return l.Allow(ctx, r.Key, r.N)
			case r.Limit == (admit.Limit{}):
				return l.AllowAt(ctx, r.At, r.Key, r.N)
			case r.At.IsZero():
				return l.AllowLimit(ctx, r.Key, r.Limit, r.N)
			}
			return l.AllowLimitAt(ctx, r.At, r.Key, r.Limit, r.N)
		},
		refund: func(ctx context.Context, r admit.Request) error {
			switch {
			case r.Limit == (admit.Limit{}) && r.At.IsZero():
				return l.Refund(ctx, r.Key, r.N)
			case r.Limit == (admit.Limit{}):
				return l.RefundAt(ctx, r.At, r.Key, r.N)
			case r.At.IsZero():
				return l.RefundLimit(ctx, r.Key, r.Limit, r.N)
			}
			return l.RefundLimitAt(ctx, r.At, r.Key, r.Limit, r.N)
		},
	}
}

// AdaptQuota adapts a quota. A refund's Limit is ignored (a quota's count
// does not depend on it).
func AdaptQuota(q QuotaMethods) *Limiter {
	return &Limiter{
		inner: q,
		allow: func(ctx context.Context, r admit.Request) (admit.Decision, error) {
			switch {
			case r.Limit == (admit.Limit{}) && r.At.IsZero():
				return q.Allow(ctx, r.Key, r.N)
			case r.Limit == (admit.Limit{}):
				return q.AllowAt(ctx, r.At, r.Key, r.N)
			case r.At.IsZero():
				return q.AllowLimit(ctx, r.Key, r.Limit.Rate, r.N)
			}
			return q.AllowLimitAt(ctx, r.At, r.Key, r.Limit.Rate, r.N)
		},
		refund: func(ctx context.Context, r admit.Request) error {
			if r.At.IsZero() {
				return q.Refund(ctx, r.Key, r.N)
			}
			return q.RefundAt(ctx, r.At, r.Key, r.N)
		},
	}
}

func (l *Limiter) at(r admit.Request) admit.Request {
	if l.Clock != nil && r.At.IsZero() {
		r.At = l.Clock.Now()
	}
	return r
}

// Allow decides r.
func (l *Limiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	return l.allow(ctx, l.at(r))
}

// Refund gives back r.N events of r.Key.
func (l *Limiter) Refund(ctx context.Context, r admit.Request) error {
	return l.refund(ctx, l.at(r))
}

// Reset forgets key.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	switch r := l.inner.(type) {
	case admit.Resetter:
		return r.Reset(ctx, key)
	case interface{ Reset(string) bool }:
		r.Reset(key)
	}
	return nil
}

// Healthy reports the limiter's health (true if it has none to report).
func (l *Limiter) Healthy() bool {
	if h, ok := l.inner.(admit.HealthReporter); ok {
		return h.Healthy()
	}
	return true
}

// Cached answers r from the limiter's cache, if it has one.
func (l *Limiter) Cached(r admit.Request) (admit.Decision, bool) {
	if c, ok := l.inner.(interface {
		Cached(key string, n int64) (admit.Decision, bool)
	}); ok {
		return c.Cached(r.Key, r.N)
	}
	return admit.Decision{}, false
}

// KeySlots are the slots of today's compose.Slots (key, n).
type KeySlots[R interface{ Release() }] interface {
	TryAcquire(ctx context.Context, key string, n int64) (R, admit.Decision, error)
}

// AdaptSlots adapts slots of the key-and-cost form to admit.Slots; the
// Releasers are the slots' own.
func AdaptSlots[R interface{ Release() }](s KeySlots[R]) admit.Slots { return keySlots[R]{s} }

type keySlots[R interface{ Release() }] struct{ s KeySlots[R] }

func (k keySlots[R]) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	rel, d, err := k.s.TryAcquire(ctx, r.Key, r.N)
	var x any = rel
	if x == nil {
		return nil, d, err
	}
	return rel, d, err
}
