package policy

// Adapters from the root's contract (admit.KeyedLimiter, admit.Slots),
// which backends implement, to compose's layers of today (key, n). They go
// away once compose takes the root's contract.

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// keyedLayer is an admit.KeyedLimiter as a compose.Limiter and Refunder,
// with its optional capabilities (a compose.Guard and compose.ResetKey
// find them by their methods).
type keyedLayer struct {
	l admit.KeyedLimiter
	r admit.Refunder // l, if a Refunder
}

// layerOf adapts l, and returns it as a compose.Refunder too if it is one.
func layerOf(l admit.KeyedLimiter) (*keyedLayer, compose.Refunder) {
	k := &keyedLayer{l: l}
	k.r, _ = l.(admit.Refunder)
	if k.r == nil {
		return k, nil
	}
	return k, k
}

func (k *keyedLayer) Allow(ctx context.Context, key string, n int64) (admit.Decision, error) {
	return k.l.Allow(ctx, admit.Request{Key: key, N: n})
}

func (k *keyedLayer) Refund(ctx context.Context, key string, n int64) error {
	if k.r == nil {
		return fmt.Errorf("%w: %T", compose.ErrNotRefunder, k.l)
	}
	return k.r.Refund(ctx, admit.Request{Key: key, N: n})
}

func (k *keyedLayer) Reset(ctx context.Context, key string) error {
	if r, ok := k.l.(admit.Resetter); ok {
		return r.Reset(ctx, key)
	}
	return fmt.Errorf("%w: %T", compose.ErrNotResetter, k.l)
}

func (k *keyedLayer) Healthy() bool {
	if h, ok := k.l.(admit.HealthReporter); ok {
		return h.Healthy()
	}
	return true
}

func (k *keyedLayer) Cached(key string, n int64) (admit.Decision, bool) {
	if c, ok := k.l.(admit.Cacher); ok {
		return c.Cached(admit.Request{Key: key, N: n})
	}
	return admit.Decision{}, false
}

// slotsLayer is an admit.Slots as a compose.Slots. The Releasers are the
// backend's own (a Held asks them for more, such as redisstore's leases).
type slotsLayer struct{ s admit.Slots }

func (s slotsLayer) TryAcquire(ctx context.Context, key string, n int64) (compose.Releaser, admit.Decision, error) {
	rel, d, err := s.s.TryAcquire(ctx, admit.Request{Key: key, N: n})
	if rel == nil {
		return nil, d, err
	}
	return rel, d, err
}
