package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/leases"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/redisstore"
)

// Defaults of the lease table's options.
const (
	// defaultMaxLeases is the default cap on the leases a table holds.
	defaultMaxLeases = 65536
	// defaultLeaseTTL is the default lifetime of a lease (see
	// WithLeaseTTL): that of the leases redisstore grants by default, so
	// that both expire together.
	defaultLeaseTTL = 30 * time.Second
	// defaultMaxLeaseTTL is the default longest lifetime a caller may ask
	// for.
	defaultMaxLeaseTTL = time.Hour

	// maxLeaseTTL bounds WithLeaseTTL's max: redisstore's longest lease.
	maxLeaseTTL = 365 * 24 * time.Hour
)

// grant is a grant of the lease table: the slots of the concurrency caps
// a request holds, until it is released or expires.
type grant struct {
	// ID names the lease: 128 random bits (crypto/rand) in hex, so that
	// a client cannot guess another's.
	ID string
	// Expires is the instant the lease expires unless extended, on the
	// table's clock; TTL is its lifetime from the last acquire or extend.
	Expires time.Time
	TTL     time.Duration
}

// leaseTable is a lease table: it holds the compose.Held of admitted requests
// (the slots their concurrency caps granted) under unguessable ids until
// the client releases them (Release, Finish) or their lease expires,
// whichever comes first, so that a client that crashes cannot keep its
// slots beyond its lease. It serves /v1/acquire, /v1/release and
// /v1/extend, and may be shared by several APIs (see WithLeases), so that
// a lease taken through one can be released through another.
//
// Expired leases are given back by a goroutine that sleeps until the
// earliest expiry on the table's clock (WithLeaseClock), and also by
// every call that looks at the table, so that a decision never waits for
// that goroutine to wake. An Acquire that comes while the goroutine is
// giving back expired leases waits for it (within its context), so that
// a lease expired by the acquire's instant never holds a slot against it.
// The table holds at most WithMaxLeases leases: beyond,
// Acquire fails with ErrTooManyLeases before checking anything.
//
// The slots of a concurrency cap kept in Redis expire in Redis with the
// lease: Acquire takes them for the lease's TTL (leases.WithTTL)
// rather than the rule's own lease, and Extend renews them in Redis before
// it moves the lease's expiry, so that a lease never says it holds slots
// that Redis has given to another request. Releasing, by the client or by
// expiry, gives them back in Redis at once. With WithLeaseStore, a lease
// holding only such slots is kept in Redis rather than in the table, so
// that every table on that Redis can release or extend it.
//
// leaseTable is safe for concurrent use. Create one with NewLeases and Close
// it when done: Close stops its goroutine and gives back every lease it
// holds.
type leaseTable struct {
	store  leases.Records[redisstore.Lease] // withLeaseStore, or nil
	clock  admit.Clock
	max    int
	defTTL time.Duration
	maxTTL time.Duration

	mu       sync.Mutex
	byID     map[string]*lease
	queue    leases.Queue[*lease] // by expiry
	reserved int                  // acquires in progress, counted against max
	closed   bool
	// releasing holds the expired leases taken off the table and not yet
	// given back, so that an acquire can wait for the slots they free.
	releasing map[*expiry]struct{}

	wake      chan struct{} // the earliest expiry moved earlier
	done      chan struct{} // closed by Close
	stopped   chan struct{} // closed when the goroutine ends
	closeOnce sync.Once

	reaped  func(n int) // tests: told after the goroutine reaps
	reaping func()      // tests: called when the goroutine has taken expired leases off the table, before it gives them back
}

type lease struct {
	id  string
	exp leases.Expiry // guarded by Leases.mu, as is ttl
	ttl time.Duration

	mu   sync.Mutex // guards held and gone: a renewal against a release
	held *compose.Held
	gone bool // given back
}

// Expiry returns when ls expires (for the table's leases.Queue).
func (ls *lease) Expiry() *leases.Expiry { return &ls.exp }

// release gives back what ls holds, once, reporting the outcome to the
// grants that learn from one when finish is set.
func (ls *lease) release(finish, failed bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.gone {
		return
	}
	ls.gone = true
	if finish {
		ls.held.Finish(failed)
	} else {
		ls.held.Release()
	}
}

// leaseOption configures a lease table (see NewLeases). The zero set of
// options gives the defaults documented on each option.
type leaseOption interface {
	apply(*leaseOptions)
}

type leaseOptions struct {
	store   leases.Records[redisstore.Lease]
	clock   admit.Clock
	max     int
	defTTL  time.Duration
	maxTTL  time.Duration
	reaped  func(n int)
	reaping func()
	err     error
}

type leaseOptionFunc func(*leaseOptions)

func (f leaseOptionFunc) apply(o *leaseOptions) { f(o) }

// withLeaseClock sets the clock leases expire on. The default is
// admit.SystemClock; nil leaves the default.
func withLeaseClock(c admit.Clock) leaseOption {
	return leaseOptionFunc(func(o *leaseOptions) {
		if c != nil {
			o.clock = c
		}
	})
}

// withMaxLeases caps the leases the table holds. The default is
// DefaultMaxLeases; n must be positive.
func withMaxLeases(n int) leaseOption {
	return leaseOptionFunc(func(o *leaseOptions) {
		if n <= 0 {
			o.err = fmt.Errorf("%w: WithMaxLeases(%d): want a positive cap", errInvalidConfig, n)
			return
		}
		o.max = n
	})
}

// withLeaseStore keeps in Redis, in store's records (see
// inredis.LeaseRecords), the leases whose every
// grant is a slot of a concurrency cap kept in store (a rule with
// store: redis), so that any table on the same Redis can release or extend
// them: behind a load balancer, a client may send /v1/release and
// /v1/extend to any instance, and a lease outlives the restart of the
// instance that granted it. Such a lease is a record in Redis expiring
// with its slots (leases.Records.Save), not an entry of the table:
// it does not count against WithMaxLeases nor in Len, and Close leaves it.
// A lease holding anything else (a cap kept in memory, an adaptive cap
// that learns from outcomes) stays in the table that granted it, as does
// one whose record could not be written. A nil store keeps every lease in
// the table (the default).
func withLeaseStore(store leases.Records[redisstore.Lease]) leaseOption {
	return leaseOptionFunc(func(o *leaseOptions) { o.store = store })
}

// withLeaseTTL sets the lifetime of a lease whose caller asks for none
// (def) and the longest one a caller may ask for (max). The defaults are
// DefaultLeaseTTL and DefaultMaxLeaseTTL; both must be positive, def at
// most max, max at most a year (the longest lease Redis keeps slots for).
func withLeaseTTL(def, max time.Duration) leaseOption {
	return leaseOptionFunc(func(o *leaseOptions) {
		if def <= 0 || max < def || max > maxLeaseTTL {
			o.err = fmt.Errorf("%w: WithLeaseTTL(%v, %v): want 0 < default <= max <= 8760h", errInvalidConfig, def, max)
			return
		}
		o.defTTL, o.maxTTL = def, max
	})
}

// newLeases returns an empty lease table and starts its goroutine. The
// error wraps admit.ErrInvalidConfig for an invalid option.
func newLeases(opts ...leaseOption) (*leaseTable, error) {
	o := leaseOptions{clock: admit.SystemClock, max: defaultMaxLeases, defTTL: defaultLeaseTTL, maxTTL: defaultMaxLeaseTTL}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	l := &leaseTable{
		store: o.store,
		clock: o.clock, max: o.max, defTTL: o.defTTL, maxTTL: o.maxTTL,
		reaped:    o.reaped,
		reaping:   o.reaping,
		byID:      map[string]*lease{},
		releasing: map[*expiry]struct{}{},
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	go l.run()
	return l, nil
}

// TTL returns the lifetime a lease gets for a requested ttl: the default
// for 0. The error wraps ErrInvalidTTL for a negative ttl or one above the
// maximum.
func (l *leaseTable) TTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return l.defTTL, nil
	case ttl < 0:
		return 0, fmt.Errorf("%w: %v is negative", errInvalidTTL, ttl)
	case ttl > l.maxTTL:
		return 0, fmt.Errorf("%w: %v, the maximum is %v", errInvalidTTL, ttl, l.maxTTL)
	}
	return ttl, nil
}

// MaxTTL returns the longest lifetime a caller may ask for.
func (l *leaseTable) MaxTTL() time.Duration { return l.maxTTL }

// Acquire checks req with e, as Engine.Check does, and keeps the slots the
// check granted under a new lease of ttl (0 for the default). out receives
// the decision and statuses.
//
// A refused request gets no lease (the zero Lease) and holds nothing, as
// does an admitted request that holds nothing (no concurrency cap applied
// to it): both return the zero Lease and a nil error, and out says which.
// The error is ErrInvalidTTL, ErrTooManyLeases or ErrLeasesClosed, checked
// before the request is, or the error of Engine.Check (the request is then
// refused and holds nothing).
func (l *leaseTable) Acquire(ctx context.Context, e *policy.Engine, req *policy.Request, ttl time.Duration, out *policy.Result) (grant, error) {
	ttl, err := l.TTL(ttl)
	if err != nil {
		return grant{}, err
	}
	if err := l.reserve(ctx); err != nil {
		return grant{}, err
	}
	h := new(compose.Held)
	err = e.Check(leases.WithTTL(ctx, ttl), req, h, out)
	if err != nil || !out.Decision.Allowed || h.Len() == 0 {
		l.unreserve()
		h.Release() // empty, unless a check's error left grants behind
		return grant{}, err
	}
	id := newLeaseID()
	if l.store != nil {
		if grants, ok := redisLeases(h); ok && l.store.Save(ctx, id, ttl, grants...) == nil {
			// The record holds the slots now; h is dropped unreleased.
			l.unreserve()
			return grant{ID: id, Expires: l.clock.Now().Add(ttl), TTL: ttl}, nil
		}
	}
	ls := &lease{id: id, held: h, ttl: ttl}
	l.mu.Lock()
	l.reserved--
	if l.closed {
		l.mu.Unlock()
		h.Release()
		return grant{}, errLeasesClosed
	}
	ls.exp.At = l.clock.Now().Add(ttl)
	l.byID[ls.id] = ls
	first := l.queue.Push(ls)
	l.mu.Unlock()
	if first {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return grant{ID: ls.id, Expires: ls.exp.At, TTL: ttl}, nil
}

// reserve counts an acquire in progress against the cap, then waits
// (within ctx) until the leases that expired by now have given their
// slots back, whoever took them off the table, so that the acquire's check
// sees those slots free.
func (l *leaseTable) reserve(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errLeasesClosed
	}
	others := l.releasingLocked() // before own joins them
	own := l.expireLocked(l.clock.Now())
	if len(l.byID)+l.reserved >= l.max {
		n := len(l.byID)
		l.mu.Unlock()
		l.giveBack(own)
		return fmt.Errorf("%w: %d leases held, the maximum is %d", errTooManyLeases, n, l.max)
	}
	l.reserved++
	l.mu.Unlock()
	l.giveBack(own)
	if err := waitReleased(ctx, others); err != nil {
		l.unreserve()
		return err
	}
	return nil
}

func (l *leaseTable) unreserve() {
	l.mu.Lock()
	l.reserved--
	l.mu.Unlock()
}

// take removes lease id from the table, after giving back the expired
// ones.
func (l *leaseTable) take(id string) (*lease, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errLeasesClosed
	}
	expired := l.expireLocked(l.clock.Now())
	ls := l.byID[id]
	if ls != nil {
		delete(l.byID, id)
		l.queue.Remove(ls)
	}
	l.mu.Unlock()
	l.giveBack(expired)
	if ls == nil {
		return nil, errLeaseNotFound
	}
	return ls, nil
}

// Release gives back the slots of lease id, reporting no outcome to the
// limits that learn from one (see compose.Held.Release): from the table,
// or else from Redis (see WithLeaseStore), within ctx. The error wraps
// ErrLeaseNotFound for a lease that was never issued, was released
// already, or expired; ErrLeaseStore when Redis did not answer (the lease
// is as it was); ErrLeasesClosed after Close.
func (l *leaseTable) Release(ctx context.Context, id string) error {
	ls, err := l.take(id)
	if err != nil {
		return l.releaseStored(ctx, id, err)
	}
	ls.release(false, false)
	return nil
}

// Finish gives back the slots of lease id and reports the request's
// outcome to the limits that learn from one (adaptive limits: see
// compose.Held.Finish): failed reports that it failed in a way that says
// what it protects is overloaded. The errors are Release's.
func (l *leaseTable) Finish(ctx context.Context, id string, failed bool) error {
	ls, err := l.take(id)
	if err != nil {
		// A lease kept in Redis has no grant that learns from outcomes.
		return l.releaseStored(ctx, id, err)
	}
	ls.release(true, failed)
	return nil
}

// Extend sets the expiry of lease id to ttl (0 for the default) from now.
// The slots it holds in Redis are renewed there first, for ttl, within ctx
// and the store's timeout: if Redis fails, the error wraps
// ErrLeaseStore and the lease keeps its old expiry; if Redis no
// longer holds them (their lease expired there), the lease is given back
// and the error wraps ErrLeaseNotFound. A lease holding nothing in Redis
// needs no call to it. The other errors wrap ErrInvalidTTL,
// ErrLeaseNotFound or ErrLeasesClosed.
func (l *leaseTable) Extend(ctx context.Context, id string, ttl time.Duration) (grant, error) {
	ttl, err := l.TTL(ttl)
	if err != nil {
		return grant{}, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return grant{}, errLeasesClosed
	}
	expired := l.expireLocked(l.clock.Now())
	ls := l.byID[id]
	l.mu.Unlock()
	l.giveBack(expired)
	if ls == nil {
		return l.extendStored(ctx, id, ttl)
	}

	ls.mu.Lock()
	held, err := !ls.gone, error(nil)
	if held {
		held, err = ls.held.Renew(ctx, ttl)
	}
	ls.mu.Unlock()
	switch {
	case err != nil:
		return grant{}, fmt.Errorf("%w: %v", errLeaseStore, err)
	case !held:
		// Released meanwhile, or its slots expired in Redis: the lease
		// holds less than it was granted, so it ends.
		if ls, err := l.take(id); err == nil {
			ls.release(false, false)
		}
		return grant{}, errLeaseNotFound
	}

	l.mu.Lock()
	if l.closed || l.byID[id] != ls {
		// Closed, released or expired while Redis was being told.
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return grant{}, errLeasesClosed
		}
		return grant{}, errLeaseNotFound
	}
	ls.ttl = ttl
	first := l.queue.Move(ls, l.clock.Now().Add(ttl))
	out := grant{ID: ls.id, Expires: ls.exp.At, TTL: ttl}
	l.mu.Unlock()
	if first {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return out, nil
}

// Len returns the number of leases held, after giving back the expired
// ones (waiting for those the table's goroutine is giving back).
func (l *leaseTable) Len() int {
	l.mu.Lock()
	others := l.releasingLocked() // before expired joins them
	expired := l.expireLocked(l.clock.Now())
	n := len(l.byID)
	l.mu.Unlock()
	l.giveBack(expired)
	_ = waitReleased(context.Background(), others) // cannot fail
	return n
}

// Close stops the table's goroutine and gives back the slots of every
// lease it holds; later calls fail with ErrLeasesClosed. Close is
// idempotent and returns nil.
func (l *leaseTable) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		all := make([]*lease, 0, len(l.byID))
		for _, ls := range l.byID {
			all = append(all, ls)
		}
		clear(l.byID)
		l.queue.Clear()
		l.mu.Unlock()
		close(l.done)
		<-l.stopped
		releaseLeases(all)
	})
	return nil
}
