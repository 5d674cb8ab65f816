package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/leases"
	"github.com/redis/go-redis/v9"
)

//go:embed internal/lua/concurrency.lua
var concurrencySource string

var concurrencyScript = redis.NewScript(concurrencySource)

const (
	// maxExact is the largest count the scripts handle exactly: Lua's
	// numbers are doubles.
	maxExact = 1 << 53
)

// ConcurrencyLimiter limits the number of slots in flight per key across
// every process sharing a Redis: at most max at a time per key, each
// request taking n of them (its weight) until it releases them or its
// lease expires. It is the Redis version of package concurrency's Limiter,
// whose model it follows: a request of n slots is admitted iff
//
//	in-flight(key) + n <= max
//
// and is then held by a Lease. n = 0 is always admitted and holds nothing;
// n > max can never be (a refusal with RetryAfter admit.InfDuration and an
// error wrapping admit.ErrExceedsBurst, as package concurrency reports it).
// A Request's Limit.Rate gives the max per call, for tiers: each call
// compares the key's in-flight count with its own max.
//
// # Leases
//
// Every grant is a lease: a holder that neither releases nor extends its
// slots within the lease (ConcurrencyConfig.Lease, 30 s by default) loses them, so a
// process that crashes, hangs or loses its connection to Redis cannot
// leak slots for longer than the lease. Deadlines are on Redis's clock
// (TIME, read inside the script), so the clocks of the clients do not
// matter. There is no automatic renewal, and no goroutine: a holder that
// may run longer than the lease calls Lease.Extend, say every third of the
// lease, and checks that it still holds its slots. Expired leases are
// reclaimed by the next call for the same key; the keys of a limit key
// expire (PEXPIRE) with its last lease, so idle keys vanish.
//
// # Waiting
//
// TryAcquire decides at once. Acquire waits for the slots by polling
// Redis, at intervals growing from 1 ms to 50 ms (ConcurrencyConfig.PollMin, PollMax) with
// random jitter, and never longer than the time until enough leases expire
// (the Decision's RetryAfter), until it is admitted or ctx ends. Waiting by
// polling is not FIFO: unlike package concurrency's queue, a waiter may
// be overtaken by later requests, from this process or another, and a
// heavy request may wait for long while light ones keep the key busy.
// Bound the wait with ctx.
//
// # Decisions
//
// Decisions are admit.Decisions of Kind admit.KindConcurrency: Limit is
// {Rate: max, Burst: max, Period: 0}; Remaining is max minus the slots in
// flight after the decision (0 if that is negative, under a smaller max);
// RetryAfter is 0 when admitted, admit.InfDuration for n > max, and
// otherwise the time until enough of the leases held now expire for the
// request to fit: an upper bound on when the slots come back, as holders
// usually release them sooner; ResetAfter is the time until the last lease
// held expires, 0 when none is held. Durations have Redis's millisecond
// resolution. A denial is a Decision, not an error.
//
// # Keys
//
// The leases of limit key K of a limiter named N are kept in two Redis
// keys in the slot of K's hash tag: a sorted set of lease ids scored by
// their deadlines (ms on Redis's clock) at
//
//	<prefix>{<tag>}:conc:<N>:<K>
//
// and a hash of lease id -> weight, with the in-flight total under the
// field "n", at
//
//	<prefix>{<tag>}:concw:<N>:<K>
//
// Limiters of one name share their slots; give different limits different
// names.
//
// A ConcurrencyLimiter is safe for concurrent use. It starts no goroutine;
// it calls Redis directly (one round trip per call, not through the
// Store's pipelines), bounded by the Store's timeout (Config.Timeout) and
// the caller's context. Create it with Store.Concurrency.
type ConcurrencyLimiter struct {
	s       *Store
	max     int64
	lease   time.Duration
	leaseMS string
	pollMin time.Duration
	pollMax time.Duration
	name    string
	obs     admit.Observer
	zhead   string // ":conc:<name>:"
	hhead   string // ":concw:<name>:"
}

// Concurrency returns a limiter configured by cfg: of cfg.Max slots in
// flight per key, whose states live in the store's Redis. The error wraps
// admit.ErrInvalidConfig, and admit.ErrInvalidLimit if cfg.Max is not in
// [1, 2^53].
func (s *Store) Concurrency(cfg ConcurrencyConfig) (*ConcurrencyLimiter, error) {
	if cfg.Max <= 0 || cfg.Max > maxExact {
		return nil, invalid("Max", "%d: %w: want 1 to 2^53", cfg.Max, admit.ErrInvalidLimit)
	}
	lease := defaulted(cfg.Lease, defaultLease)
	if lease < 0 || lease > 365*24*time.Hour {
		return nil, invalid("Lease", "%v: want 0 (30s), or 1ms to a year", cfg.Lease)
	}
	pollMin, pollMax := defaulted(cfg.PollMin, defaultPollMin), defaulted(cfg.PollMax, defaultPollMax)
	if cfg.PollMin < 0 || cfg.PollMax < 0 || pollMax < pollMin || pollMax > time.Minute {
		return nil, invalid("PollMin and PollMax", "%v and %v: want 0 < min <= max <= 1m", pollMin, pollMax)
	}
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	ms := (lease + time.Millisecond - 1) / time.Millisecond
	return &ConcurrencyLimiter{
		s:       s,
		max:     cfg.Max,
		lease:   ms * time.Millisecond,
		leaseMS: strconv.FormatInt(int64(ms), 10),
		pollMin: pollMin,
		pollMax: pollMax,
		name:    cfg.Name,
		obs:     cfg.Observer,
		zhead:   ":conc:" + cfg.Name + ":",
		hhead:   ":concw:" + cfg.Name + ":",
	}, nil
}

// Max returns the limit given to Store.Concurrency: the slots in flight
// per key for Acquire and TryAcquire.
func (l *ConcurrencyLimiter) Max() int64 { return l.max }

// TryAcquire takes r.N slots of r.Key, if they are free; it never waits.
// The limit is r.Limit.Rate slots in flight, or the limiter's own max (Max)
// when r.Limit is zero; r.Limit's Period and Burst and r.At are not used.
// If the request is admitted, the Lease holds the slots until its Release
// or until its lease expires; otherwise it is the zero Lease. r.N = 0 is
// always admitted and holds nothing (a peek: the Decision reports the
// key's state).
//
// The error is non-nil when nothing was decided, and the Decision then
// denies with RetryAfter admit.InfDuration: bad input (an error wrapping
// admit.ErrInvalidLimit for a max outside [1, 2^53], admit.ErrInvalidCost
// for r.N < 0, admit.ErrExceedsBurst for r.N above the max, which can
// never be admitted, or admit.ErrKeyTooLong), Redis failing (ErrStore), ctx
// ending (its error), or a closed Store (admit.ErrClosed). If the call failed
// after Redis may have granted the slots (a timeout, a lost connection,
// ctx ending mid-call), the limiter tries once to give them back, within
// the Store's timeout; failing that, their lease expires.
func (l *ConcurrencyLimiter) TryAcquire(ctx context.Context, r admit.Request) (Lease, admit.Decision, error) {
	p, d, err := l.try(ctx, r.Key, l.maxOf(r.Limit), r.N)
	l.observe(r.Key, r.N, d, err)
	return p, d, err
}

// maxOf returns the slots of a per-call limit: l's own for the zero Limit.
func (l *ConcurrencyLimiter) maxOf(lim admit.Limit) int64 {
	if lim == (admit.Limit{}) {
		return l.max
	}
	return lim.Rate
}

// Acquire takes r.N slots of r.Key under a limit of r.Limit.Rate in flight
// (the limiter's own max when r.Limit is zero), waiting for them if it
// must: it polls Redis (see ConcurrencyLimiter on waiting, which is not
// FIFO) until the request is admitted or ctx ends. Without a deadline or
// cancellation of ctx it may wait forever. If ctx ends first it returns
// ctx's error with the last denying Decision. It sends nothing once ctx is
// done, so a caller whose ctx is already done gets its error at once, even
// if the slots are free. Input and Redis errors are those of TryAcquire,
// and end the wait.
func (l *ConcurrencyLimiter) Acquire(ctx context.Context, r admit.Request) (Lease, admit.Decision, error) {
	key, n, max := r.Key, r.N, l.maxOf(r.Limit)
	backoff := l.pollMin
	d, denied := l.refusal(max), false
	for {
		if err := ctx.Err(); err != nil {
			if denied {
				l.observe(key, n, d, nil)
			}
			return Lease{}, d, err
		}
		p, dd, err := l.try(ctx, key, max, n)
		if err != nil || dd.Allowed {
			l.observe(key, n, dd, err)
			if err != nil && denied && ctx.Err() != nil {
				dd = d // the last denial says more than a refusal
			}
			return p, dd, err
		}
		d, denied = dd, true
		// Between half and all of backoff, and no later than the
		// leases that free enough slots expire.
		wait := backoff/2 + time.Duration(mrand.Int64N(int64(backoff/2)+1))
		if d.RetryAfter > 0 && d.RetryAfter < wait {
			wait = d.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			l.observe(key, n, d, nil)
			return Lease{}, d, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, l.pollMax)
	}
}

// InFlight returns the number of slots of key held now, after reclaiming
// expired leases.
func (l *ConcurrencyLimiter) InFlight(ctx context.Context, key string) (int64, error) {
	if err := l.checkKey(key); err != nil {
		return 0, err
	}
	zk, hk := l.keys(key)
	r, err := l.s.evalInts(ctx, concurrencyScript, "concurrency", []string{zk, hk}, 2, "i")
	if err != nil {
		return 0, err
	}
	return r[0], nil
}

// try decides a request without telling the observer.
func (l *ConcurrencyLimiter) try(ctx context.Context, key string, max, n int64) (Lease, admit.Decision, error) {
	return l.tryFor(ctx, key, max, n, l.leaseMS)
}

// tryFor is try with a lease of leaseMS milliseconds (a decimal string).
func (l *ConcurrencyLimiter) tryFor(ctx context.Context, key string, max, n int64, leaseMS string) (Lease, admit.Decision, error) {
	switch {
	case max <= 0 || max > maxExact:
		return Lease{}, l.refusal(max), fmt.Errorf("%w: concurrency limit %d, want 1 to 2^53", admit.ErrInvalidLimit, max)
	case n < 0:
		return Lease{}, l.refusal(max), fmt.Errorf("%w: %d slots requested", admit.ErrInvalidCost, n)
	case n > max:
		return Lease{}, l.refusal(max), fmt.Errorf("%w: %d slots requested, the limit is %d", admit.ErrExceedsBurst, n, max)
	}
	if err := l.checkKey(key); err != nil {
		return Lease{}, l.refusal(max), err
	}
	if l.s.closed.Load() {
		return Lease{}, l.refusal(max), errClosed
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, l.refusal(max), err
	}
	zk, hk := l.keys(key)
	id := ""
	if n > 0 {
		id = newLeaseID()
	}
	r, err := l.s.evalInts(ctx, concurrencyScript, "concurrency", []string{zk, hk}, 5,
		"a", id, strconv.FormatInt(n, 10), strconv.FormatInt(max, 10), leaseMS)
	if err != nil {
		var reply redis.Error
		if n > 0 && !errors.As(err, &reply) {
			// The script may have run: give the slots back.
			Lease{l: l, zkey: zk, hkey: hk, id: id}.cleanup(ctx)
		}
		return Lease{}, l.refusal(max), err
	}
	d := admit.Decision{
		Allowed:    r[0] == 1,
		Limit:      admit.Limit{Rate: max, Burst: max},
		Remaining:  r[2],
		ResetAfter: time.Duration(r[3]) * time.Millisecond,
		RetryAfter: time.Duration(r[4]) * time.Millisecond,
		Rule:       l.name,
		Kind:       admit.KindConcurrency,
	}
	if !d.Allowed || n == 0 {
		return Lease{}, d, nil
	}
	return Lease{l: l, zkey: zk, hkey: hk, id: id}, d, nil
}

func (l *ConcurrencyLimiter) checkKey(key string) error { return l.s.checkInput(key, 0) }

// keys returns the Redis keys of key: the sorted set of leases and the
// hash of weights.
func (l *ConcurrencyLimiter) keys(key string) (zkey, hkey string) {
	b := l.s.prefix + "{" + tagOf(key) + "}"
	return b + l.zhead + key, b + l.hhead + key
}

// refusal is the Decision of a request that was not decided.
func (l *ConcurrencyLimiter) refusal(max int64) admit.Decision {
	return admit.Decision{
		Limit:      admit.Limit{Rate: max, Burst: max},
		RetryAfter: admit.InfDuration,
		Rule:       l.name,
		Kind:       admit.KindConcurrency,
	}
}

// observe reports a decision to the observer: those made, and the
// refusals of n > max, as package concurrency does.
func (l *ConcurrencyLimiter) observe(key string, n int64, d admit.Decision, err error) {
	if l.obs != nil && (err == nil || errors.Is(err, admit.ErrExceedsBurst)) {
		l.obs.Decided(admit.DecisionEvent{Limiter: l.name, Key: key, N: n, Decision: d})
	}
}

// Lease holds the slots one request was granted by a ConcurrencyLimiter,
// until Release or until its lease expires (see ConcurrencyConfig.Lease). It is a small
// value; copies of a Lease are the same Lease.
//
// Each grant has an id drawn at random, never reused, so releasing is
// safe whatever happened before: the second Release of a Lease (or of a
// copy, in any process), the Release of an expired Lease and the Release
// of the zero Lease do nothing and report false. They can never free slots
// granted to someone else.
//
// The zero Lease holds nothing. A Lease is safe for concurrent use. Its
// methods are calls to Redis, bounded by ctx and the Store's timeout; they
// work after the Store's Close (the client must still be open).
type Lease struct {
	l          *ConcurrencyLimiter
	zkey, hkey string
	id         string
}

// Release gives back the slots p holds. It reports whether it did: false
// if p was released before, its lease has expired (its slots were
// reclaimed, or are now), or p is the zero Lease. The error reports that
// Redis could not be told (ErrStore) or ctx ended; the slots are then
// given back when the lease expires, unless a later Release succeeds.
func (p Lease) Release(ctx context.Context) (bool, error) {
	if p.l == nil {
		return false, nil
	}
	r, err := p.l.s.evalInts(ctx, concurrencyScript, "concurrency", []string{p.zkey, p.hkey}, 2, "r", p.id)
	if err != nil {
		return false, err
	}
	p.tallied(false, "")
	return r[0] == 1, nil
}

// Extend renews p's lease: p then holds its slots until a full lease from
// now (on Redis's clock). It reports whether p still held them: false if
// it was released, its lease has expired (too late: the slots may have
// gone to someone else), or p is the zero Lease. Call it from time to time
// (say every third of the lease) while working on a long request.
func (p Lease) Extend(ctx context.Context) (bool, error) {
	if p.l == nil {
		return false, nil
	}
	return p.extend(ctx, "", p.l.leaseMS)
}

// ExtendFor sets p's lease to end d from now (on Redis's clock), whether
// that is later or sooner than before: unlike Extend, it may shorten the
// lease, for a holder keeping p under a lease of its own. It reports what
// Extend reports. d is rounded up to a millisecond and must be from 1 ms
// to a year; another d is an error wrapping admit.ErrInvalidConfig, and
// nothing is sent.
func (p Lease) ExtendFor(ctx context.Context, d time.Duration) (bool, error) {
	ms, err := leaseMillis(d)
	if err != nil {
		return false, err
	}
	if p.l == nil {
		return false, nil
	}
	return p.extend(ctx, "set", ms)
}

func (p Lease) extend(ctx context.Context, mode, ms string) (bool, error) {
	r, err := p.l.s.evalInts(ctx, concurrencyScript, "concurrency", []string{p.zkey, p.hkey}, 3, "e", p.id, mode, "", ms)
	if err != nil {
		return false, err
	}
	p.tallied(r[0] == 1, ms)
	return r[0] == 1, nil
}

// leaseMillis returns lease d in whole milliseconds, rounded up, as the
// scripts take it.
func leaseMillis(d time.Duration) (string, error) {
	if d <= 0 || d > 365*24*time.Hour {
		return "", fmt.Errorf("%w: lease %v: want 1ms to a year", errInvalidArgument, d)
	}
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10), nil
}

// Held reports whether p still holds its slots: false once it has been
// released or its lease has expired, and for the zero Lease. A holder may
// call it to learn whether it has overrun its lease.
func (p Lease) Held(ctx context.Context) (bool, error) {
	if p.l == nil {
		return false, nil
	}
	r, err := p.l.s.evalInts(ctx, concurrencyScript, "concurrency", []string{p.zkey, p.hkey}, 3, "h", p.id)
	if err != nil {
		return false, err
	}
	if r[0] != 1 {
		p.tallied(false, "")
	}
	return r[0] == 1, nil
}

// tallied tells the Store's Tally, if it has one, what Redis said of p:
// held for ms milliseconds from now (extended), or not held (released,
// or gone).
func (p Lease) tallied(held bool, ms string) {
	t := p.l.s.tally.Load()
	switch {
	case t == nil:
	case held:
		m, _ := strconv.ParseInt(ms, 10, 64) // as leaseMillis wrote it
		t.Renew(p.id, time.Duration(m)*time.Millisecond)
	default:
		t.Forget(p.id)
	}
}

// tallyOf returns the Store's Tally, made on first use.
func (s *Store) tallyOf() *leases.Tally {
	if t := s.tally.Load(); t != nil {
		return t
	}
	s.tally.CompareAndSwap(nil, new(leases.Tally))
	return s.tally.Load()
}

// cleanup releases p after a failed acquisition, within the Store's
// timeout even if ctx has ended.
func (p Lease) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.l.s.o.timeout)
	defer cancel()
	_, _ = p.Release(ctx)
}

// Lease ids: 16 random hex digits drawn once per process and a counter,
// so that no two grants anywhere share an id (an id that was released
// must never match a later grant).
var (
	leaseNonce = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
		return hex.EncodeToString(b[:]) + "."
	}()
	leaseSeq atomic.Uint64
)

func newLeaseID() string {
	return leaseNonce + strconv.FormatUint(leaseSeq.Add(1), 36)
}

// evalInts runs script on keys, by EVALSHA with a fallback to EVAL, bounded
// by ctx and the store's timeout, and returns its reply: an array of want
// integers at least. It reports the call to the store's observer as op.
// The error is ctx's if ctx ended, or else wraps ErrStore.
func (s *Store) evalInts(ctx context.Context, script *redis.Script, op string, keys []string, want int, args ...any) ([]int64, error) {
	var r []int64
	err := s.call(ctx, op, len(keys), func(ctx context.Context) error {
		v, err := script.Run(ctx, s.client, keys, args...).Result()
		if err == nil {
			r, err = parseInts(v, want)
		}
		return err
	})
	return r, err
}

// call runs f, a call to Redis of op on keys keys, within ctx and the
// Store's timeout. Its error wraps ErrStore, or is ctx's if ctx ended;
// the Observer is told of the call.
func (s *Store) call(ctx context.Context, op string, keys int, f func(context.Context) error) error {
	tctx, cancel := context.WithTimeout(ctx, s.o.timeout)
	start := time.Now()
	err := f(tctx)
	cancel()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		} else {
			err = storeError(err)
		}
	}
	if s.o.obs != nil {
		s.o.obs.StoreCalled(admit.StoreEvent{Limiter: s.o.name, Op: op, Keys: keys, Duration: time.Since(start), Err: err})
	}
	return err
}

// parseInts checks that v is an array of at least want integers.
func parseInts(v any, want int) ([]int64, error) {
	a, ok := v.([]any)
	if !ok || len(a) < want {
		return nil, fmt.Errorf("malformed reply %T (want %d integers)", v, want)
	}
	r := make([]int64, len(a))
	for i, x := range a {
		n, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("malformed reply: item %d is %T, want an integer", i, x)
		}
		r[i] = n
	}
	return r, nil
}
