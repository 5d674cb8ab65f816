package policy

// The Engine: its compiled form of a policy (domains, matching trees, rules and their layers), NewEngine, the limiters of inline limits, and Close.

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/limits"
)

// Engine enforces a Policy: it matches a request's descriptors to rules
// and asks their limiters, as one all-or-nothing decision (see Check).
//
// NewEngine builds one limiter per rule and limit kind (per tier for the
// rules of a tier table), each by the Backend of the rule's store (see
// Config.Backends): in memory (policy/backends.Memory: keyed.Limiter,
// quota.Quota, concurrency.Limiter), or in a shared store such as Redis
// (policy/backends.Redis), behind a compose.Guard or compose.GuardSlots
// applying the rule's failure policy. Adaptive limits and
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
// A rule that prefetches (Rule.Prefetch) has its rate limiter wrapped in
// a prefetch.Limiter, one per rule and tier, inside the Guard of its
// failure policy: a request is admitted from the blocks this instance
// holds while they last, Redis or not, and the failure policy decides
// when taking the next block fails.
//
// An Engine is safe for concurrent use. It starts no goroutine of its
// own (a prefetching limiter fetches blocks in the background); Close
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
// The error is an Errors (ErrInvalidPolicy) for an invalid policy or for
// rules naming a store the engine was not given (each Error, at the
// rule's store field, wraps ErrNoStore), wraps admit.ErrInvalidConfig
// for an invalid Config, naming the field, or is the error of building a
// limiter.
func NewEngine(p *Policy, cfg Config) (*Engine, error) {
	o, err := cfg.options()
	if err != nil {
		return nil, err
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
			_ = e.closePrefetch(true)
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
		_ = e.closePrefetch(true)
		return nil, err
	}
	e.own()
	return e, nil
}

// overrides holds the limiters of a domain's inline limits, one per
// distinct limit, made on first use.
type overrides struct {
	e        *Engine
	domain   string
	spec     Override
	store    store
	storeErr error // the store is missing
	mu       sync.Mutex
	m        atomic.Pointer[map[admit.Limit]*clayer]
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
	if o.storeErr != nil {
		return nil, fmt.Errorf("inline limit of domain %q: %w", truncate(o.domain), o.storeErr)
	}
	if c := limits.Compile(o.spec.Algorithm, l); c.Err != nil {
		return nil, fmt.Errorf("%w: inline limit: %v", ErrInvalidRequest, c.Err)
	}
	n := 0
	if old != nil {
		n = len(*old)
	}
	if n >= o.e.o.maxOverrides {
		return nil, fmt.Errorf("%w: domain %q has %d already", errTooManyOverrides, truncate(o.domain), n)
	}
	label := o.domain + "/override/" + l.String()
	c := &clayer{kind: admit.KindRate, class: classOf(admit.KindRate, o.store.shared), label: label, prefix: label + "/", limit: l}
	if c.limit.Burst == 0 && c.limit.Rate != admit.Inf {
		c.limit.Burst = c.limit.Rate
	}
	if err := o.e.buildRate(c, o.spec.Algorithm, l, o.store, o.spec.Failure, o.spec.Prefetch); err != nil {
		return nil, err
	}
	if c.pf != nil {
		c.pf.owner.Store(o.e)
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

// Close marks the engine closed: Check and Reset then fail with an error
// wrapping admit.ErrClosed ("policy: engine closed"). It
// releases the engine's inline-limit limiters, and closes the
// prefetching limiters of its rules (Rule.Prefetch; see
// prefetch.Limiter.Close), waiting up to two seconds for their fetches
// and for what their windows' blocks give back to the store, but those
// an engine built with Config.Previous e took over, which that engine's
// Close closes. The limiters of its other rules, which such an engine may
// share too, need no release (they start no goroutine), and the backends
// are not the engine's. Slots held by requests still in flight are given
// back by their compose.Held as usual. Close is idempotent; it returns
// the errors of giving blocks back, nil without prefetching.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	err := e.closePrefetch(false)
	for _, d := range e.domains {
		d.ov.mu.Lock()
		d.ov.m.Store(nil)
		d.ov.mu.Unlock()
	}
	return err
}

// HasDomain reports whether the policy has a domain of this name. A
// request naming another domain matches no rule (and so is admitted, as
// envoyproxy/ratelimit admits it); a caller that prefers to refuse it
// asks first.
func (e *Engine) HasDomain(name string) bool { return e.domains[name] != nil }
