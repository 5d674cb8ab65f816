// Package leases carries what admit serve's lease table (package server)
// needs of the stores' concurrency limits beyond the public contract: a
// lease for the slots of one check (WithTTL, honoured by redisstore's
// Slots), so that a request's slots expire with the lease that holds
// them.
package leases

import (
	"context"
	"time"
)

type ttlKey struct{}

// WithTTL returns a copy of ctx under which the Slots layers whose grants
// expire by themselves (compose.Renewers, such as those of
// redisstore.ConcurrencyLimiter.Slots) grant for ttl instead of their own
// lease: for a holder that keeps a request's compose.Held under a lease of
// its own (the lease table of admit serve), so that both expire together.
// A ttl of 0 or less leaves the layers' own leases.
func WithTTL(ctx context.Context, ttl time.Duration) context.Context {
	return context.WithValue(ctx, ttlKey{}, ttl)
}

// TTL returns the lease set on ctx by WithTTL, and false if none (or one
// of 0 or less) is set. Slots layers whose grants expire by themselves
// call it when they grant.
func TTL(ctx context.Context) (time.Duration, bool) {
	ttl, ok := ctx.Value(ttlKey{}).(time.Duration)
	return ttl, ok && ttl > 0
}
