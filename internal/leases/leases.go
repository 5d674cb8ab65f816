// Package leases carries what admit serve's lease table (package server)
// needs of the stores' concurrency limits beyond the public contract: a
// lease for the slots of one check (WithTTL, honoured by redisstore's
// Slots), so that a request's slots expire with the lease that holds
// them, and redisstore's lease records (Records), where the table keeps
// the leases that any instance on the same Redis may release or extend.
//
// Its types are named by the module only: the records are reached through
// a method of redisstore's Slots whose signature names them (Source), so
// they are no part of redisstore's public surface.
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

// Records keeps groups of leases of concurrency limits (L is
// redisstore.Lease) in a store under a name, so that any process on the
// same store can renew or release them: admit serve's lease table keeps
// there the leases whose every slot is kept in Redis, so that a client may
// release or extend its lease through any instance, and a lease outlives
// the restart of the instance that granted it. The Slots of a
// redisstore.ConcurrencyLimiter are a Source of their Store's Records.
type Records[L any] interface {
	// Save stores leases under name for ttl (rounded up to a
	// millisecond, 1 ms to a year), for Load and Take. It does not change
	// the leases themselves: renew them for ttl too so that both end
	// together. A name already taken, an empty name or one over 256
	// bytes, a zero lease, one of another store, more than 1024 leases or
	// none is an error, and nothing is written.
	Save(ctx context.Context, name string, ttl time.Duration, leases ...L) error
	// Load returns the leases saved under name, and false if there is no
	// such record (never saved, taken, or expired).
	Load(ctx context.Context, name string) ([]L, bool, error)
	// Take removes the record name and returns its leases, and false if
	// there is no such record: of several processes taking one record,
	// one gets it. It does not release the leases; the caller does.
	Take(ctx context.Context, name string) ([]L, bool, error)
	// Renew sets the record name to expire ttl from now, and reports
	// false if there is no such record. It does not renew the leases
	// themselves.
	Renew(ctx context.Context, name string, ttl time.Duration) (bool, error)
}

// Source gives the Records of the store of its leases: the admit.Slots of
// a redisstore.ConcurrencyLimiter are one (see internal/stores).
type Source[L any] interface {
	LeaseRecords() Records[L]
}
