package concurrency

import (
	"context"
	"errors"

	"github.com/admit-go/admit"
)

// Slots returns l as admit.Slots, a concurrency layer of a compose chain
// (the Slots field of a compose.Layer): its TryAcquire is l.TryAcquire,
// which never waits, except that a request of more slots than the max is a
// refusal (RetryAfter admit.InfDuration) rather than an error, as a rate
// layer refuses more than its burst. The slots are held by a Permit until
// the Releaser is released (by the compose.Held the chain recorded it in,
// or at once when a later layer refuses the request). A grant allocates
// the Releaser (24 bytes). Slots of a nil l is nil, which compose.All
// refuses.
//
// For the Redis version, see redisstore.ConcurrencyLimiter.Slots.
func (l *Limiter) Slots() admit.Slots {
	if l == nil {
		return nil
	}
	return slots{l}
}

// slots is a Limiter seen as admit.Slots.
type slots struct{ l *Limiter }

func (s slots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	p, d, err := s.l.TryAcquire(ctx, r)
	if errors.Is(err, admit.ErrExceedsBurst) {
		return nil, d, nil // never admitted: a refusal
	}
	if err != nil || p == (Permit{}) {
		return nil, d, err
	}
	return permit(p), d, nil
}

// permit releases a Permit, whose second Release does nothing.
type permit Permit

func (p permit) Release() { Permit(p).Release() }
