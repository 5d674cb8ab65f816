package redisstore

import (
	"context"

	"github.com/admit-go/admit"
)

// AllowAtMost admits as many of r.N events as fit for r.Key at instant
// r.At (now on Redis's clock when r.At is zero) under r.Limit (the
// limiter's own when zero), from 0 to r.N, consumes them and returns how
// many (admit.PartialAllower). More than the burst is never refused: at
// most the burst fits. The Decision is the key's after the grant: Allowed
// when anything was granted (or r.N is 0, a peek), Remaining what still
// fits, RetryAfter 0 when all r.N were granted and otherwise how long until
// one more event would fit, and ResetAfter as for Allow. It grants and
// decides exactly as keyed.Limiter.AllowAtMost does, field for field.
//
// The grant is atomic: one script call reads what fits, admits it and
// measures the wait for one more, so no other client's request comes in
// between, and the call is pipelined with the other calls in flight as
// Allow's are. A prefetching cache takes capacity from Redis in blocks
// this way; a batch consumer takes what it may process now.
//
// The deny cache (see the package documentation) answers a request of
// r.N > 0 for a key it holds denied: nothing is granted, and the Decision
// is the cached denial of one event. A grant of fewer than r.N leaves the
// key denied one more event until RetryAfter, which the cache remembers as
// it remembers a denial by Allow; a grant of all r.N forgets the key's
// denial, as an admission does.
//
// The error is Allow's, and then nothing is granted: bad input
// (admit.ErrInvalidCost, admit.ErrInvalidLimit, admit.ErrKeyTooLong), Redis
// failing (ErrStore), ctx ending first (its error; the events may then
// still have been taken in Redis, and are lost to every client until the
// key refills), or a closed store (admit.ErrClosed).
func (lim *Limiter) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	c, err := lim.compiled(r.Limit)
	if err != nil {
		return 0, c.Refusal(lim.name), err
	}
	return lim.decide(ctx, instant(r.At), r.Key, c, r.N, true, 0)
}
