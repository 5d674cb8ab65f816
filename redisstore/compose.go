package redisstore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/leases"
)

// The ConcurrencyLimiter is admit.Slots through Slots, whose grants are
// compose.Renewers.
var (
	_ admit.Slots      = slots{}
	_ compose.Renewer  = (*leaseReleaser)(nil)
	_ leases.Countable = slots{}
	_ leases.Countable = countedSlots{}
)

// Slots returns l as admit.Slots, a concurrency layer of a compose.All
// chain (the Slots field of a compose.Layer): its TryAcquire is
// l.TryAcquire, except that a request of more slots than the max is a
// refusal (RetryAfter admit.InfDuration) rather than an error, as a rate layer refuses more
// than its burst. The slots are held by a Lease until the compose.Held the
// chain recorded them in is released, or given back at once when a later
// layer refuses the request. Releasing is a call to Redis, bounded by the
// Store's timeout (Config.Timeout); if it fails, the slots come back when
// their lease expires (ConcurrencyConfig.Lease). The Releaser is a
// compose.Renewer whose Renew is Lease.ExtendFor, and has a method Lease()
// Lease, which returns the Lease it holds (for a holder that keeps it
// beyond the Held, to extend or release it itself). Slots of a nil l is
// nil, which compose.All refuses.
func (l *ConcurrencyLimiter) Slots() admit.Slots {
	if l == nil {
		return nil
	}
	return slots{l}
}

// slots is a ConcurrencyLimiter seen as admit.Slots.
type slots struct{ l *ConcurrencyLimiter }

func (s slots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	return s.acquire(ctx, r, nil)
}

// acquire is TryAcquire, counting the grant in c if c is not nil.
func (s slots) acquire(ctx context.Context, r admit.Request, c *leases.Counter) (admit.Releaser, admit.Decision, error) {
	key, n, max := r.Key, r.N, s.l.maxOf(r.Limit)
	ms, term := s.l.leaseMS, s.l.lease
	if ttl, ok := leases.TTL(ctx); ok {
		var err error
		if ms, err = leaseMillis(ttl); err != nil {
			return nil, s.l.refusal(max), err
		}
		term = (ttl + time.Millisecond - 1) / time.Millisecond * time.Millisecond
	}
	lease, d, err := s.l.tryFor(ctx, key, max, n, ms)
	s.l.observe(key, n, d, err)
	if errors.Is(err, admit.ErrExceedsBurst) {
		return nil, d, nil // never admitted: a refusal
	}
	if err != nil || !d.Allowed || lease.l == nil {
		return nil, d, err
	}
	if c != nil {
		c.Add(lease.id, n, term)
	}
	return &leaseReleaser{lease: lease}, d, nil
}

// CountHeld returns s, but for counting the slots its grants hold
// through this process, in the Store's leases.Tally, their leases running
// out on clock (see leases.Countable): admit serve's status page and
// metrics read them (SlotCounts). It sends nothing to Redis.
func (s slots) CountHeld(clock admit.Clock) admit.Slots {
	return countedSlots{s, s.l.s.tallyOf().Counter(clock)}
}

// countedSlots are slots whose grants are counted (CountHeld).
type countedSlots struct {
	slots
	c *leases.Counter
}

func (s countedSlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	return s.acquire(ctx, r, s.c)
}

// SlotCounts returns the slots held through this process, over every key
// (counted locally: see leases.Tally), and 0 callers waiting (the slots
// of Redis are never waited for in line).
func (s countedSlots) SlotCounts() (inFlight, waiting int64) { return s.c.Held(), 0 }

// leaseReleaser releases a Lease once, whoever calls Release and however
// often.
type leaseReleaser struct {
	lease Lease
	done  atomic.Bool
}

func (r *leaseReleaser) Release() {
	if !r.done.Swap(true) {
		_, _ = r.lease.Release(context.Background()) // within the Store's timeout
	}
}

// Lease returns the Lease r holds (see ConcurrencyLimiter.Slots).
func (r *leaseReleaser) Lease() Lease { return r.lease }

// Renew is Lease.ExtendFor, false once released.
func (r *leaseReleaser) Renew(ctx context.Context, ttl time.Duration) (bool, error) {
	if r.done.Load() {
		return false, nil
	}
	return r.lease.ExtendFor(ctx, ttl)
}
