package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/quota"
	"github.com/admit-go/admit/redisstore"
)

// Engine enforces a Policy: it matches a request's descriptors to rules
// and asks their limiters, as one all-or-nothing decision (see Check).
//
// NewEngine builds one limiter per rule and limit kind (per tier for the
// rules of a tier table): keyed.Limiter, quota.Quota and
// concurrency.Limiter for rules kept in memory; redisstore's Limiter,
// Quota and ConcurrencyLimiter for rules kept in Redis, each behind a
// compose.Guard applying the rule's failure policy. Adaptive limits and
// lanes hold an adaptive.Gradient, adaptive.AIMD, fair.RateLanes or
// fair.SlotLanes per key, made on first use (see the package
// documentation). Inline limits (Descriptor.Limit) get limiters on first
// use, per distinct limit.
//
// Checking a request whose rules are kept in memory allocates nothing
// (but the keys of concurrency caps with a value per key, which the
// concurrency limiter stores): rules are compiled into a matching tree at
// NewEngine, and keys and per-request state are built in scratch space
// that the caller's Result keeps from check to check.
//
// An Engine is safe for concurrent use. It starts no goroutine; Close
// marks it closed. The zero Engine is not usable; create one with
// NewEngine.
type Engine struct {
	domains map[string]*cdomain
	byPrint map[string]*clayer
	o       options
	closed  atomic.Bool
}

// cdomain is a compiled domain.
type cdomain struct {
	name     string
	root     *cnode
	replaces bool // a rule of the domain replaces others
	shadow   bool
	ov       *overrides
}

// cnode is a node of a domain's matching tree (see Rule).
type cnode struct {
	exact    map[entryKey]*cnode
	prefix   []cedge
	any      map[string]*cnode
	rule     *crule
	children bool
}

type cedge struct {
	key, prefix string
	node        *cnode
}

// crule is a compiled rule.
type crule struct {
	name     string
	alias    string
	shadow   bool
	depth    int
	constKey bool   // every descriptor it matches has the same key
	key      string // that key
	own      *cset  // its limits (nil with a tier table)
	table    *ctable
	tierIdx  int // the entry whose value picks the tier
	exempt   []cexempt
	replaces []string
}

// cset is the layers of a rule or a tier.
type cset struct {
	tier      string
	layers    []*clayer
	unlimited bool
}

type ctable struct {
	assign map[string]*cset
	def    *cset
}

type cexempt struct {
	idx      int
	values   map[string]struct{}
	prefixes []netip.Prefix
}

// NewEngine returns an engine enforcing p, after checking it (Validate).
// The error is an Errors (ErrInvalidPolicy) for an invalid policy, wraps
// ErrNoStore for a rule kept in Redis without WithRedis, ErrInvalidOption
// for an invalid option, or is the error of building a limiter.
func NewEngine(p *Policy, opts ...Option) (*Engine, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	if p == nil {
		p = &Policy{}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{domains: map[string]*cdomain{}, byPrint: map[string]*clayer{}, o: o}
	var prev map[string]*clayer
	var prevDomains map[string]*cdomain
	if old := o.prev; old != nil && old.o.compatible(&e.o) {
		prev, prevDomains = old.byPrint, old.domains
	}
	b := &builder{e: e, prev: prev}
	var errs errList
	for i, d := range p.Domains {
		cd, err := b.domain(d, i)
		if err != nil {
			if es, ok := err.(Errors); ok {
				errs.errs = append(errs.errs, es...)
				continue
			}
			return nil, err
		}
		if od := prevDomains[cd.name]; od != nil && od.ov.spec == cd.ov.spec {
			if m := od.ov.m.Load(); m != nil {
				cd.ov.m.Store(m)
			}
		}
		e.domains[cd.name] = cd
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return e, nil
}

// builder compiles a policy.
type builder struct {
	e    *Engine
	prev map[string]*clayer
}

func (b *builder) domain(d *Domain, i int) (*cdomain, error) {
	e := b.e
	cd := &cdomain{name: d.Name, root: &cnode{}, shadow: d.Shadow || e.o.shadow}
	spec := d.Override
	spec.Store = e.resolve(spec.Store)
	if spec.Store == StoreLocal {
		spec.Failure = Failure{}
	}
	cd.ov = &overrides{e: e, domain: d.Name, spec: spec}
	var errs errList
	for j, r := range d.Rules {
		cr, err := b.rule(d, r)
		if err != nil {
			src := r.src
			if src == nil {
				src = &source{path: fmt.Sprintf("domains[%d].rules[%d]", i, j)}
			}
			path, pos := src.at("store")
			errs.addErr(pos, path, err.Error(), err)
			continue
		}
		if len(cr.replaces) > 0 {
			cd.replaces = true
		}
		cd.insert(r, cr)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return cd, nil
}

// insert adds a rule to the matching tree.
func (cd *cdomain) insert(r *Rule, cr *crule) {
	n := cd.root
	for _, m := range r.Match {
		n.children = true
		switch m.Kind {
		case MatchExact:
			if n.exact == nil {
				n.exact = map[entryKey]*cnode{}
			}
			k := entryKey{m.Key, m.Value}
			if n.exact[k] == nil {
				n.exact[k] = &cnode{}
			}
			n = n.exact[k]
		case MatchPrefix:
			var next *cnode
			for _, e := range n.prefix {
				if e.key == m.Key && e.prefix == m.Value {
					next = e.node
					break
				}
			}
			if next == nil {
				next = &cnode{}
				n.prefix = append(n.prefix, cedge{m.Key, m.Value, next})
			}
			n = next
		default:
			if n.any == nil {
				n.any = map[string]*cnode{}
			}
			if n.any[m.Key] == nil {
				n.any[m.Key] = &cnode{}
			}
			n = n.any[m.Key]
		}
	}
	n.rule = cr
}

// resolve returns where a rule of store s is kept.
func (e *Engine) resolve(s Store) Store {
	if s == StoreDefault {
		if e.o.store != nil {
			return StoreRedis
		}
		return StoreLocal
	}
	return s
}

func (b *builder) rule(d *Domain, r *Rule) (*crule, error) {
	cr := &crule{
		name:     r.Name,
		alias:    r.alias(),
		shadow:   r.Shadow,
		depth:    len(r.Match),
		replaces: append([]string(nil), r.Replaces...),
	}
	if d.envoy && r.Alias == "" {
		// envoyproxy/ratelimit replaces only limits with a name.
		cr.alias = ""
	}
	cr.constKey = r.Shared
	if !r.Shared {
		cr.constKey = true
		for _, m := range r.Match {
			if m.Kind != MatchExact {
				cr.constKey = false
			}
		}
		if cr.constKey {
			var buf []byte
			for _, m := range r.Match {
				buf = appendValue(buf, m.Value)
			}
			cr.key = string(buf)
		}
	}
	for _, x := range r.Exempt {
		ce := cexempt{idx: -1, values: map[string]struct{}{}}
		for i, m := range r.Match {
			if m.Key == x.Key {
				ce.idx = i
				break
			}
		}
		for _, v := range x.Values {
			ce.values[v] = struct{}{}
			if p, err := netip.ParsePrefix(v); err == nil {
				ce.prefixes = append(ce.prefixes, p.Masked())
			}
		}
		cr.exempt = append(cr.exempt, ce)
	}
	store := b.e.resolve(r.Store)
	if r.Tiers == nil && r.Limits.adaptive() {
		store = StoreLocal // all of the rule, as Validate requires
	}
	if store == StoreRedis && b.e.o.store == nil {
		return nil, fmt.Errorf("%w: the rule is kept in Redis; give the engine a Redis store (WithRedis)", ErrNoStore)
	}
	if r.Tiers != nil {
		tk := r.TierKey
		if tk == "" {
			tk = r.Match[len(r.Match)-1].Key
		}
		for i, m := range r.Match {
			if m.Key == tk {
				cr.tierIdx = i
				break
			}
		}
		t := &ctable{assign: map[string]*cset{}}
		sets := map[string]*cset{}
		for _, name := range sortedKeys(r.Tiers.Tiers) {
			tier := r.Tiers.Tiers[name]
			set, err := b.set(r, cr, tier.Name, &tier.Limits, store)
			if err != nil {
				return nil, err
			}
			sets[name] = set
		}
		t.def = sets[r.Tiers.Default]
		for v, name := range r.Tiers.Assign {
			t.assign[v] = sets[name]
		}
		cr.table = t
		return cr, nil
	}
	set, err := b.set(r, cr, "", &r.Limits, store)
	if err != nil {
		return nil, err
	}
	cr.own = set
	return cr, nil
}

// set builds the layers of limits l of rule r, compiled as cr (of tier, if
// not empty).
func (b *builder) set(r *Rule, cr *crule, tier string, l *Limits, store Store) (*cset, error) {
	s := &cset{tier: tier, unlimited: l.Unlimited}
	kinds := 0
	for _, has := range []bool{l.Rate != nil, l.Quota != nil, l.Concurrency != nil, l.AdaptiveConcurrency != nil, l.AdaptiveRate != nil, l.Lanes != nil} {
		if has {
			kinds++
		}
	}
	label := r.Name
	if tier != "" {
		label += "/" + tier
	}
	sub := func(kind string) string {
		if kinds > 1 {
			return label + "/" + kind
		}
		return label
	}
	redis := store == StoreRedis
	failure := r.Failure
	if !redis {
		failure = Failure{}
	}
	if l.Rate != nil {
		c, err := b.layer(admit.KindRate, sub("rate"), redis, failure, fmt.Sprintf("rate %v %v", l.Algorithm, *l.Rate), func(c *clayer) error {
			return b.e.buildRate(c, l.Algorithm, *l.Rate, redis, failure)
		})
		if err != nil {
			return nil, err
		}
		c.limit = *l.Rate
		if c.limit.Burst == 0 && c.limit.Rate != admit.Inf {
			c.limit.Burst = c.limit.Rate
		}
		s.layers = append(s.layers, c)
	}
	if q := l.Quota; q != nil {
		loc := "UTC"
		if q.Location != nil {
			loc = q.Location.String()
		}
		c, err := b.layer(admit.KindQuota, sub("quota"), redis, failure, fmt.Sprintf("quota %d/%v %s %v", q.Limit, q.Period, loc, q.WeekStart), func(c *clayer) error {
			return b.e.buildQuota(c, q, redis, failure)
		})
		if err != nil {
			return nil, err
		}
		c.limit = admit.Limit{Rate: q.Limit, Burst: q.Limit}
		s.layers = append(s.layers, c)
	}
	if cc := l.Concurrency; cc != nil {
		c, err := b.layer(admit.KindConcurrency, sub("concurrency"), redis, failure, fmt.Sprintf("concurrency %d %v", cc.Max, cc.Lease), func(c *clayer) error {
			return b.e.buildConcurrency(c, cc, redis, failure)
		})
		if err != nil {
			return nil, err
		}
		c.limit = admit.Limit{Rate: cc.Max, Burst: cc.Max}
		s.layers = append(s.layers, c)
	}
	if err := b.memoryOnly(r, cr, s, l, sub); err != nil {
		return nil, err
	}
	return s, nil
}

// memoryOnly adds the layers of the limits of l kept in memory only to s:
// adaptive ones and lanes (of a rule, never of a tier).
func (b *builder) memoryOnly(r *Rule, cr *crule, s *cset, l *Limits, sub func(string) string) error {
	single := cr.constKey
	if a := l.AdaptiveRate; a != nil {
		c, err := b.layer(admit.KindRate, sub("adaptive_rate"), false, Failure{}, fmt.Sprintf("%v single=%v", a, single), func(c *clayer) error {
			return b.e.buildAIMD(c, a, single)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	if ln := l.Lanes; ln != nil {
		key := ln.laneKey(r)
		idx, only := -1, r.Shared
		if !only {
			only = true
			for _, m := range r.Match {
				if m.Key != key && m.Kind != MatchExact {
					only = false
				}
			}
		}
		for i, m := range r.Match {
			if m.Key == key {
				idx = i
				break
			}
		}
		if idx < 0 {
			return fmt.Errorf("%w: lanes: no match entry has key %q", ErrInvalidPolicy, key)
		}
		kind := admit.KindRate
		if ln.Budget == nil {
			kind = admit.KindConcurrency
		}
		c, err := b.layer(kind, sub("lanes"), false, Failure{}, fmt.Sprintf("%v lane=%d only=%v", ln, idx, only), func(c *clayer) error {
			c.lanes, c.lane, c.laneOnly = true, idx, only
			if ln.Budget != nil {
				return b.e.buildRateLanes(c, ln, only)
			}
			return b.e.buildSlotLanes(c, ln, only)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	if a := l.AdaptiveConcurrency; a != nil {
		c, err := b.layer(admit.KindConcurrency, sub("adaptive_concurrency"), false, Failure{}, fmt.Sprintf("%v single=%v", a, single), func(c *clayer) error {
			return b.e.buildGradient(c, a, single)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	return nil
}

// layer returns the layer of this definition: the previous engine's if it
// had one (WithPrevious), else a new one built by build.
func (b *builder) layer(kind admit.Kind, label string, redis bool, f Failure, def string, build func(*clayer) error) (*clayer, error) {
	print := fmt.Sprintf("%s|%v|%v|%s|%+v", label, kind, redis, def, f)
	if c := b.prev[print]; c != nil {
		b.e.byPrint[print] = c
		return c, nil
	}
	if c := b.e.byPrint[print]; c != nil {
		return c, nil
	}
	c := &clayer{kind: kind, class: classOf(kind, redis), label: label, prefix: label + "/", print: print}
	if err := build(c); err != nil {
		return nil, err
	}
	b.e.byPrint[print] = c
	return c, nil
}

// name returns a limiter's name: the key prefix and the label, escaped for
// Redis (which refuses ':', '{' and '}' in names) when redis is set.
func (e *Engine) name(label string, redis bool) string {
	n := e.o.prefix + label
	if !redis || !strings.ContainsAny(n, ":{}%") {
		return n
	}
	var sb strings.Builder
	for i := 0; i < len(n); i++ {
		switch c := n[i]; c {
		case ':', '{', '}', '%':
			sb.WriteByte('%')
			sb.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (e *Engine) keyedOptions(name string) []keyed.Option {
	opts := []keyed.Option{keyed.WithClock(e.o.clock), keyed.WithName(name), keyed.WithObserver(e.o.obs)}
	if e.o.maxKeys > 0 {
		opts = append(opts, keyed.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) guard(primary compose.Limiter, label string, f Failure, local compose.Limiter) (compose.Limiter, compose.Refunder, error) {
	var p compose.Policy
	switch f.Policy {
	case FailClosed:
		p = compose.FailClosed
	case Fallback:
		p = compose.Fallback(local)
	default:
		p = compose.FailOpen
	}
	if f.Breaker {
		p = compose.Breaker(p)
	}
	opts := []compose.Option{compose.WithName(label), compose.WithClock(e.o.clock), compose.WithObserver(e.o.obs), compose.WithLogger(e.o.log)}
	if f.Timeout > 0 {
		opts = append(opts, compose.WithTimeout(f.Timeout))
	}
	if f.Threshold > 0 {
		opts = append(opts, compose.WithThreshold(f.Threshold))
	}
	if f.ProbeInterval > 0 {
		opts = append(opts, compose.WithProbeInterval(f.ProbeInterval))
	}
	if f.RetryAfter > 0 {
		opts = append(opts, compose.WithRetryAfter(f.RetryAfter))
	}
	g, err := compose.NewGuard(primary, p, opts...)
	if err != nil {
		return nil, nil, err
	}
	var lim compose.Limiter = g
	r, _ := lim.(compose.Refunder)
	return g, r, nil
}

func share(f Failure) int {
	if f.LocalShare > 0 {
		return f.LocalShare
	}
	return 1
}

func (e *Engine) buildRate(c *clayer, alg admit.Algorithm, l admit.Limit, redis bool, f Failure) error {
	if !redis {
		lim, err := keyed.New(alg, l, e.keyedOptions(e.name(c.label, false))...)
		if err != nil {
			return err
		}
		c.lim, c.refund = lim, refunder(lim)
		return nil
	}
	rl, err := e.o.store.Limiter(alg, l, redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs))
	if err != nil {
		return err
	}
	var primary compose.Limiter = rl
	if e.o.storeClock != nil {
		primary = &clocked{lim: rl, clock: e.o.storeClock}
	}
	var local compose.Limiter
	if f.Policy == Fallback {
		if local, err = compose.LocalShare(alg, l, share(f), e.keyedOptions(e.name(c.label+"/fallback", false))...); err != nil {
			return err
		}
	}
	c.lim, c.refund, err = e.guard(primary, c.label, f, local)
	return err
}

// location returns the time zone of q (UTC for nil).
func location(q *Quota) *time.Location {
	if q.Location == nil {
		return time.UTC
	}
	return q.Location
}

// refunder returns l as a compose.Refunder, or nil.
func refunder(l any) compose.Refunder {
	r, _ := l.(compose.Refunder)
	return r
}

func (e *Engine) quotaOptions(name string, q *Quota) []quota.Option {
	opts := []quota.Option{quota.WithClock(e.o.clock), quota.WithName(name), quota.WithObserver(e.o.obs), quota.WithLocation(location(q)), quota.WithWeekStart(q.WeekStart)}
	if e.o.maxKeys > 0 {
		opts = append(opts, quota.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) buildQuota(c *clayer, q *Quota, redis bool, f Failure) error {
	if !redis {
		lim, err := quota.New(q.Limit, q.Period, e.quotaOptions(e.name(c.label, false), q)...)
		if err != nil {
			return err
		}
		c.lim, c.refund = lim, refunder(lim)
		return nil
	}
	rq, err := e.o.store.Quota(q.Limit, q.Period, redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs),
		redisstore.WithLocation(location(q)), redisstore.WithWeekStart(q.WeekStart))
	if err != nil {
		return err
	}
	var primary compose.Limiter = rq
	if e.o.storeClock != nil {
		primary = &clocked{lim: rq, clock: e.o.storeClock}
	}
	var local compose.Limiter
	if f.Policy == Fallback {
		n := (q.Limit + int64(share(f)) - 1) / int64(share(f))
		if local, err = quota.New(n, q.Period, e.quotaOptions(e.name(c.label+"/fallback", false), q)...); err != nil {
			return err
		}
	}
	c.lim, c.refund, err = e.guard(primary, c.label, f, local)
	return err
}

func (e *Engine) concurrencyOptions(name string, cc *Concurrency) []concurrency.Option {
	opts := []concurrency.Option{concurrency.WithClock(e.o.clock), concurrency.WithName(name), concurrency.WithObserver(e.o.obs)}
	if cc.Lease > 0 {
		opts = append(opts, concurrency.WithLease(cc.Lease))
	}
	if e.o.maxKeys > 0 {
		opts = append(opts, concurrency.WithMaxKeys(e.o.maxKeys))
	}
	return opts
}

func (e *Engine) buildConcurrency(c *clayer, cc *Concurrency, redis bool, f Failure) error {
	if !redis {
		lim, err := concurrency.New(cc.Max, e.concurrencyOptions(e.name(c.label, false), cc)...)
		if err != nil {
			return err
		}
		c.slots = newLocalSlots(lim)
		return nil
	}
	opts := []redisstore.Option{redisstore.WithName(e.name(c.label, true)), redisstore.WithObserver(e.o.obs)}
	if cc.Lease > 0 {
		opts = append(opts, redisstore.WithLease(cc.Lease))
	}
	rc, err := e.o.store.Concurrency(cc.Max, opts...)
	if err != nil {
		return err
	}
	var local *localSlots
	if f.Policy == Fallback {
		n := (cc.Max + int64(share(f)) - 1) / int64(share(f))
		lim, err := concurrency.New(n, e.concurrencyOptions(e.name(c.label+"/fallback", false), cc)...)
		if err != nil {
			return err
		}
		local = newLocalSlots(lim)
	}
	c.slots = newRedisSlots(rc, c.label, f, local)
	return nil
}

// overrides holds the limiters of a domain's inline limits, one per
// distinct limit, made on first use.
type overrides struct {
	e      *Engine
	domain string
	spec   Override
	mu     sync.Mutex
	m      atomic.Pointer[map[admit.Limit]*clayer]
}

// get returns the layer of inline limit l.
func (o *overrides) get(l admit.Limit) (*clayer, error) {
	if m := o.m.Load(); m != nil {
		if c := (*m)[l]; c != nil {
			return c, nil
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.m.Load()
	if old != nil {
		if c := (*old)[l]; c != nil {
			return c, nil
		}
	}
	if c := limits.Compile(o.spec.Algorithm, l); c.Err != nil {
		return nil, fmt.Errorf("%w: inline limit: %v", ErrInvalidRequest, c.Err)
	}
	n := 0
	if old != nil {
		n = len(*old)
	}
	if n >= o.e.o.maxOverrides {
		return nil, fmt.Errorf("%w: domain %q has %d already", ErrTooManyOverrides, truncate(o.domain), n)
	}
	redis := o.spec.Store == StoreRedis
	label := o.domain + "/override/" + l.String()
	c := &clayer{kind: admit.KindRate, class: classOf(admit.KindRate, redis), label: label, prefix: label + "/", limit: l}
	if c.limit.Burst == 0 && c.limit.Rate != admit.Inf {
		c.limit.Burst = c.limit.Rate
	}
	if err := o.e.buildRate(c, o.spec.Algorithm, l, redis, o.spec.Failure); err != nil {
		return nil, err
	}
	m := make(map[admit.Limit]*clayer, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[l] = c
	o.m.Store(&m)
	return c, nil
}

// Close marks the engine closed: Check then fails with ErrClosed. It
// releases the engine's inline-limit limiters; the limiters of its rules,
// which an engine built WithPrevious(e) may share, need no release (they
// start no goroutine), and the Redis store is not the engine's. Slots held
// by requests still in flight are given back by their compose.Held as
// usual. Close is idempotent and always returns nil.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	for _, d := range e.domains {
		d.ov.mu.Lock()
		d.ov.m.Store(nil)
		d.ov.mu.Unlock()
	}
	return nil
}

// HasDomain reports whether the policy has a domain of this name. A
// request naming another domain matches no rule (and so is admitted, as
// envoyproxy/ratelimit admits it); a caller that prefers to refuse it
// asks first.
func (e *Engine) HasDomain(name string) bool { return e.domains[name] != nil }
