package admittest

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sync"
	"time"

	"github.com/admit-go/admit"
)

// Model returns the reference implementation of algorithm alg under limit
// l: a slow, obviously correct keyed limiter that computes every decision from
// the documented semantics in exact rational arithmetic (math/big), sharing
// no code with package admit's step functions. Each key starts full. It is
// safe for concurrent use.
//
// Instants count in nanoseconds since the Unix epoch, clamped to 1970..2116
// as package admit documents. For time going backwards Model follows each
// algorithm's rule: GCRA judges the earlier instant as it is; the token and
// leaky buckets judge it as the instant of their latest admission; the
// window counters count it in their current window (the window of the
// latest instant a request was admitted at: only an admission changes a
// state), the sliding window at that window's start (the approximate one
// having forgotten the previous window's count if an admission found it
// weighing nothing for the rest of the window); the sliding log judges it as its newest logged instant.
// Durations always run from the caller's instant.
//
// If l is outside the domain documented on admit.Limit (or, for the window
// algorithms, its window B×T is shorter than 1ns), Allow returns an error
// wrapping admit.ErrInvalidLimit, and if alg is not an admit.Algorithm,
// one wrapping admit.ErrInvalidConfig. A Request's At is its instant (the zero
// At is time.Now()); a Request with a Limit other than l is an error
// wrapping admit.ErrInvalidLimit (a model has one limit).
//
// The model is an admit.PartialAllower too, the reference of the partial
// grants Run checks: AllowAtMost grants min(N, what a peek says fits) and
// leaves the key as an Allow of that many would, and when it grants fewer
// than N its Decision is the denial of one more event on the state after
// the grant (RetryAfter: the exact wait for it), Allowed if anything was
// granted.
func Model(alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
	m := &model{alg: alg, limit: normalLimit(l), keys: map[string]*modelKey{}}
	m.err = m.compile(l)
	return m
}

type model struct {
	alg   admit.Algorithm
	limit admit.Limit
	err   error
	mode  int      // normal, unlimited or closed
	b     int64    // burst B
	bRat  *big.Rat // B
	t     *big.Rat // emission interval T = Period/Rate, ns
	c     *big.Rat // capacity, and the windows' length: C = W = B×T, ns
	logW  int64    // the sliding log's window ⌈B×T⌉, ns

	mu       sync.Mutex
	keys     map[string]*modelKey
	maxDelay int64 // ns: the MaxDelay of the request being decided
}

const (
	modeNormal = iota
	modeUnlimited
	modeClosed
)

// modelKey is one key's state, for whichever algorithm the model runs.
type modelKey struct {
	tat  *big.Rat // GCRA and buckets: the instant the limit is full again
	last int64    // buckets: the instant of the latest admission
	win  *big.Int // windows: index of the current window, nil before any
	cur  int64    // windows: events in window win
	prev int64    // sliding window: events in window win-1
	log  []logged // sliding log, oldest first
}

type logged struct{ at, n int64 }

// compile checks l against the documented domain and fills in T and C.
func (m *model) compile(l admit.Limit) error {
	bad := func(why string) error { return fmt.Errorf("%w: %+v: %s", admit.ErrInvalidLimit, l, why) }
	window := false
	switch m.alg {
	case admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgLeakyBucket:
	case admit.AlgFixedWindow, admit.AlgSlidingWindow, admit.AlgSlidingLog, admit.AlgSlidingWindowApprox:
		window = true
	default:
		return fmt.Errorf("%w: admittest: Model: unknown algorithm %v", admit.ErrInvalidConfig, m.alg)
	}
	switch {
	case l.Rate < 0 || l.Period < 0 || l.Burst < 0:
		return bad("negative field")
	case l.Rate == admit.Inf:
		m.mode = modeUnlimited
		return nil
	case l.Rate == 0:
		if l.Burst != 0 {
			return bad("a burst with a zero rate")
		}
		m.mode = modeClosed
		return nil
	case l.Period == 0:
		return bad("a rate without a period")
	}
	m.b = m.limit.Burst
	m.bRat = new(big.Rat).SetInt64(m.b)
	m.t = big.NewRat(int64(l.Period), l.Rate)
	m.c = new(big.Rat).Mul(m.bRat, m.t)
	if m.c.Cmp(new(big.Rat).SetInt64(1<<60)) > 0 {
		return bad("capacity longer than 36 years")
	}
	if window && m.c.Cmp(big.NewRat(1, 1)) < 0 {
		return bad("window shorter than 1ns")
	}
	m.logW = ceilRat(m.c)
	return nil
}

// Allow implements admit.KeyedLimiter.
func (m *model) Allow(_ context.Context, r admit.Request) (admit.Decision, error) {
	if err := m.check(r); err != nil {
		return admit.Decision{}, err
	}
	if r.MaxDelay != 0 {
		return m.allowDelay(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.decide(r.Key, r.N, r.At), nil
}

// AllowAtMost implements admit.PartialAllower: under the model's lock, a
// peek says what fits at r.At, min(r.N, that) is admitted, and if that is
// less than r.N, one more event is asked for, whose denial says how long
// until it fits. The Decision is the last of these (Allowed if anything was
// granted), so the grant leaves the key as an Allow of what was granted
// would. A negative r.N is refused as by Allow, and nothing is granted.
func (m *model) AllowAtMost(_ context.Context, r admit.Request) (int64, admit.Decision, error) {
	if err := m.check(r); err != nil {
		return 0, admit.Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.N <= 0 {
		return 0, m.decide(r.Key, r.N, r.At), nil
	}
	peek := m.decide(r.Key, 0, r.At)
	granted := min(r.N, peek.Remaining)
	var d admit.Decision
	if granted > 0 {
		if d = m.decide(r.Key, granted, r.At); !d.Allowed {
			panic(fmt.Sprintf("admittest: Model: %d events do not fit where a peek says %d do", granted, peek.Remaining))
		}
	}
	if granted < r.N {
		d = m.decide(r.Key, 1, r.At)
		d.Allowed = granted > 0
	}
	return granted, d, nil
}

// check returns the error of a request the model cannot decide: its limit
// is invalid, or another than the model's.
func (m *model) check(r admit.Request) error {
	if m.err != nil {
		return m.err
	}
	if r.Limit != (admit.Limit{}) && normalLimit(r.Limit) != m.limit {
		return fmt.Errorf("%w: the model's limit is %v, not %v", admit.ErrInvalidLimit, m.limit, r.Limit)
	}
	return nil
}

// decide decides n events of key at instant at (the zero Time: now), with
// the lock held.
func (m *model) decide(key string, n int64, at time.Time) admit.Decision {
	if at.IsZero() {
		at = time.Now()
	}
	d := admit.Decision{Limit: m.limit}
	switch {
	case n < 0:
		d.RetryAfter = admit.InfDuration
		return d
	case m.mode == modeUnlimited:
		d.Allowed, d.Remaining = true, math.MaxInt64
		return d
	case m.mode == modeClosed:
		d.Allowed = n == 0
		if n > 0 {
			d.RetryAfter = admit.InfDuration
		}
		return d
	}
	k := m.keys[key]
	if k == nil {
		k = &modelKey{tat: new(big.Rat)}
		m.keys[key] = k
	}
	t := unixNanos(at)
	switch m.alg {
	case admit.AlgGCRA:
		return m.bucket(k, t, t, n)
	case admit.AlgTokenBucket, admit.AlgLeakyBucket:
		return m.bucket(k, t, max(t, k.last), n)
	case admit.AlgFixedWindow:
		return m.fixedWindow(k, t, n)
	case admit.AlgSlidingWindow, admit.AlgSlidingWindowApprox:
		return m.slidingWindow(k, t, n)
	default: // admit.AlgSlidingLog; compile rejected the others
		return m.slidingLog(k, t, n)
	}
}

// bucket decides n at instant at (the instant the request is judged at)
// for a caller at instant now, by GCRA: with debt D = max(TAT-at, 0), n
// fits iff D + n×T <= C.
func (m *model) bucket(k *modelKey, now, at, n int64) admit.Decision {
	d := admit.Decision{Limit: m.limit}
	atR := ratInt(at)
	debt := new(big.Rat).Sub(k.tat, atR)
	if debt.Sign() < 0 {
		debt.SetInt64(0)
	}
	if n > m.b {
		d.RetryAfter = admit.InfDuration
	} else if n > 0 {
		need := new(big.Rat).Add(debt, mulInt(m.t, n))
		if over := new(big.Rat).Sub(need, m.c); over.Sign() > 0 && ceilRat(over)+at-now <= m.maxDelay {
			// Delayed: admitted now, acting once the debt has fallen by
			// need - C (see delayScenarios).
			d.Allowed = true
			d.Delay = until(now, new(big.Rat).Add(atR, over))
			debt = need
			k.tat = new(big.Rat).Add(atR, need)
			k.last = at
		} else if over.Sign() > 0 {
			// Retry when the debt has fallen by need - C.
			d.RetryAfter = until(now, new(big.Rat).Add(atR, new(big.Rat).Sub(need, m.c)))
		} else {
			d.Allowed = true
			debt = need
			k.tat = new(big.Rat).Add(atR, need)
			k.last = at
		}
	} else {
		d.Allowed = true
	}
	// Remaining = ⌊(C-D)/T⌋; full again at at + D.
	if free := new(big.Rat).Sub(m.c, debt); free.Sign() > 0 {
		d.Remaining = floorRat(free.Quo(free, m.t))
	}
	if debt.Sign() > 0 {
		d.ResetAfter = until(now, debt.Add(debt, atR))
	}
	return d
}

// fixedWindow counts n in the window holding now (or in the current window
// if now is before it).
func (m *model) fixedWindow(k *modelKey, now, n int64) admit.Decision {
	d := admit.Decision{Limit: m.limit}
	win, cur := k.win, k.cur
	if w := m.windowOf(now); win == nil || w.Cmp(win) > 0 {
		win, cur = w, 0
	}
	next := m.windowStart(new(big.Int).Add(win, big.NewInt(1)))
	switch {
	case n > m.b:
		d.RetryAfter = admit.InfDuration
	case cur+n > m.b:
		d.RetryAfter = until(now, next)
	default:
		d.Allowed = true
		cur += n
		if n > 0 {
			k.win, k.cur = win, cur
		}
	}
	d.Remaining = max(m.b-cur, 0)
	if cur > 0 {
		d.ResetAfter = until(now, next)
	}
	return d
}

// slidingWindow decides n by the estimate Prev×(S+W-x)/W + Cur at instant
// x in the current window [S, S+W): n fits iff the estimate is at most B-n,
// the approximate form's estimate counting ⌊Prev×(S+W-x)/W⌋ (see
// approxEstimate).
func (m *model) slidingWindow(k *modelKey, now, n int64) admit.Decision {
	d := admit.Decision{Limit: m.limit}
	w := m.windowOf(now)
	saved := *k // only an admission changes the state
	defer func() {
		if !d.Allowed || n == 0 {
			*k = saved
		}
	}()
	switch {
	case k.win == nil || new(big.Int).Sub(w, k.win).Cmp(big.NewInt(1)) > 0:
		k.win, k.cur, k.prev = w, 0, 0
	case w.Cmp(k.win) > 0: // the next window
		k.win, k.cur, k.prev = w, 0, k.cur
	}
	start := m.windowStart(k.win)
	x := ratInt(now)
	if x.Cmp(start) < 0 { // an earlier window: count at the start
		x = start
	}
	approx := m.alg == admit.AlgSlidingWindowApprox
	est := m.estimate(k, start, x)
	if approx {
		est = m.approxEstimate(k, start, x)
	}
	switch {
	case n > m.b:
		d.RetryAfter = admit.InfDuration
	case n > 0 && est.Cmp(ratInt(m.b-n)) > 0 && approx:
		d.RetryAfter = until(now, m.approxRetry(k, start, m.b-n))
	case n > 0 && est.Cmp(ratInt(m.b-n)) > 0:
		d.RetryAfter = until(now, m.slidingRetry(k, start, m.b-n))
	case n > 0:
		d.Allowed = true
		if approx && est.Cmp(ratInt(k.cur)) == 0 {
			k.prev = 0 // ⌊Prev×(S+W-x)/W⌋ is 0 from x to the window's end
		}
		k.cur += n
		est.Add(est, ratInt(n))
	default:
		d.Allowed = true
	}
	if free := new(big.Rat).Sub(m.bRat, est); free.Sign() > 0 {
		d.Remaining = floorRat(free)
	}
	switch {
	case approx && (k.cur > 0 || k.prev > 0):
		d.ResetAfter = until(now, m.approxRetry(k, start, 0))
	case k.cur > 0:
		d.ResetAfter = until(now, new(big.Rat).Add(start, mulInt(m.c, 2)))
	case k.prev > 0:
		d.ResetAfter = until(now, new(big.Rat).Add(start, m.c))
	}
	return d
}

// estimate returns Prev×(S+W-x)/W + Cur for x in [S, S+W).
func (m *model) estimate(k *modelKey, start, x *big.Rat) *big.Rat {
	left := new(big.Rat).Sub(new(big.Rat).Add(start, m.c), x)
	est := mulInt(left.Quo(left, m.c), k.prev)
	return est.Add(est, ratInt(k.cur))
}

// slidingRetry returns the first instant at which the estimate, falling
// with no more events admitted, is at most target. The estimate is
// continuous: Prev×(S+W-x)/W + Cur on [S, S+W), Cur×(S+2W-x)/W on
// [S+W, S+2W), then 0.
func (m *model) slidingRetry(k *modelKey, start *big.Rat, target int64) *big.Rat {
	end := new(big.Rat).Add(start, m.c)
	if target >= k.cur {
		if k.prev == 0 {
			return end
		}
		// Prev×(S+W-x)/W = target-Cur at x = S+W - (target-Cur)×W/Prev.
		back := mulInt(m.c, target-k.cur)
		back.Quo(back, ratInt(k.prev))
		return end.Sub(end, back)
	}
	// Cur×(S+2W-x)/W = target at x = S+2W - target×W/Cur.
	back := mulInt(m.c, target)
	back.Quo(back, ratInt(k.cur))
	end.Add(end, m.c)
	return end.Sub(end, back)
}

// slidingLog decides n against the events logged in (at-W, at], where at
// is now or the newest logged instant if later.
func (m *model) slidingLog(k *modelKey, now, n int64) admit.Decision {
	d := admit.Decision{Limit: m.limit}
	at := now
	if len(k.log) > 0 {
		at = max(at, k.log[len(k.log)-1].at)
	}
	var live []logged
	var sum int64
	for _, e := range k.log {
		if at-e.at < m.logW {
			live = append(live, e)
			sum += e.n
		}
	}
	k.log = live
	switch {
	case n > m.b:
		d.RetryAfter = admit.InfDuration
	case sum+n > m.b:
		// Wait for the oldest events holding sum+n-B to leave.
		var gone int64
		for _, e := range k.log {
			if gone += e.n; gone >= sum+n-m.b {
				d.RetryAfter = time.Duration(e.at + m.logW - now)
				break
			}
		}
	case n > 0:
		d.Allowed = true
		k.log = append(k.log, logged{at, n})
		sum += n
	default:
		d.Allowed = true
	}
	d.Remaining = max(m.b-sum, 0)
	if len(k.log) > 0 {
		d.ResetAfter = time.Duration(k.log[len(k.log)-1].at + m.logW - now)
	}
	return d
}

// windowOf returns ⌊now/W⌋, the index of the window holding now.
func (m *model) windowOf(now int64) *big.Int { return windowIndex(m.c, now) }

// windowIndex returns ⌊now/w⌋.
func windowIndex(w *big.Rat, now int64) *big.Int {
	q := new(big.Rat).Quo(ratInt(now), w)
	return new(big.Int).Quo(q.Num(), q.Denom())
}

// windowStart returns k×W.
func (m *model) windowStart(k *big.Int) *big.Rat {
	return new(big.Rat).Mul(new(big.Rat).SetInt(k), m.c)
}

// until returns the time from now to instant x, rounded up to the
// nanosecond: 0 if x <= now, saturated at admit.InfDuration.
func until(now int64, x *big.Rat) time.Duration {
	d := new(big.Rat).Sub(x, ratInt(now))
	if d.Sign() <= 0 {
		return 0
	}
	c := new(big.Int).Neg(d.Num())
	c.Div(c, d.Denom()) // Euclidean: ⌊-x⌋
	c.Neg(c)            // ⌈x⌉
	if !c.IsInt64() {
		return admit.InfDuration
	}
	return time.Duration(c.Int64())
}

func ratInt(x int64) *big.Rat { return new(big.Rat).SetInt64(x) }

func mulInt(x *big.Rat, n int64) *big.Rat { return new(big.Rat).Mul(x, ratInt(n)) }

// floorRat returns ⌊x⌋ for x >= 0, saturated at math.MaxInt64.
func floorRat(x *big.Rat) int64 {
	q := new(big.Int).Quo(x.Num(), x.Denom())
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// ceilRat returns ⌈x⌉ for x >= 0, saturated at math.MaxInt64.
func ceilRat(x *big.Rat) int64 {
	q, r := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// allowDelay is Allow of a request with a MaxDelay: only GCRA and the
// buckets can hold a slot ahead.
func (m *model) allowDelay(r admit.Request) (admit.Decision, error) {
	if r.MaxDelay < 0 || (m.alg != admit.AlgGCRA && m.alg != admit.AlgTokenBucket && m.alg != admit.AlgLeakyBucket) {
		return admit.Decision{RetryAfter: admit.InfDuration}, fmt.Errorf("%w: admittest: Model(%v): MaxDelay %v", admit.ErrInvalidDelay, m.alg, r.MaxDelay)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxDelay = min(int64(r.MaxDelay), 1<<60)
	defer func() { m.maxDelay = 0 }()
	if r.At.IsZero() {
		r.At = time.Now()
	}
	d := m.decide(r.Key, r.N, r.At)
	if d.Delay > 0 {
		d.TimeToAct = r.At.Add(d.Delay)
	}
	return d, nil
}

// Refund gives back r.N events of r.Key at r.At, for GCRA and the buckets
// only (the delay scenarios' cancellations): the TAT moves back by N×T, not
// before r.At, unless the key owes nothing at r.At, or more than its
// capacity (a later delayed admission relies on the events). A bucket
// holding a delayed admission keeps the instant it last saw.
func (m *model) Refund(_ context.Context, r admit.Request) error {
	if err := m.check(r); err != nil {
		return err
	}
	if m.alg != admit.AlgGCRA && m.alg != admit.AlgTokenBucket && m.alg != admit.AlgLeakyBucket {
		return fmt.Errorf("%w: admittest: Model(%v) refunds only gcra and the buckets", admit.ErrInvalidConfig, m.alg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[r.Key]
	if k == nil || r.N <= 0 || m.mode != modeNormal {
		return nil
	}
	at := unixNanos(r.At)
	if m.alg != admit.AlgGCRA {
		at = max(at, k.last)
	}
	atR := ratInt(at)
	debt := new(big.Rat).Sub(k.tat, atR)
	if debt.Sign() <= 0 || debt.Cmp(m.c) > 0 {
		return nil
	}
	held := new(big.Rat).Sub(k.tat, ratInt(k.last)).Cmp(m.c) > 0
	if k.tat.Sub(k.tat, mulInt(m.t, r.N)); k.tat.Cmp(atR) < 0 {
		k.tat = atR
	}
	if !held {
		k.last = at
	}
	return nil
}
