package compose

import (
	"context"
	"iter"
	"time"

	"github.com/admit-go/admit"
)

// Renewer is a admit.Releaser whose grant expires by itself unless renewed, such
// as the Lease behind a slot of redisstore.ConcurrencyLimiter.Slots: a
// holder that dies cannot keep the slots beyond the grant's lease. Renew
// sets the grant to expire ttl from now (sooner than before, if so) and
// reports whether it still held what it was granted: false once it has
// expired or been released (too late: its slots may have gone to another
// request). The error reports that the store could not be told; the grant
// then keeps its old expiry.
type Renewer interface {
	admit.Releaser
	Renew(ctx context.Context, ttl time.Duration) (bool, error)
}

// Renew sets every grant of h that expires by itself (a Renewer) to expire
// ttl from now, and reports whether all of them still held what they were
// granted. It stops at the first error, or at the first grant that no
// longer holds anything: the caller should then release h, since the
// request no longer holds all it was admitted with. Grants that do not
// expire (a concurrency.Limiter.Slots permit, a Learner's grant) are left alone. Renew of
// a Held without Renewers does nothing and reports true.
func (h *Held) Renew(ctx context.Context, ttl time.Duration) (bool, error) {
	for i := 0; i < h.n; i++ {
		r, ok := (*h.at(i)).(Renewer)
		if !ok {
			continue
		}
		if held, err := r.Renew(ctx, ttl); err != nil || !held {
			return false, err
		}
	}
	return true, nil
}

// Grants yields the grants h holds, oldest first: for a holder that hands
// them on (to another process, say) rather than releasing them through h.
// h must not change while the sequence runs.
func (h *Held) Grants() iter.Seq[admit.Releaser] {
	return func(yield func(admit.Releaser) bool) {
		for i := 0; i < h.n; i++ {
			if !yield(*h.at(i)) {
				return
			}
		}
	}
}
