package prefetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/defaults"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/internal/timeline"
)

// Store is the shared limiter capacity is taken from: a keyed limiter that
// can grant part of a request in one atomic step, such as a
// redisstore.Limiter (or a keyed.Limiter, in tests).
type Store interface {
	admit.KeyedLimiter
	admit.PartialAllower
	Algorithm() admit.Algorithm
	Limit() admit.Limit
}

// Config configures a Limiter. Store is required; every other field's zero
// value is its default.
type Config struct {
	// Options: Clock is the clock of the requests that give no instant
	// (Request.At zero) and of the blocks' expiry; Name is the Rule of the
	// decisions made locally. Observer, if set, is told of every decision
	// Allow returns (Decided, as Limiter Name), those the Store made
	// included: give the Store an Observer that ignores Decided, or its
	// decisions count twice and each block it grants counts as one.
	admit.Options

	// Store is the shared limiter. Its algorithm must be GCRA, a token or
	// leaky bucket, or a fixed or sliding window (either form): a sliding log stays
	// strict (each of its events has its own expiry, which a block cannot
	// carry), as do quotas, whose counts must be durable.
	Store Store

	// Instances is the number of instances sharing the Store's limits, for
	// sizing blocks: 0 means 1. It never changes the bound on what the
	// fleet admits, only how much capacity one instance may hold while
	// others wait. SetInstances changes it later.
	Instances int

	// MaxBlock is the most events one block may hold. 0 means half the
	// burst divided by Instances (at least 1). It may not exceed the burst.
	MaxBlock int64

	// Interval is how much of a key's local traffic a block is sized for:
	// a key asked for r times a second gets blocks of about r×Interval
	// events (at most MaxBlock), and a key expected fewer than twice per
	// Interval is cold, sent to the Store request by request. A window's
	// block lasts until its window ends, so a window's key gets blocks of
	// its arrivals expected until then, if that is longer (a key asked for
	// 5 times a second is warm under a limit per second, cold under GCRA).
	// 0 means 50ms.
	Interval time.Duration

	// MaxKeys bounds the keys this instance keeps local state for; the
	// least recently used of a few is forgotten to make room (its block,
	// if it holds one, expires). 0 means 65536.
	MaxKeys int

	// Timeout bounds each background fetch of a block. 0 means a second.
	Timeout time.Duration
}

// Limiter decides requests against a shared Store, spending blocks of
// capacity taken from it in memory (see the package documentation for the
// bound it keeps). It implements admit.KeyedLimiter and admit.Refunder,
// and is safe for concurrent use.
type Limiter struct {
	store    Store
	window   bool // fixed or sliding window: blocks are counts
	sliding  bool
	strictly bool // the limit does not limit (or denies all): no blocks
	own      *limits.Compiled
	ceilW    int64 // the window's length, rounded up (ns)
	clock    admit.Clock
	sys      bool
	name     string
	obs      admit.Observer
	maxBlock atomic.Int64
	autoSize bool         // MaxBlock follows the instances (SetInstances)
	fleet    atomic.Int64 // the instances sharing the Store's limits
	interval int64
	horizon  int64 // how far back a key's arrivals count (ns)
	timeout  time.Duration
	keys     *table
	bg       sync.WaitGroup
	stop     context.CancelFunc
	bgCtx    context.Context
	closed   atomic.Bool
	st       counters
}

// New returns a Limiter spending the capacity of cfg.Store. The error
// wraps admit.ErrInvalidConfig and names the field.
func New(cfg Config) (*Limiter, error) {
	if cfg.Store == nil {
		return nil, invalid("Store: nil")
	}
	alg := cfg.Store.Algorithm()
	if alg == admit.AlgSlidingLog {
		return nil, invalid("Store: a sliding log cannot be prefetched: each of its events expires on its own (keep it strict)")
	}
	own := limits.Compile(alg, cfg.Store.Limit())
	if own.Err != nil {
		return nil, invalid("Store: %v", own.Err)
	}
	switch {
	case cfg.Instances < 0:
		return nil, invalid("Instances %d: want 0 (one) or more", cfg.Instances)
	case cfg.MaxBlock < 0:
		return nil, invalid("MaxBlock %d: want 0 (automatic) or more", cfg.MaxBlock)
	case cfg.MaxBlock > own.Limit.Burst:
		return nil, invalid("MaxBlock %d: larger than the burst, %d", cfg.MaxBlock, own.Limit.Burst)
	case cfg.Interval < 0:
		return nil, invalid("Interval %v: want 0 (50ms) or more", cfg.Interval)
	case cfg.MaxKeys < 0:
		return nil, invalid("MaxKeys %d: want 0 (65536) or more", cfg.MaxKeys)
	case cfg.Timeout < 0:
		return nil, invalid("Timeout %v: want 0 (a second) or more", cfg.Timeout)
	}
	l := &Limiter{
		store:    cfg.Store,
		window:   alg == admit.AlgFixedWindow || alg == admit.AlgSlidingWindow || alg == admit.AlgSlidingWindowApprox,
		sliding:  alg == admit.AlgSlidingWindow || alg == admit.AlgSlidingWindowApprox,
		strictly: own.P.Mode != algo.Normal,
		own:      own,
		clock:    defaults.Clock(cfg.Options),
		name:     cfg.Name,
		obs:      cfg.Observer,
		interval: int64(cmp(cfg.Interval, 50*time.Millisecond)),
		timeout:  cmp(cfg.Timeout, time.Second),
		keys:     newTable(int(cmp(int64(cfg.MaxKeys), 65536))),
	}
	l.sys = l.clock == admit.SystemClock
	l.maxBlock.Store(cfg.MaxBlock)
	l.autoSize = cfg.MaxBlock == 0
	l.SetInstances(cfg.Instances)
	l.horizon = l.interval
	if own.P.Mode == algo.Normal {
		l.ceilW = (own.P.CapN + own.P.Td - 1) / own.P.Td
		if l.window {
			// A window's block lives until its window ends: its keys'
			// arrivals are counted over up to a window (or 10 s).
			l.horizon = max(l.interval, min(l.ceilW, int64(10*time.Second)))
		}
	}
	l.bgCtx, l.stop = context.WithCancel(context.Background())
	return l, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: prefetch: %s", admit.ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// SetInstances sets the number of instances sharing the Store's limits,
// as Config.Instances (0 means 1), for instance from a count of the
// live ones that changes as a fleet scales: the blocks taken from then on
// hold at most half the burst divided by n, unless Config.MaxBlock gave
// their size. Like Instances, it never changes the bound on what the
// fleet admits. It is safe to call concurrently with Allow.
func (l *Limiter) SetInstances(n int) {
	n = max(n, 1)
	l.fleet.Store(int64(n))
	if l.autoSize {
		l.maxBlock.Store(max(1, l.own.Limit.Burst/(2*int64(n))))
	}
}

// cmp returns v, or def if v is zero.
func cmp[T ~int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Allow decides r.N events for r.Key at r.At (the clock's now when zero)
// under the Store's limit. A key with a block is decided in memory; a cold
// key, a per-call limit other than the Store's (r.Limit), a request larger
// than a block and bad input go to the Store as they are. An admission
// from a block reports the Remaining this instance holds for the key; a
// denial from memory (a key the Store denied one event until an instant
// that has not come) reports the Store's RetryAfter. The error is the
// Store's, or one wrapping admit.ErrClosed after Close.
func (l *Limiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	d, err := l.allow(ctx, r)
	if l.obs != nil && err == nil {
		l.obs.Decided(admit.DecisionEvent{Limiter: l.name, Key: r.Key, N: r.N, Decision: d})
	}
	return d, err
}

func (l *Limiter) allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if l.closed.Load() {
		return l.own.Refusal(l.name), fmt.Errorf("%w: prefetch: limiter closed", admit.ErrClosed)
	}
	if l.strictly || r.N <= 0 || r.N > l.maxBlock.Load() || (r.Limit != (admit.Limit{}) && r.Limit != l.own.Key) {
		return l.strict(ctx, r, nil, 0)
	}
	now := l.at(r.At)
	e := l.keys.get(r.Key)
	if e == nil {
		d, err := l.strict(ctx, r, nil, now)
		if err == nil {
			l.keys.add(r.Key, now) // an evicted key's blocks count as Unspent
		}
		return d, err
	}
	e.mu.Lock()
	e.seen++
	e.used = max(e.used, now)
	for waited := false; ; waited = true {
		if d, ok := l.fromMemory(e, r, now); ok {
			return d, nil
		}
		if !e.fetching || waited {
			break
		}
		// A block is on its way: wait for it rather than ask the store.
		done := e.done
		e.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return l.own.Refusal(l.name), ctx.Err()
		}
		e.mu.Lock()
	}
	k := l.blockSize(e, now, r.N)
	if k == 0 || e.fetching {
		e.mu.Unlock()
		return l.strict(ctx, r, e, now)
	}
	l.startFetch(e)
	e.mu.Unlock()
	return l.fetchFor(ctx, r, e, now, k)
}

// fromMemory decides r at now from e's blocks, or from the denial e
// remembers, if it can, and then unlocks e.mu (which is held); it keeps
// e.mu locked when it cannot.
func (l *Limiter) fromMemory(e *entry, r admit.Request, now int64) (admit.Decision, bool) {
	if d, ok := l.spend(e, now, r.N); ok {
		k := l.wantFetch(e, now)
		e.mu.Unlock()
		if k > 0 {
			l.background(r.Key, e, k, r.At, now)
		}
		return d, true
	}
	if r.N == 1 && now < e.denied {
		wait := e.denied - now
		early := l.early(e, now)
		e.mu.Unlock()
		l.st.cached.Add(1)
		if early {
			l.st.early.Add(1)
		}
		return l.denial(time.Duration(wait)), true
	}
	return admit.Decision{}, false
}

// Cached decides r without calling the Store and without blocking, when
// this instance can: from a block, from a denial it remembers, or from
// the Store's own cache (if the Store is an admit.Cacher, as
// redisstore's deny cache); it returns false when only the Store can tell
// (a cold key, no block at hand, a per-call limit). A decision it returns is as Allow's (an admission
// spends the block, the Observer is told), so that a compose.Guard around
// the Limiter decides such requests without bounding a call to the Store
// by its timeout (it makes the Limiter an admit.Cacher).
func (l *Limiter) Cached(r admit.Request) (admit.Decision, bool) {
	if l.closed.Load() || l.strictly || r.N <= 0 || r.N > l.maxBlock.Load() || (r.Limit != (admit.Limit{}) && r.Limit != l.own.Key) {
		return admit.Decision{}, false
	}
	d, ok := l.cached(r)
	if !ok {
		return d, false
	}
	if l.obs != nil {
		l.obs.Decided(admit.DecisionEvent{Limiter: l.name, Key: r.Key, N: r.N, Decision: d})
	}
	return d, true
}

// cached is Cached but for the Observer: from this instance's memory of
// the key, else from the Store's own cache if it has one.
func (l *Limiter) cached(r admit.Request) (admit.Decision, bool) {
	if e := l.keys.get(r.Key); e != nil {
		now := l.at(r.At)
		e.mu.Lock()
		e.seen++
		e.used = max(e.used, now)
		if d, ok := l.fromMemory(e, r, now); ok {
			return d, true
		}
		e.seen-- // Allow will count it
		e.mu.Unlock()
	}
	if c, ok := l.store.(admit.Cacher); ok {
		if d, ok := c.Cached(r); ok {
			l.st.cached.Add(1)
			d.Rule = l.name
			return d, true
		}
	}
	return admit.Decision{}, false
}

// startFetch marks e fetching; e.mu is held.
func (l *Limiter) startFetch(e *entry) {
	e.fetching = true
	e.done = make(chan struct{})
}

// strict sends r to the Store as it is. A denial of one event is
// remembered in e (when given) until the Store's RetryAfter.
func (l *Limiter) strict(ctx context.Context, r admit.Request, e *entry, now int64) (admit.Decision, error) {
	l.st.strict.Add(1)
	d, err := l.store.Allow(ctx, r)
	if err == nil && e != nil && (d.Allowed || r.N == 1 && d.RetryAfter > 0 && d.RetryAfter != admit.InfDuration) {
		e.mu.Lock()
		if d.Allowed {
			e.denied, e.exact = 0, 0
		} else {
			e.denied = max(e.denied, now+int64(d.RetryAfter))
			e.exact, e.early = max(e.exact, now+int64(d.RetryAfter)), 0
		}
		e.mu.Unlock()
	}
	return d, err
}

// fetchFor takes a block of k events for r (k >= r.N) and spends r.N of
// it; when the block is too small, r goes to the Store as it is.
func (l *Limiter) fetchFor(ctx context.Context, r admit.Request, e *entry, now, k int64) (admit.Decision, error) {
	granted, d, err := l.fetch(ctx, r.Key, e, k, r.At, now)
	if err != nil {
		return l.own.Refusal(l.name), err
	}
	e.mu.Lock()
	dd, ok := l.spend(e, now, r.N)
	e.mu.Unlock()
	switch {
	case ok:
		return dd, nil
	case granted == 0 && r.N == 1:
		d.Rule = l.name
		return d, nil // the Store's denial of one event, exact
	}
	return l.strict(ctx, r, e, now)
}

// fetch takes a block of up to k events for key at instant at (the
// Store's clock when zero; now is this instance's instant) and keeps it in e.
func (l *Limiter) fetch(ctx context.Context, key string, e *entry, k int64, at time.Time, now int64) (int64, admit.Decision, error) {
	granted, d, err := l.store.AllowAtMost(ctx, admit.Request{Key: key, N: k, At: at})
	recv := now
	if at.IsZero() {
		recv = l.now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fetching = false
	close(e.done)
	if err != nil {
		return 0, d, err
	}
	e.denied, e.exact = 0, 0
	if granted < k && d.RetryAfter > 0 && d.RetryAfter != admit.InfDuration {
		// The store is short: ask it again once a block's worth is back,
		// not for every event that comes back (the denials meanwhile,
		// once the Store would admit one, are early: Stats.Early).
		e.exact, e.early = now+int64(d.RetryAfter), 0
		e.denied = e.exact + l.accrual(k-1)
	}
	if granted == 0 {
		return 0, d, nil
	}
	l.st.blocks.Add(1)
	l.st.taken.Add(granted)
	l.install(e, l.holdOf(now, recv, granted, d), recv)
	return granted, d, nil
}

// accrual returns how long a GCRA or bucket limit takes to get n events
// back (the windows get theirs back all at once, at their ends).
func (l *Limiter) accrual(n int64) int64 {
	if l.window || n <= 0 {
		return 0
	}
	p := &l.own.P
	return (n*p.Tn + p.Td - 1) / p.Td
}

// early reports whether a denial from memory at now is early, one the
// Store would have admitted: at most one for each event that came back
// to the Store since the instant its own denial ended. e.mu is held.
func (l *Limiter) early(e *entry, now int64) bool {
	if now < e.exact || l.window {
		return false
	}
	p := &l.own.P
	if back := 1 + int64(float64(now-e.exact)*float64(p.Td)/float64(p.Tn)); e.early >= back {
		return false
	}
	e.early++
	return true
}

// background fetches a block of k events for key off the request path.
func (l *Limiter) background(key string, e *entry, k int64, at time.Time, now int64) {
	key = strings.Clone(key) // outlives the caller's request
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		ctx, cancel := context.WithTimeout(l.bgCtx, l.timeout)
		defer cancel()
		if at.IsZero() {
			now = l.now()
		}
		l.fetch(ctx, key, e, k, at, now)
	}()
}

// denial is a decision refusing one event for wait.
func (l *Limiter) denial(wait time.Duration) admit.Decision {
	return admit.Decision{Limit: l.own.Limit, RetryAfter: wait, ResetAfter: wait, Rule: l.name}
}

// now reads the clock on the time line.
func (l *Limiter) now() int64 {
	if l.sys {
		return timeline.Now()
	}
	return timeline.Nanos(l.clock.Now())
}

// at returns t on the time line, or the clock's now if t is zero.
func (l *Limiter) at(t time.Time) int64 {
	if t.IsZero() {
		return l.now()
	}
	return timeline.Nanos(t)
}

// Close stops the background fetches and gives back to the Store what the
// windows' blocks still hold (GCRA's and the buckets' slots expire by
// themselves: giving them back could hand out slots that another
// instance's block already holds). Later calls of Allow fail with
// admit.ErrClosed. ctx bounds the wait and the refunds.
func (l *Limiter) Close(ctx context.Context) error {
	if l.closed.Swap(true) {
		return nil
	}
	done := make(chan struct{})
	go func() { l.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.stop()
		<-done
	}
	l.stop()
	now := l.now()
	var errs []error
	l.keys.each(func(key string, e *entry) {
		if err := l.giveBack(ctx, key, e, now); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}
