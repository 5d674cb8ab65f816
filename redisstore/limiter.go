package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/internal/timeline"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// Limiter is a keyed limiter whose states live in Redis, so that every
// process using the same Redis, limiter name and algorithm enforces one
// limit per key. It decides exactly as the in-memory limiters of package
// keyed do (the same step functions, mirrored in Lua), on Redis's clock
// (TIME) or at instants the caller gives. A Limiter is safe for concurrent
// use; create it with Store.Limiter.
type Limiter struct {
	s      *Store
	alg    admit.Algorithm
	code   string
	own    *limits.Compiled
	limits limits.Cache
	name   string
	obs    admit.Observer
	// head is the part of each key after the hash tag: ":<code>:<name>:".
	head string
	// ownArgs holds the script's arguments for the own limit (per-call
	// limits keep theirs in limits.Compiled.Ext).
	ownArgs *lua.Limit
}

// Limiter returns a limiter configured by cfg, whose states live in the
// store's Redis. The error wraps admit.ErrInvalidConfig (a bad name, an
// unknown algorithm) or admit.ErrInvalidLimit.
func (s *Store) Limiter(cfg LimiterConfig) (*Limiter, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	alg := cfg.Algorithm
	code, ok := lua.Code(alg)
	if !ok {
		return nil, fmt.Errorf("%w: redisstore: unknown algorithm %v in Redis", admit.ErrInvalidConfig, alg)
	}
	lim := &Limiter{s: s, alg: alg, code: code, name: cfg.Name, obs: cfg.Observer}
	lim.own = limits.Compile(alg, cfg.Limit)
	if lim.own.Err != nil {
		return nil, lim.own.Err
	}
	lim.head = ":" + code + ":" + cfg.Name + ":"
	lim.ownArgs = lua.NewLimit(code, &lim.own.P)
	return lim, nil
}

// Algorithm returns the limiter's algorithm.
func (lim *Limiter) Algorithm() admit.Algorithm { return lim.alg }

// Limit returns the limiter's own limit, with Burst filled in.
func (lim *Limiter) Limit() admit.Limit { return lim.own.Limit }

// Allow decides whether r.N events may happen for r.Key at instant r.At,
// or now on Redis's clock when r.At is zero, under r.Limit (the limiter's
// own limit when r.Limit is zero), and if so consumes them. A denial is a
// Decision with Allowed false, not an error. r.N = 0 is a peek. A per-call
// limit lets one Limiter serve keys of several tiers; a key's state is kept
// across limits, as in package keyed. An explicit r.At is for exact tests
// and for callers that keep their own time line; keys written this way
// still expire on Redis's clock (see Config.MinTTL).
//
// The error is non-nil when nothing was decided: bad input
// (admit.ErrInvalidCost, admit.ErrInvalidLimit, admit.ErrKeyTooLong), Redis
// failing (ErrStore), ctx ending first (its error), or a closed store
// (admit.ErrClosed). Keys may hold any bytes.
//
// With r.MaxDelay (GCRA and the buckets), the script admits a request that
// fits within it and moves the key's state ahead, so its slot is held in
// Redis for every process; the Decision's Delay is the wait and its
// TimeToAct the instant the slot comes on the clock of the call (Redis's
// TIME when r.At is zero). The caller sleeps, not Redis: see admit.Wait. A
// refund at that TimeToAct gives the slot back if no later delayed request
// relies on it. A window algorithm with r.MaxDelay, or a negative
// r.MaxDelay, is an error wrapping admit.ErrInvalidDelay.
func (lim *Limiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	c, err := lim.compiled(r.Limit)
	if err != nil {
		return c.Refusal(lim.name), err
	}
	var maxDelay int64
	if r.MaxDelay != 0 {
		if maxDelay, err = limits.MaxDelay("redisstore", lim.alg, r.MaxDelay); err != nil {
			return c.Refusal(lim.name), err
		}
	}
	_, d, err := lim.decide(ctx, instant(r.At), r.Key, c, r.N, false, maxDelay)
	return d, err
}

// compiled returns the compiled limit of a request: the limiter's own for
// the zero Limit.
func (lim *Limiter) compiled(l admit.Limit) (*limits.Compiled, error) {
	if l == (admit.Limit{}) {
		return lim.own, nil
	}
	c := lim.limits.Get(lim.alg, l)
	return c, c.Err
}

// instant returns t on the time line, or -1 (Redis's clock) if t is zero.
func instant(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return algo.Clamp(timeline.Nanos(t))
}

// checkRequest returns the compiled limit of r and its MaxDelay in ns, or
// the error of bad input.
func (lim *Limiter) checkRequest(r admit.Request) (c *limits.Compiled, maxDelay int64, err error) {
	if c, err = lim.compiled(r.Limit); err == nil {
		err = lim.check(r.Key, r.N)
	}
	if err == nil && r.MaxDelay != 0 {
		maxDelay, err = limits.MaxDelay("redisstore", lim.alg, r.MaxDelay)
	}
	return c, maxDelay, err
}

// check refuses bad input.
func (lim *Limiter) check(key string, n int64) error { return lim.s.checkInput(key, n) }

// decide decides n events of one key at now (-1: Redis's clock), or, if
// partial is set, grants up to n of them (AllowAtMost) and returns how
// many (0 otherwise).
//
// For the deny cache a partial grant of n > 0 is a request of one event:
// a key denied one event is granted none, and a grant of fewer than n
// leaves the key denied one more (the decision after the grant), which is
// remembered; a grant of all n forgets the key's denial, as an admission
// does.
func (lim *Limiter) decide(ctx context.Context, now int64, key string, c *limits.Compiled, n int64, partial bool, maxDelay int64) (int64, admit.Decision, error) {
	if err := lim.check(key, n); err != nil {
		return 0, c.Refusal(lim.name), err
	}
	tag := hashOf(key)
	rkey := lim.redisKey(tag, key)
	explicit := now >= 0
	local := now
	if !explicit {
		local = timeline.Now()
	}
	one := n // the events the deny cache is asked about
	if partial && n > 0 {
		one = 1
	}
	s := lim.s
	if s.deny != nil {
		if r, ok := s.deny.get(rkey, c.Key, explicit, local, one, maxDelay); ok {
			return 0, lim.observe(key, n, c.Decision(r, lim.name)), nil
		}
	}
	p := s.getOp()
	if partial {
		p.mode = lua.Partial
	}
	p.items = append(p.items, item{key: rkey, limit: lim.argsOf(c), n: n, delay: maxDelay})
	lim.fill(p, now, tag)
	if err := s.do(ctx, p); err != nil {
		return 0, c.Refusal(lim.name), err
	}
	r, at := p.results[0], p.at
	var granted int64
	if partial {
		granted = p.granted[0]
	}
	s.putOp(p)
	if s.deny != nil {
		rec := r
		if partial && granted < n {
			rec.Allowed = false // the denial of one more
		}
		s.deny.record(rkey, c.Key, explicit, local, one, rec)
	}
	d := c.Decision(r, lim.name)
	if maxDelay > 0 {
		limits.Delayed(&d, at)
	}
	return granted, lim.observe(key, n, d), nil
}

// fill sets an op's instant and slot.
func (lim *Limiter) fill(p *op, now int64, tag uint64) {
	p.now = ""
	if now >= 0 {
		p.now = strconv.FormatInt(now, 10)
	}
	p.tag = tag
}

// argsOf returns the script's arguments for limit c, formatted once per
// limit, so that a call sends each limit once.
func (lim *Limiter) argsOf(c *limits.Compiled) *lua.Limit {
	if c == lim.own {
		return lim.ownArgs
	}
	if a := c.Ext.Load(); a != nil {
		if l, ok := (*a).(*lua.Limit); ok {
			return l
		}
	}
	l := lua.NewLimit(lim.code, &c.P)
	var a any = l
	c.Ext.Store(&a)
	return l
}

func (lim *Limiter) observe(key string, n int64, d admit.Decision) admit.Decision {
	if lim.obs != nil {
		lim.obs.Decided(admit.DecisionEvent{Limiter: lim.name, Key: key, N: n, Decision: d})
	}
	return d
}

// Healthy reports whether the Store's latest round trip to Redis got an
// answer. Decisions from the deny cache are made without Redis and say
// nothing of its health, so a failure policy (package compose) asks this
// before it takes a success for a sign that Redis is back. It makes the
// Limiter an admit.HealthReporter.
func (lim *Limiter) Healthy() bool { return !lim.s.down.Load() }

// Cached returns the decision for r if the Store's deny cache holds it (see
// the package documentation), without calling Redis; ok is false
// otherwise. An open circuit breaker (package compose) uses it to keep
// denying known denied keys while Redis is down. It makes the Limiter an
// admit.Cacher.
func (lim *Limiter) Cached(r admit.Request) (d admit.Decision, ok bool) {
	if lim.s.deny == nil || lim.check(r.Key, r.N) != nil {
		return admit.Decision{}, false
	}
	c, err := lim.compiled(r.Limit)
	if err != nil {
		return admit.Decision{}, false
	}
	now := instant(r.At)
	explicit := now >= 0
	if !explicit {
		now = timeline.Now()
	}
	maxDelay, err := limits.MaxDelay("redisstore", lim.alg, r.MaxDelay)
	if err != nil {
		return admit.Decision{}, false
	}
	res, ok := lim.s.deny.get(lim.redisKey(hashOf(r.Key), r.Key), c.Key, explicit, now, r.N, maxDelay)
	if !ok {
		return admit.Decision{}, false
	}
	return lim.observe(r.Key, r.N, c.Decision(res, lim.name)), true
}

// Reset forgets key's state in Redis (and in this store's deny cache): the
// key starts full. Other processes' deny caches keep their denials of the
// key until those end.
func (lim *Limiter) Reset(ctx context.Context, key string) error {
	if err := lim.check(key, 0); err != nil {
		return err
	}
	rkey := lim.redisKey(hashOf(key), key)
	if lim.s.deny != nil {
		lim.s.deny.forget(rkey)
	}
	if err := lim.s.client.Del(ctx, rkey).Err(); err != nil {
		return storeError(err)
	}
	return nil
}

// Refund gives back r.N events admitted for r.Key at instant r.At (Redis's
// clock when zero), under r.Limit (the limiter's own when zero): it undoes
// an Allow that a later check made pointless (a later layer of a
// compose.All chain refused the request). The script gives them back
// exactly as keyed.Limiter.Refund does at the instant Redis reads (see
// there): GCRA and the buckets move the key's state back by r.N emission
// intervals, never past full; the windows take r.N off the count of the
// window they were counted in, and give back nothing in a later one; the
// sliding log drops r.N of its newest events. A key Redis does not hold is
// full: nothing is given back or written. The refund is one script call,
// pipelined with the other calls in flight; the key's expiry follows its
// new state.
//
// The refund makes this Store's deny cache forget the key. Other Stores
// (other processes) keep a denial of the key they cached until it ends:
// they deny what Redis would now admit, which errs on the side of the
// limit.
//
// The error is non-nil when nothing may have been given back: bad input
// (admit.ErrInvalidCost, admit.ErrInvalidLimit, admit.ErrKeyTooLong), Redis
// failing (ErrStore), ctx ending first (its error; the refund may then
// still happen), or a closed store (admit.ErrClosed). r.N = 0 does nothing.
func (lim *Limiter) Refund(ctx context.Context, r admit.Request) error {
	c, err := lim.compiled(r.Limit)
	if err != nil {
		return err
	}
	return lim.refund(ctx, instant(r.At), r.Key, c, r.N)
}

// refund gives back n events of key at now (-1: Redis's clock).
func (lim *Limiter) refund(ctx context.Context, now int64, key string, c *limits.Compiled, n int64) error {
	if err := lim.check(key, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	tag := hashOf(key)
	rkey := lim.redisKey(tag, key)
	s := lim.s
	p := s.getOp()
	p.mode = lua.Refund
	p.items = append(p.items, item{key: rkey, limit: lim.argsOf(c), n: n})
	lim.fill(p, now, tag)
	err := s.do(ctx, p)
	if err == nil {
		s.putOp(p)
	}
	if s.deny != nil {
		// After the call, so that a denial recorded while it was on its
		// way (decided before the refund) is forgotten too.
		s.deny.forget(rkey)
	}
	return err
}

// hashOf returns the FNV-1a hash of a key, whose 16 hex digits are its
// hash tag.
func hashOf(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// tagOf returns the hash tag of a key: the 16 hex digits of its FNV-1a
// hash, so that any bytes in the key, '{' and '}' included, leave its slot
// alone.
func tagOf(key string) string {
	var b [16]byte
	putHex(b[:], hashOf(key))
	return string(b[:])
}

func putHex(b []byte, v uint64) {
	const hex = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hex[v&15]
		v >>= 4
	}
}

// redisKey is prefix "{" tag "}" ":" code ":" name ":" key, where tag is
// the hex of h. The prefix has no braces and the tag no '}', so Redis
// Cluster hashes the tag alone; the code and name have no ':', so distinct
// (name, key) pairs never share a key.
func (lim *Limiter) redisKey(h uint64, key string) string {
	var b strings.Builder
	b.Grow(len(lim.s.prefix) + 18 + len(lim.head) + len(key))
	b.WriteString(lim.s.prefix)
	var tag [18]byte
	tag[0], tag[17] = '{', '}'
	putHex(tag[1:17], h)
	b.Write(tag[:])
	b.WriteString(lim.head)
	b.WriteString(key)
	return b.String()
}

// AllowBatch decides each request of reqs as Allow would, in as few round
// trips as the keys' slots allow (one on a standalone Redis), and appends
// the decisions to dst, which may be nil. Each request is decided on its
// own (see Store.AllowLayers for all or nothing). A request that could not
// be decided gets a refusal, and the first such error is returned, naming
// its index.
func (lim *Limiter) AllowBatch(ctx context.Context, reqs []admit.Request, dst []admit.Decision) ([]admit.Decision, error) {
	return lim.allowBatch(ctx, reqs, dst)
}

// The contract of admit that a Limiter meets.
var (
	_ admit.KeyedLimiter   = (*Limiter)(nil)
	_ admit.Refunder       = (*Limiter)(nil)
	_ admit.Resetter       = (*Limiter)(nil)
	_ admit.HealthReporter = (*Limiter)(nil)
	_ admit.Cacher         = (*Limiter)(nil)
	_ admit.PartialAllower = (*Limiter)(nil)
)

func (lim *Limiter) allowBatch(ctx context.Context, reqs []admit.Request, dst []admit.Decision) ([]admit.Decision, error) {
	s := lim.s
	clock := int64(-1) // the local clock, once read
	type pending struct {
		c        *limits.Compiled
		rkey     string
		p        *op
		err      error
		d        admit.Decision
		done     bool
		explicit bool
		local    int64 // the instant on the local time line
	}
	ps := make([]pending, len(reqs))
	var sent []*op
	for i, r := range reqs {
		q := &ps[i]
		var maxDelay int64
		q.c, maxDelay, q.err = lim.checkRequest(r)
		if q.err != nil {
			q.d, q.done = q.c.Refusal(lim.name), true
			continue
		}
		tag := hashOf(r.Key)
		q.rkey = lim.redisKey(tag, r.Key)
		now := instant(r.At)
		q.explicit, q.local = now >= 0, now
		if !q.explicit {
			if clock < 0 {
				clock = timeline.Now()
			}
			q.local = clock
		}
		if s.deny != nil {
			if res, ok := s.deny.get(q.rkey, q.c.Key, q.explicit, q.local, r.N, maxDelay); ok {
				q.d, q.done = q.c.Decision(res, lim.name), true
				continue
			}
		}
		q.p = s.getOp()
		q.p.items = append(q.p.items, item{key: q.rkey, limit: lim.argsOf(q.c), n: r.N, delay: maxDelay})
		lim.fill(q.p, now, tag)
		sent = append(sent, q.p)
	}
	if len(sent) > 0 {
		if err := s.doBatch(ctx, sent); err != nil {
			for i := range ps {
				if q := &ps[i]; !q.done {
					q.d, q.err, q.done = q.c.Refusal(lim.name), err, true
				}
			}
		}
	}
	var first error
	for i, r := range reqs {
		q := &ps[i]
		if !q.done {
			if q.p.err != nil {
				q.d, q.err = q.c.Refusal(lim.name), q.p.err
			} else {
				res := q.p.results[0]
				if s.deny != nil {
					s.deny.record(q.rkey, q.c.Key, q.explicit, q.local, r.N, res)
				}
				q.d = q.c.Decision(res, lim.name)
				if r.MaxDelay > 0 {
					limits.Delayed(&q.d, q.p.at)
				}
			}
			s.putOp(q.p)
		}
		if q.err != nil && first == nil {
			first = fmt.Errorf("redisstore: request %d: %w", i, q.err)
		}
		dst = append(dst, lim.observe(r.Key, r.N, q.d))
	}
	return dst, first
}
