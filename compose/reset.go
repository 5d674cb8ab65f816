package compose

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotResetter reports a Reset of a limiter that cannot forget a key's
// state (see ResetKey).
var ErrNotResetter = errors.New("compose: the limiter cannot reset a key")

// ResetKey makes lim, a limiter of any kind, forget key's state, so that
// the key starts full again (an operator unblocking a client): through
// lim's Reset(ctx, key) error (redisstore's Limiter and Quota, a Guard, a
// Shared) or Reset(key) bool (keyed.Limiter, quota.Quota). A limiter with
// neither is an error wrapping ErrNotResetter. Concurrency limits have no
// state to forget but their slots: they are not reset.
func ResetKey(ctx context.Context, lim any, key string) error {
	switch r := lim.(type) {
	case interface {
		Reset(context.Context, string) error
	}:
		return r.Reset(ctx, key)
	case interface{ Reset(string) bool }:
		r.Reset(key)
		return nil
	}
	return fmt.Errorf("%w: %T", ErrNotResetter, lim)
}

// Reset forgets key's state in the primary, within the Guard's timeout,
// and under Fallback in the local limiter too (see ResetKey), whatever the
// primary's health. The error joins the primary's and the local
// limiter's: with the store down, the local limiter is reset all the same
// and the error says the store was not.
func (g *Guard) Reset(ctx context.Context, key string) error {
	var lerr error
	if g.kind == fallback && g.local != nil {
		if lerr = ResetKey(ctx, g.local, key); errors.Is(lerr, ErrNotResetter) {
			lerr = nil // a local limiter without state to forget
		}
	}
	tctx, cancel := g.bound(ctx)
	err := ResetKey(tctx, g.primary, key)
	cancel()
	return errors.Join(err, lerr)
}

// Reset forgets key's state (see ResetKey).
func (s *Shared) Reset(_ context.Context, key string) error {
	s.lim.Reset(key)
	return nil
}
