package keyed

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/internal/timeline"
)

// errStoreFull reports that a key could not be stored because its shard's
// key arena reached 4 GiB. Nothing was consumed. The package's errors are
// admit's: this one wraps admit.ErrTooManyKeys, and the others are
// admit.ErrInvalidConfig, admit.ErrInvalidLimit, admit.ErrInvalidCost and
// admit.ErrKeyTooLong (for a key longer than Config.MaxKeyLength).
var errStoreFull = fmt.Errorf("keyed: key store full (a shard's key arena reached 4 GiB): %w", admit.ErrTooManyKeys)

// Limiter limits each key separately, by one of admit's algorithms, in
// memory. Every key behaves exactly as its own single-key limiter of package
// admit with the same limit would: same decisions, same Remaining,
// RetryAfter and ResetAfter (admittest's conformance suite checks it).
//
// The limit is the limiter's own (Config.Limit), or given per call (Request.Limit), so
// one Limiter serves any number of tiers; a key keeps its state when the
// limit it is checked under changes, which for GCRA and the buckets is a
// debt in time (so it carries over naturally) and for the window algorithms
// a count in a window of the new limit's length.
//
// Memory is bounded. A key is stored only while its state differs from a
// new key's: a key back at full capacity is forgotten (after a grace
// period, Config.ForgetAfter; lazily: a few slots are swept on each insertion,
// and all of a shard's before it grows), which changes no decision. (The
// grace period is for instants that go backwards, as they do when
// goroutines read the clock and then decide in another order: a request at
// an instant up to the grace period before the latest one is decided as
// the single-key limiter would; a request further in the past, for a key
// that has been forgotten, is decided as for a new key.) A hard cap on keys (Config.MaxKeys) bounds the rest:
// when a shard of the table is at its share of the cap with no idle key,
// the least recently used key (approximately, by the CLOCK algorithm) is
// forgotten, which can admit a request its state would have denied. Such
// evictions are reported to the Observer (admit.EvictPressure); size the
// cap so that they do not happen in normal operation. No goroutine or timer
// is used, so a Limiter needs no Close.
//
// Keys are arbitrary byte strings, stored once, in arenas the garbage
// collector does not scan. The table is sharded by a seeded hash of the
// key, so goroutines deciding on different keys rarely share a lock.
//
// The zero Limiter is not usable; create one with New. A Limiter is safe for
// concurrent use.
type Limiter struct {
	alg       admit.Algorithm
	own       *limits.Compiled
	limits    limits.Cache
	eng       engine
	clock     admit.Clock
	name      string
	obs       admit.Observer
	maxKeyLen int
	sysClock  bool // clock is admit.SystemClock
}

// New returns a Limiter configured by cfg. The error wraps admit.ErrInvalidConfig (a field out of its domain,
// an unknown algorithm) or admit.ErrInvalidLimit.
func New(cfg Config) (*Limiter, error) {
	o, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	alg := cfg.Algorithm
	lim := &Limiter{alg: alg, clock: o.clock, name: cfg.Name, obs: cfg.Observer, maxKeyLen: o.maxKeyLen, sysClock: o.clock == admit.SystemClock}
	switch alg {
	case admit.AlgGCRA:
		lim.eng = newTable(gcraOps, o.shards, o.maxKeys, o.grace)
	case admit.AlgTokenBucket, admit.AlgLeakyBucket:
		lim.eng = newTable(bucketOps, o.shards, o.maxKeys, o.grace)
	case admit.AlgFixedWindow:
		lim.eng = newTable(fixedOps, o.shards, o.maxKeys, o.grace)
	case admit.AlgSlidingWindow:
		lim.eng = newTable(slidingOps, o.shards, o.maxKeys, o.grace)
	case admit.AlgSlidingWindowApprox:
		lim.eng = newTable(approxOps, o.shards, o.maxKeys, o.grace)
	case admit.AlgSlidingLog:
		lim.eng = newTable(logOps, o.shards, o.maxKeys, o.grace)
	default:
		return nil, fmt.Errorf("%w: keyed: unknown algorithm %v", admit.ErrInvalidConfig, alg)
	}
	lim.own = limits.Compile(alg, cfg.Limit)
	if lim.own.Err != nil {
		return nil, lim.own.Err
	}
	if lim.obs != nil {
		lim.obs.Tracked(lim.name, 0)
	}
	return lim, nil
}

// pow2 returns the least power of two >= n (n >= 1).
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Algorithm returns the limiter's algorithm.
func (lim *Limiter) Algorithm() admit.Algorithm { return lim.alg }

// Limit returns the limiter's own limit, with Burst filled in.
func (lim *Limiter) Limit() admit.Limit { return lim.own.Limit }

// Len returns the number of keys the limiter holds state for.
func (lim *Limiter) Len() int { return lim.eng.len() }

// Allow decides whether r.N events may happen for r.Key at instant r.At
// (the limiter's clock when r.At is zero), under r.Limit (the limiter's
// own limit when r.Limit is zero), and if so consumes them.
//
// A denial is a Decision with Allowed false, not an error. r.N = 0 is a
// peek: it reports Remaining and ResetAfter without consuming anything (or
// storing the key). r.N above the burst is denied with RetryAfter
// admit.InfDuration. A per-call limit lets one Limiter serve keys of
// different tiers; compiled limits are cached, so a handful of tiers cost
// nothing per call. The error is non-nil only for bad input: r.N < 0
// (admit.ErrInvalidCost), an invalid r.Limit (admit.ErrInvalidLimit), a
// key longer than the maximum (admit.ErrKeyTooLong), or a full store (an
// error wrapping admit.ErrTooManyKeys that says "keyed: key store full":
// a shard's key arena reached 4 GiB); nothing is consumed then. ctx is not used (deciding in
// memory never waits); it is there so that every keyed limiter, in memory
// or in Redis, has the same signature (admit.KeyedLimiter). Allow does not
// allocate.
//
// With r.MaxDelay (GCRA and the buckets), a request that does not fit now
// but would within r.MaxDelay is admitted with Decision.Delay, the wait
// for its slot, and Decision.TimeToAct, r.At (or the clock) plus the
// wait: the key's state moves ahead now, so the slot is held, and the
// caller waits (admit.Wait) before acting. A request that would wait
// longer is denied as without r.MaxDelay, holding nothing. A Refund of
// r.N at TimeToAct gives the slot back if no later delayed request relies
// on it (it is the key's latest). A negative r.MaxDelay, or one with a
// window algorithm, is an error wrapping admit.ErrInvalidDelay.
func (lim *Limiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if r.MaxDelay != 0 {
		return lim.allowDelay(r)
	}
	// The hot path. A Decision is 14 words, returned on the stack, so each
	// frame it were returned through would copy it: this one builds it,
	// in place, from step's Result (returned in registers).
	now := lim.at(r.At)
	c := lim.own
	if r.Limit != (admit.Limit{}) {
		if c = lim.limits.Get(lim.alg, r.Limit); c.Err != nil {
			return c.Refusal(lim.name), c.Err
		}
	}
	res, err := lim.step(now, r.Key, c, r.N, 0)
	if err != nil {
		return c.Refusal(lim.name), err
	}
	// c.Decision(res, lim.name), written out: the inlined call would build
	// the Decision in a temporary and copy it.
	return admit.Decision{
		Allowed:    res.Allowed,
		Limit:      c.Limit,
		Remaining:  res.Remaining,
		RetryAfter: time.Duration(res.RetryAfter),
		ResetAfter: time.Duration(res.ResetAfter),
		Rule:       lim.name,
	}, nil
}

// allowDelay is Allow of a request with a MaxDelay.
func (lim *Limiter) allowDelay(r admit.Request) (admit.Decision, error) {
	c := lim.own
	if r.Limit != (admit.Limit{}) {
		if c = lim.limits.Get(lim.alg, r.Limit); c.Err != nil {
			return c.Refusal(lim.name), c.Err
		}
	}
	maxDelay, err := limits.MaxDelay("keyed", lim.alg, r.MaxDelay)
	if err != nil {
		return c.Refusal(lim.name), err
	}
	now := lim.at(r.At)
	res, err := lim.step(now, r.Key, c, r.N, maxDelay)
	if err != nil {
		return c.Refusal(lim.name), err
	}
	d := c.Decision(res, lim.name)
	limits.Delayed(&d, now)
	return d, nil
}

// decide is Allow at now under c, for callers that have both.
func (lim *Limiter) decide(now int64, key string, c *limits.Compiled, n int64) (admit.Decision, error) {
	res, err := lim.step(now, key, c, n, 0)
	if err != nil {
		return c.Refusal(lim.name), err
	}
	return c.Decision(res, lim.name), nil
}

// step decides n events for key at now under c, consuming them if
// admitted (within maxDelay ns if it is > 0), and tells the Observer. The
// error is non-nil for bad input and for a full store; nothing is consumed
// then.
func (lim *Limiter) step(now int64, key string, c *limits.Compiled, n, maxDelay int64) (algo.Result, error) {
	if n < 0 || len(key) > lim.maxKeyLen {
		return algo.Result{}, lim.badInput(key, n)
	}
	res, ev, ok := lim.eng.decide(now, key, &c.P, n, maxDelay)
	if !ok {
		return algo.Result{}, errStoreFull
	}
	if lim.obs != nil {
		d := c.Decision(res, lim.name)
		if maxDelay > 0 {
			limits.Delayed(&d, now)
		}
		lim.observe(key, n, d, ev)
	}
	return res, nil
}

// at returns instant t on the time line, or the clock's now if t is zero.
func (lim *Limiter) at(t time.Time) int64 {
	switch {
	case !t.IsZero():
		return timeline.Nanos(t)
	case lim.sysClock:
		return timeline.Now()
	}
	return timeline.Nanos(lim.clock.Now())
}

// Refund gives back r.N events admitted for r.Key at instant r.At (the
// limiter's clock when zero) under r.Limit (the limiter's own when zero),
// undoing an Allow that a later check (another layer of a compose.All
// chain, a failed call downstream) made pointless. It gives back what the
// algorithm can without ever exceeding the burst: GCRA and the buckets
// move the key's state back by r.N emission intervals, but not past full
// at r.At; the fixed and sliding windows take r.N off the count of the
// window the events were counted in, and give back nothing in a later
// window; the sliding log drops r.N of its newest events, never those that
// have left the window. Right after an admission of n at an instant, a
// refund of n at that instant leaves the key deciding as if it had never
// been admitted. A refund at a later instant is exact when no other
// request changed the key in between; otherwise the algorithm gives back
// what it can of the latest events, so an admission at the end of a window
// followed by others at the start of the next can see the next window's
// count lowered instead. A key that is not stored is full: there is
// nothing to give back, and nothing is stored.
//
// The error is non-nil only for bad input: r.N < 0 (admit.ErrInvalidCost),
// an invalid r.Limit (admit.ErrInvalidLimit) or a key longer than the
// maximum (admit.ErrKeyTooLong). r.N = 0 does nothing. ctx is not used. Refund
// does not allocate.
func (lim *Limiter) Refund(ctx context.Context, r admit.Request) error {
	c := lim.own
	if r.Limit != (admit.Limit{}) {
		if c = lim.limits.Get(lim.alg, r.Limit); c.Err != nil {
			return c.Err
		}
	}
	if r.N < 0 || len(r.Key) > lim.maxKeyLen {
		return lim.badInput(r.Key, r.N)
	}
	if r.N > 0 {
		lim.eng.refund(lim.at(r.At), r.Key, &c.P, r.N)
	}
	return nil
}

// Reset forgets key, which then starts full. Forgetting a key the limiter
// does not hold does nothing. The error is always nil (ctx is not used):
// Reset has the signature of admit.Resetter.
func (lim *Limiter) Reset(ctx context.Context, key string) error {
	lim.eng.reset(key)
	return nil
}

// badInput is the error of a request that cannot be decided: a negative
// n, or a key longer than the maximum.
func (lim *Limiter) badInput(key string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	return fmt.Errorf("%w: keyed: %d bytes, the maximum is %d", admit.ErrKeyTooLong, len(key), lim.maxKeyLen)
}

func (lim *Limiter) observe(key string, n int64, d admit.Decision, ev evictions) {
	lim.obs.Decided(admit.DecisionEvent{Limiter: lim.name, Key: key, N: n, Decision: d})
	if ev.idle > 0 {
		lim.obs.Evicted(admit.EvictionEvent{Limiter: lim.name, Reason: admit.EvictIdle, Keys: ev.idle})
	}
	if ev.pressure > 0 {
		lim.obs.Evicted(admit.EvictionEvent{Limiter: lim.name, Reason: admit.EvictPressure, Keys: ev.pressure})
	}
	if ev.grew {
		lim.obs.Tracked(lim.name, lim.eng.len())
	}
}

// AllowBatch decides each request of reqs in order, as Allow would, and
// appends the decisions to dst, which may be nil, returning the result. The
// requests whose At is zero are decided at one reading of the clock. Each
// request is decided on its own (a batch is not all or nothing: see
// package compose for that). A request with bad input gets a refusal, and
// the first such error is returned, naming its index, after every request
// has been decided.
func (lim *Limiter) AllowBatch(ctx context.Context, reqs []admit.Request, dst []admit.Decision) ([]admit.Decision, error) {
	var first error
	var now time.Time // the clock's reading, once needed
	for i, r := range reqs {
		if r.At.IsZero() {
			if now.IsZero() {
				now = lim.clock.Now()
			}
			r.At = now
		}
		d, err := lim.Allow(ctx, r)
		if err != nil && first == nil {
			first = fmt.Errorf("keyed: request %d: %w", i, err)
		}
		dst = append(dst, d)
	}
	return dst, first
}

// The contract of admit that a Limiter meets.
var (
	_ admit.KeyedLimiter = (*Limiter)(nil)
	_ admit.Refunder     = (*Limiter)(nil)
	_ admit.Resetter     = (*Limiter)(nil)
)
