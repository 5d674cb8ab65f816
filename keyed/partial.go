package keyed

import (
	"context"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/limits"
)

// AllowAtMost admits as many of r.N events as fit for r.Key at r.At (the
// limiter's clock when zero) under r.Limit (the limiter's own when zero),
// from 0 to r.N, consumes them and returns how many (admit.PartialAllower).
// More than the burst is never refused: at most the burst fits. The
// Decision is the key's after the grant: Allowed when anything was granted
// (or r.N is 0, a peek), Remaining what still fits, and RetryAfter, when
// fewer than r.N were granted, how long until one more event would fit.
//
// The grant is the largest that fits when it is made: AllowAtMost reads
// what fits and then admits it, and reads again if a concurrent request
// took some of it in between. (A concurrent Refund in between can make it
// grant fewer than would fit.) Errors are those of Allow, and then nothing
// is granted.
func (lim *Limiter) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	c := lim.own
	if r.Limit != (admit.Limit{}) {
		if c = lim.limits.Get(lim.alg, r.Limit); c.Err != nil {
			return 0, c.Refusal(lim.name), c.Err
		}
	}
	now := lim.at(r.At)
	if r.N <= 0 {
		d, err := lim.decide(now, r.Key, c, r.N)
		return 0, d, err
	}
	return lim.grantAtMost(now, r.Key, c, r.N)
}

// grantAtMost is AllowAtMost of n > 0 events at now under c.
func (lim *Limiter) grantAtMost(now int64, key string, c *limits.Compiled, n int64) (int64, admit.Decision, error) {
	var granted int64
	for {
		peek, err := lim.decide(now, key, c, 0)
		if err != nil {
			return granted, peek, err
		}
		// Ask for what fits, or for one event when nothing does, so that
		// a denial reports how long until one more would fit.
		k := max(min(n-granted, peek.Remaining), 1)
		d, err := lim.decide(now, key, c, k)
		if err != nil {
			return granted, d, err
		}
		if d.Allowed {
			granted += k
			if granted < n {
				continue // what a refund freed meanwhile, or the wait for one more
			}
			return granted, d, nil
		}
		if k == 1 {
			d.Allowed = granted > 0
			return granted, d, nil
		}
		// Another request took part of what fitted: read again.
	}
}
