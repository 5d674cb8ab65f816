package concurrency

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// Limiter limits the number of slots in flight: at most max at a time per
// key, each request taking n of them (its weight) until it releases them.
// A request is admitted iff
//
//	in-flight(key) + n <= max
//
// and no caller is already waiting for the key; admitting it adds n to the
// key's in-flight count until its Permit is released (or, with a
// Config.Lease, reclaimed). Keys are independent: one Limiter holds the limit of every
// key, and a key with nothing in flight and no caller waiting is forgotten
// at once, so memory follows what is in flight. The empty key is the one
// to use for a global limit (a Limiter used with the empty key only is one
// weighted semaphore of max slots); it lives apart from the other keys, is
// never forgotten, and does not count towards Config.MaxKeys.
//
// The max given to New is the default; a Request's Limit.Rate gives it per
// call, so that one Limiter serves several tiers (each call compares
// the key's in-flight count with its own max). A key still has one queue:
// a waiter under a lower limit blocks those behind it until the key's
// in-flight count leaves room under its own limit.
//
// TryAcquire decides at once. Acquire waits, if it must, in a FIFO queue
// per key, bounded by Config.MaxWaiters and Config.MaxWait and by its context.
// The queue is strict FIFO, as in golang.org/x/sync/semaphore: the first
// waiter is served as soon as its n slots are free, and blocks those
// behind it until then, so a large request is never overtaken (starved) by
// a stream of small ones; a request that arrives while callers wait for its
// key queues behind them (TryAcquire is denied), even if its n would fit.
//
// Decisions are admit.Decisions of Kind admit.KindConcurrency:
//
//   - Limit is {Rate: max, Burst: max, Period: 0}.
//   - Remaining is the number of slots a new request could take right now,
//     after this decision: max - in-flight, or 0 while callers wait for the
//     key (they come first).
//   - RetryAfter is 0 when the request is admitted, and admit.InfDuration
//     when it can never be (n > max). Otherwise capacity comes back when
//     holders release it, which the Limiter cannot foresee, so without
//     leases RetryAfter is 0, meaning unknown. With leases (Config.Lease) it
//     is the time until enough of the slots held now reach their lease
//     deadlines for this request to fit, had no one been waiting (or until
//     the earliest deadline, if the request is denied only because callers
//     wait): an upper bound on when those slots must come back, if
//     their holders do not release them sooner, which they usually do. It
//     does not count callers waiting ahead, which are served first.
//   - ResetAfter is, with leases, the time until the last lease held on the
//     key expires (by then every slot held now is back); 0 when no slot is
//     held, and without leases.
//
// A denial is not an error: the calls return an error only for invalid
// input (max <= 0, n < 0, n > max, a key that is too long, too many keys)
// and when the context ends while Acquire waits.
//
// A Limiter is safe for concurrent use. It starts no goroutine and needs no
// Close: expired leases are reclaimed by the calls themselves (see
// Config.Lease). The zero Limiter is not usable; create one with New.
type Limiter struct {
	max        int64
	name       string
	clock      admit.Clock
	sys        bool      // clock is admit.SystemClock
	base       time.Time // the origin of the time line, read at New
	observer   admit.Observer
	lease      int64 // ns; 0: none
	maxWaiters int
	maxWait    time.Duration
	maxKeys    int
	maxKeyLen  int
	seed       maphash.Seed

	keys      atomic.Int64  // keys with state, the empty key excepted; kept only with maxKeys or observer
	reclaimed atomic.Uint64 // leases reclaimed
	waits     atomic.Uint64 // callers of Acquire that waited and are done waiting
	waited    atomic.Int64  // the time they waited in all, ns

	// Reports to observer.Tracked.
	changes   atomic.Uint64 // keys added or forgotten
	tracked   atomic.Int64  // keys last reported
	trackedAt atomic.Uint64 // changes at the last report
	trackMu   sync.Mutex

	_      [64]byte // keeps the atomics above off the global shard's cache line
	global shard
	shards [numShards]shard
}

// numShards is the number of shards of the non-empty keys, a power of two.
const numShards = 32

// Tracked is reported when the number of keys has moved by an eighth (and
// by trackMinDiff at least) since the last report, or after trackEvery
// changes.
const (
	trackMinDiff = 16
	trackEvery   = 4096
)

// New returns a Limiter configured by cfg: of cfg.Max slots in flight per
// key. The error wraps admit.ErrInvalidConfig, and admit.ErrInvalidLimit
// if cfg.Max <= 0.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	clock := defaults.Clock(cfg.Options)
	l := &Limiter{
		max:        cfg.Max,
		name:       cfg.Name,
		clock:      clock,
		sys:        clock == admit.SystemClock,
		observer:   cfg.Observer,
		lease:      int64(cfg.Lease),
		maxWaiters: cfg.MaxWaiters,
		maxWait:    cfg.MaxWait,
		maxKeys:    cfg.MaxKeys,
		maxKeyLen:  cfg.MaxKeyLength,
		seed:       maphash.MakeSeed(),
	}
	// The fields' defaults, and their negative values, in the form the
	// Limiter reads: a negative maxWaiters and maxWait, no bound; 0, no
	// waiting; a negative maxKeyLen, no bound.
	switch {
	case cfg.MaxWaiters == 0:
		l.maxWaiters = -1
	case cfg.MaxWaiters < 0:
		l.maxWaiters = 0
	}
	switch {
	case cfg.MaxWait == 0:
		l.maxWait = -1
	case cfg.MaxWait < 0:
		l.maxWait = 0
	}
	if cfg.MaxKeyLength == 0 {
		l.maxKeyLen = defaultMaxKeyLength
	}
	l.base = l.clock.Now()
	l.global.init(l, true)
	for i := range l.shards {
		l.shards[i].init(l, false)
	}
	if l.observer != nil {
		l.observer.Tracked(l.name, 0)
	}
	return l, nil
}

// Max returns the limit given to New: the slots in flight per key for
// Acquire and TryAcquire.
func (l *Limiter) Max() int64 { return l.max }

// TryAcquire takes r.N slots of r.Key, if they are free and no caller
// waits for the key; it never waits. The limit is r.Limit.Rate slots in
// flight, or the Limiter's own max (Max) when r.Limit is zero, so that one
// Limiter serves several tiers; r.Limit's Period and Burst and r.At are
// not used (slots are held from now). If the request is admitted, the
// Permit holds the slots until its Release; otherwise the Permit is the
// zero Permit. r.N = 0 is always admitted and holds nothing.
//
// The error is non-nil only for invalid input, and the Decision then denies
// with RetryAfter admit.InfDuration: an error wrapping admit.ErrInvalidLimit
// (a per-call max <= 0), admit.ErrInvalidCost (r.N < 0),
// admit.ErrExceedsBurst (r.N above the max: the request can never be
// admitted) or admit.ErrKeyTooLong; or, for a new key when the Limiter holds
// Config.MaxKeys keys, an error wrapping admit.ErrTooManyKeys, with RetryAfter 0
// (unknown: the request may succeed once other keys are released). The
// context is not consulted by this in-memory Limiter; it is there so that
// the signature is that of limiters backed by a store.
func (l *Limiter) TryAcquire(ctx context.Context, r admit.Request) (Permit, admit.Decision, error) {
	return l.acquire(ctx, r.Key, l.maxOf(r.Limit), r.N, false)
}

// maxOf returns the slots of a per-call limit: l's own for the zero Limit.
func (l *Limiter) maxOf(lim admit.Limit) int64 {
	if lim == (admit.Limit{}) {
		return l.max
	}
	return lim.Rate
}

// Acquire takes r.N slots of r.Key under a limit of r.Limit.Rate in flight
// (the Limiter's own max when r.Limit is zero), waiting for them if it
// must. If they are free and no caller waits for the key, it takes them at
// once, even if ctx is done. Otherwise it joins the key's FIFO queue and
// waits until its turn comes and its slots are free; the Decision then
// admits, and the Permit holds the slots until its Release.
//
// It does not wait, and denies at once (a Decision, not an error), when the
// queue holds Config.MaxWaiters callers; it denies (again without error) a
// caller that has waited Config.MaxWait in vain. If ctx ends first it returns
// ctx's error, with a denying Decision: the caller leaves the queue, and
// the callers behind it move up (and are served, if the caller was first
// and they fit). If its slots were granted just as ctx ended, they are
// given back. Input errors are those of TryAcquire.
func (l *Limiter) Acquire(ctx context.Context, r admit.Request) (Permit, admit.Decision, error) {
	return l.acquire(ctx, r.Key, l.maxOf(r.Limit), r.N, true)
}

func (l *Limiter) acquire(ctx context.Context, key string, max, n int64, wait bool) (Permit, admit.Decision, error) {
	if err := l.check(key, max, n); err != nil {
		return Permit{}, l.invalid(max), err
	}
	s := l.shardFor(key)
	swept := false
	for {
		s.mu.Lock()
		var now int64
		if l.lease > 0 {
			now = l.now()
			s.reclaim(now)
		}
		ks := s.lookup(key)
		if n > max || n == 0 {
			d := s.decide(ks, max, n, n == 0, now)
			s.mu.Unlock()
			l.observe(key, n, d)
			if n > max {
				return Permit{}, d, fmt.Errorf("%w: %d slots requested, the limit is %d", admit.ErrExceedsBurst, n, max)
			}
			return Permit{}, d, nil
		}
		if ks == nil {
			var ok bool
			if ks, ok = s.add(key); !ok {
				s.mu.Unlock()
				if l.lease > 0 && !swept {
					// Keys may be held only by expired leases.
					l.sweep()
					swept = true
					continue
				}
				d := l.invalid(max)
				d.RetryAfter = 0 // unknown: keys come back when their holders release
				return Permit{}, d, fmt.Errorf("%w: concurrency: the limit is %d keys", admit.ErrTooManyKeys, l.maxKeys)
			}
		}
		if ks.whead == nil && n <= max-ks.inflight { // inflight+n could overflow
			// The fast path: decide reduced to what can happen here.
			p := s.hold(ks, n, now)
			remaining := max - ks.inflight
			var reset time.Duration
			if ks.ltail != nilIdx {
				reset = durationTo(s.slab[ks.ltail].deadline, now)
			}
			s.mu.Unlock()
			d := admit.Decision{
				Allowed:    true,
				Limit:      admit.Limit{Rate: max, Burst: max},
				Remaining:  remaining,
				ResetAfter: reset,
				Rule:       l.name,
				Kind:       admit.KindConcurrency,
			}
			if l.observer != nil {
				l.observe(key, n, d)
				l.track()
			}
			return p, d, nil
		}
		if !wait || l.maxWaiters == 0 || l.maxWait == 0 || (l.maxWaiters > 0 && ks.nwait >= l.maxWaiters) {
			d := s.decide(ks, max, n, false, now)
			s.mu.Unlock()
			l.observe(key, n, d)
			return Permit{}, d, nil
		}
		if err := ctx.Err(); err != nil {
			d := s.decide(ks, max, n, false, now)
			s.mu.Unlock()
			return Permit{}, d, err
		}
		w := &waiter{n: n, max: max, signal: make(chan struct{}, 1), at: l.waitStart(now)}
		ks.enqueue(w)
		s.mu.Unlock()
		return l.wait(ctx, s, ks, w, key)
	}
}

// waitStart returns the instant a wait starts, ns since New: now if it was
// read (with leases), else the clock's reading.
func (l *Limiter) waitStart(now int64) int64 {
	if l.lease > 0 {
		return now
	}
	return l.now()
}

// check validates a request.
func (l *Limiter) check(key string, max, n int64) error {
	switch {
	case max <= 0:
		return fmt.Errorf("%w: concurrency limit %d, must be positive", admit.ErrInvalidLimit, max)
	case n < 0:
		return fmt.Errorf("%w: %d slots requested", admit.ErrInvalidCost, n)
	case l.maxKeyLen >= 0 && len(key) > l.maxKeyLen:
		return fmt.Errorf("%w: concurrency: %d bytes, the maximum is %d", admit.ErrKeyTooLong, len(key), l.maxKeyLen)
	}
	return nil
}

// invalid is the Decision for a request that cannot be decided.
func (l *Limiter) invalid(max int64) admit.Decision {
	return admit.Decision{
		Limit:      admit.Limit{Rate: max, Burst: max},
		RetryAfter: admit.InfDuration,
		Rule:       l.name,
		Kind:       admit.KindConcurrency,
	}
}

// shardFor returns the shard of key.
func (l *Limiter) shardFor(key string) *shard {
	if key == "" {
		return &l.global
	}
	return &l.shards[maphash.String(l.seed, key)&(numShards-1)]
}

// now reads the clock, in nanoseconds since New.
func (l *Limiter) now() int64 {
	if l.sys {
		return int64(time.Since(l.base))
	}
	return int64(l.clock.Now().Sub(l.base))
}

// sweep reclaims the expired leases of every shard, one at a time.
func (l *Limiter) sweep() {
	l.each(func(s *shard) {})
}

// each calls f on every shard, locked, after reclaiming its expired leases.
func (l *Limiter) each(f func(s *shard)) {
	visit := func(s *shard) {
		s.mu.Lock()
		if l.lease > 0 {
			s.reclaim(l.now())
		}
		f(s)
		s.mu.Unlock()
	}
	visit(&l.global)
	for i := range l.shards {
		visit(&l.shards[i])
	}
	l.track()
}

// observe reports a decision to the Observer.
func (l *Limiter) observe(key string, n int64, d admit.Decision) {
	if l.observer != nil {
		l.observer.Decided(admit.DecisionEvent{Limiter: l.name, Key: key, N: n, Decision: d})
	}
}

// track reports the number of keys to the Observer, if it has moved
// enough since the last report or enough changes have been made.
func (l *Limiter) track() {
	if l.observer == nil {
		return
	}
	n, last := l.keys.Load(), l.tracked.Load()
	diff := n - last
	if diff < 0 {
		diff = -diff
	}
	if diff < max(last/8, trackMinDiff) && l.changes.Load()-l.trackedAt.Load() < trackEvery {
		return
	}
	// One report at a time, in order; a report due while another is being
	// made (or from within the Observer) waits for the next change.
	if !l.trackMu.TryLock() {
		return
	}
	defer l.trackMu.Unlock()
	n = l.keys.Load()
	l.tracked.Store(n)
	l.trackedAt.Store(l.changes.Load())
	l.observer.Tracked(l.name, int(n))
}

// InFlight returns the number of slots of key held now (after reclaiming
// expired leases). The error is always nil and ctx is not used: the
// signature is that of redisstore.ConcurrencyLimiter.InFlight.
func (l *Limiter) InFlight(ctx context.Context, key string) (int64, error) {
	s := l.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.lease > 0 {
		s.reclaim(l.now())
	}
	if ks := s.lookup(key); ks != nil {
		return ks.inflight, nil
	}
	return 0, nil
}

// Waiting returns the number of callers waiting for key.
func (l *Limiter) Waiting(key string) int {
	s := l.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks := s.lookup(key); ks != nil {
		return ks.nwait
	}
	return 0
}

// Stats is a snapshot of a Limiter's state, for metrics and tests.
type Stats struct {
	// Keys is the number of keys with state (slots held or callers
	// waiting), the empty key excepted: the number Config.MaxKeys bounds.
	Keys int
	// InFlight is the number of slots held, over all keys.
	InFlight int64
	// Waiting is the number of callers waiting, over all keys.
	Waiting int
	// Holders is the number of Permits holding slots.
	Holders int
	// Reclaimed is the number of leases reclaimed since New: Permits not
	// released within the lease (see Config.Lease).
	Reclaimed uint64
	// Waits is the number of callers of Acquire that waited in a queue
	// since New and are done waiting, whatever the outcome (granted, out
	// of Config.MaxWait, or their context ended). A caller admitted or
	// denied at once did not wait.
	Waits uint64
	// Waited is the time those callers waited in all, measured by the
	// Limiter's Clock from joining the queue to leaving it: Waited / Waits
	// is their mean wait.
	Waited time.Duration
}

// Stats returns a snapshot of the Limiter's state, after reclaiming expired
// leases. It locks the shards one at a time, so under concurrent use its
// counts are from slightly different instants.
func (l *Limiter) Stats() Stats {
	var st Stats
	l.each(func(s *shard) {
		st.Holders += s.held
		if s.fixed != nil {
			st.InFlight += s.fixed.inflight
			st.Waiting += s.fixed.nwait
			return
		}
		st.Keys += len(s.keys)
		for _, ks := range s.keys {
			st.InFlight += ks.inflight
			st.Waiting += ks.nwait
		}
	})
	st.Reclaimed = l.reclaimed.Load()
	st.Waits, st.Waited = l.waits.Load(), time.Duration(l.waited.Load())
	return st
}
