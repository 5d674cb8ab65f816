package redisstore

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/limits"
)

// Layer is one limit a request must pass in Store.AllowLayers: the key
// Key of Limiter, under Limit (nil: the limiter's own).
type Layer struct {
	Limiter *Limiter
	Key     string
	Limit   *admit.Limit
}

// AllowLayers decides r.N events against every layer at once, in one
// script call, at instant r.At (the zero time: on Redis's clock): the
// request is admitted, and its events consumed in every layer, only if
// every layer admits it; otherwise nothing is consumed anywhere. It returns the strictest decision (the denial with
// the longest RetryAfter, or, if all admit, the one with the fewest
// Remaining), whose Rule names its layer's limiter, and every layer's own
// decision in layers' order, appended to dst.
//
// All the layers' keys live in one Redis Cluster slot, chosen by r.Key, the
// tag (r.Limit is not used: each layer has its own): a layer's state is
// identified by its limiter, key and tag together, so use the same tag for
// a key wherever it is checked (for example the tenant's
// name, for a per-tenant layer and the per-user layers under it). The
// layers' keys are stored apart from those of Limiter.Allow, whose tag is
// the key itself. The deny cache is not used: a denied layer must not hide
// the others' states, nor is r.MaxDelay (a layer is admitted now or not
// at all). No layers, more than 256, or a layer whose Limiter
// is not one of s's is an error wrapping admit.ErrInvalidConfig, and
// nothing is sent.
func (s *Store) AllowLayers(ctx context.Context, r admit.Request, layers []Layer, dst []admit.Decision) (admit.Decision, []admit.Decision, error) {
	return s.allowLayers(ctx, instant(r.At), r.Key, r.N, layers, dst)
}

func (s *Store) allowLayers(ctx context.Context, now int64, tag string, n int64, layers []Layer, dst []admit.Decision) (admit.Decision, []admit.Decision, error) {
	if len(layers) == 0 || len(layers) > maxKeysPerCall {
		return admit.Decision{RetryAfter: admit.InfDuration}, dst, fmt.Errorf("%w: %d layers, want 1 to %d", errInvalidArgument, len(layers), maxKeysPerCall)
	}
	if len(tag) > s.o.maxKeyLen {
		return admit.Decision{RetryAfter: admit.InfDuration}, dst, fmt.Errorf("%w: redisstore: tag of %d bytes, the maximum is %d", admit.ErrKeyTooLong, len(tag), s.o.maxKeyLen)
	}
	cs := make([]*limits.Compiled, len(layers))
	h := hashOf(tag)
	p := &op{all: true, items: make([]item, 0, len(layers)), done: make(chan struct{}, 1)}
	for i, l := range layers {
		lim := l.Limiter
		if lim == nil || lim.s != s {
			return admit.Decision{RetryAfter: admit.InfDuration}, dst, fmt.Errorf("%w: layer %d: a limiter of this store is needed", errInvalidArgument, i)
		}
		c := lim.own
		if l.Limit != nil {
			c = lim.limits.Get(lim.alg, *l.Limit)
		}
		cs[i] = c
		err := c.Err
		if err == nil {
			err = lim.check(l.Key, n)
		}
		if err != nil {
			return c.Refusal(lim.name), dst, fmt.Errorf("redisstore: layer %d: %w", i, err)
		}
		p.items = append(p.items, item{key: lim.redisKey(h, l.Key), limit: lim.argsOf(c), n: n})
	}
	layers[0].Limiter.fill(p, now, h)
	if err := s.do(ctx, p); err != nil {
		return cs[0].Refusal(layers[0].Limiter.name), dst, err
	}
	best := -1
	var strictest admit.Decision
	for i, l := range layers {
		d := l.Limiter.observe(l.Key, n, cs[i].Decision(p.results[i], l.Limiter.name))
		dst = append(dst, d)
		if best < 0 || stricter(d, strictest) {
			best, strictest = i, d
		}
	}
	return strictest, dst, nil
}

// stricter reports whether a is a stricter decision than b: a denial
// before an admission, a longer RetryAfter, then fewer Remaining.
func stricter(a, b admit.Decision) bool {
	if a.Allowed != b.Allowed {
		return !a.Allowed
	}
	if a.RetryAfter != b.RetryAfter {
		return a.RetryAfter > b.RetryAfter
	}
	return a.Remaining < b.Remaining
}
