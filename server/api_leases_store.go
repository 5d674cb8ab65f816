package server

// Leases kept in Redis (WithLeaseStore), and the ids of leases.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/redisstore"
)

// releaseStored releases lease id from Redis (see WithLeaseStore) after
// the table did not hold it (err, ErrLeaseNotFound or ErrLeasesClosed).
func (l *leaseTable) releaseStored(ctx context.Context, id string, err error) error {
	if l.store == nil || !errors.Is(err, errLeaseNotFound) || !isLeaseID(id) {
		return err
	}
	taken, ok, serr := l.store.Take(ctx, id)
	if serr != nil {
		return fmt.Errorf("%w: %v", errLeaseStore, serr)
	}
	if !ok {
		return errLeaseNotFound
	}
	for _, p := range taken {
		// Within the store's timeout even if ctx ends: the record is gone,
		// so nobody else will release them.
		_, _ = p.Release(context.WithoutCancel(ctx))
	}
	return nil
}

// extendStored extends lease id in Redis (see WithLeaseStore): its record
// first, then its slots, so that a failure between the two leaves a record
// outliving its slots (harmless: the next release or extension finds them
// gone) rather than slots outliving the record that names them.
func (l *leaseTable) extendStored(ctx context.Context, id string, ttl time.Duration) (grant, error) {
	if l.store == nil || !isLeaseID(id) {
		return grant{}, errLeaseNotFound
	}
	held, ok, err := l.store.Load(ctx, id)
	if err == nil && ok {
		ok, err = l.store.Renew(ctx, id, ttl) // false: released meanwhile
	}
	if err != nil {
		return grant{}, fmt.Errorf("%w: %v", errLeaseStore, err)
	}
	if !ok {
		return grant{}, errLeaseNotFound
	}
	for _, p := range held {
		still, err := p.ExtendFor(ctx, ttl)
		if err != nil {
			return grant{}, fmt.Errorf("%w: %v", errLeaseStore, err)
		}
		if !still {
			// Its slots expired in Redis: the lease ends.
			_ = l.releaseStored(ctx, id, errLeaseNotFound)
			return grant{}, errLeaseNotFound
		}
	}
	return grant{ID: id, Expires: l.clock.Now().Add(ttl), TTL: ttl}, nil
}

// redisLeases returns the redisstore Leases of h's grants, and false if a
// grant is anything else or one learns from outcomes.
func redisLeases(h *compose.Held) ([]redisstore.Lease, bool) {
	if h.WantsOutcome() {
		return nil, false
	}
	out := make([]redisstore.Lease, 0, h.Len())
	for g := range h.Grants() {
		r, ok := g.(interface{ Lease() redisstore.Lease })
		if !ok {
			return nil, false
		}
		out = append(out, r.Lease())
	}
	return out, len(out) > 0
}

// isLeaseID reports whether id has the form of the ids newLeaseID makes.
func isLeaseID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// newLeaseID returns 128 random bits in hex.
func newLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}
