package compose

import (
	"context"
	"errors"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/concurrency"
)

// LocalSlots returns l as a concurrency layer of a chain (the Slots field
// of a Layer): its TryAcquire is l.TryAcquire, which never waits, except
// that a request of more slots than l's max is a refusal (RetryAfter
// admit.InfDuration) rather than an error, as a rate layer refuses more
// than its burst. The slots are held by a concurrency.Permit until the
// Held they were recorded in is released, or given back at once when a
// later layer refuses the request. A grant allocates the Releaser (24
// bytes). LocalSlots of a nil l is nil, which All refuses.
//
// For the Redis version, see redisstore.ConcurrencyLimiter.Slots.
func LocalSlots(l *concurrency.Limiter) Slots {
	if l == nil {
		return nil
	}
	return localSlots{l}
}

type localSlots struct{ l *concurrency.Limiter }

func (s localSlots) TryAcquire(ctx context.Context, key string, n int64) (Releaser, admit.Decision, error) {
	p, d, err := s.l.TryAcquire(ctx, key, n)
	if errors.Is(err, admit.ErrExceedsBurst) {
		return nil, d, nil // never admitted: a refusal
	}
	if err != nil || p == (concurrency.Permit{}) {
		return nil, d, err
	}
	return permit(p), d, nil
}

// permit releases a concurrency.Permit, whose second Release does nothing.
type permit concurrency.Permit

func (p permit) Release() { concurrency.Permit(p).Release() }
