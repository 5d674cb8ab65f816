package policy

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// Entry is one entry of a descriptor: a key ("remote_address", "tenant",
// "route") and its value for the request. Both are arbitrary strings.
type Entry struct {
	Key   string
	Value string
}

// Descriptor is one descriptor of a request, as in Envoy's rate-limit
// service: an ordered list of entries, which rules match (see Rule), with
// optional per-descriptor cost and limit. The zero Descriptor has no
// entries, which Check refuses.
type Descriptor struct {
	// Entries are the descriptor's entries, outermost first. At least
	// one.
	Entries []Entry

	// Hits is the cost of the request for this descriptor's rules when
	// OwnHits is set (Envoy's per-descriptor hits_addend, where 0 checks
	// without consuming); otherwise the request's Hits applies.
	Hits    int64
	OwnHits bool

	// Limit, if not nil, is the limit of this descriptor, given by the
	// caller instead of the policy's rules (Envoy's descriptor limit
	// override: requests_per_unit and unit). The domain's
	// Override says how it is enforced; its key is the descriptor's
	// entries, keys and values. Rules are not matched for it.
	Limit *admit.Limit
}

// Request is what Check decides: a request of the named domain carrying
// descriptors, costing Hits events for each. Check only reads it. The
// zero Request has no descriptors and is admitted.
type Request struct {
	// Domain names the policy's domain whose rules apply. A domain the
	// policy does not have matches nothing (see HasDomain).
	Domain string
	// Descriptors are the request's descriptors; each is matched on its
	// own, and the request is admitted iff every matched rule admits it.
	Descriptors []Descriptor
	// Hits is the request's cost in events (in slots for concurrency
	// caps). 0 is a peek: it checks without consuming. (Envoy's
	// request-level hits_addend counts 0 as 1: a server passes
	// max(1, hits_addend).)
	Hits int64
}

// Code is a descriptor's outcome, numbered as Envoy's
// RateLimitResponse.Code.
type Code uint8

const (
	CodeUnknown   Code = 0
	CodeOK        Code = 1 // within its limits
	CodeOverLimit Code = 2 // a limit refused the request
)

// String returns "OK", "OVER_LIMIT" or "UNKNOWN".
func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeOverLimit:
		return "OVER_LIMIT"
	}
	return "UNKNOWN"
}

// Status is the outcome of one descriptor of a request: what an Envoy
// descriptor status reports (code, current limit, remaining, duration until
// reset), and which rule decided and why. The limit's side of it is an
// admit.Decision, as the request's is in Result. The zero Status
// (CodeUnknown) is never reported.
type Status struct {
	// Code is CodeOverLimit if one of the descriptor's limits refused the
	// request (and the rule is not in shadow mode), else CodeOK.
	Code Code

	// Rule names the rule the descriptor matched ("" if none; for an
	// inline limit, "<domain>/override/<limit>"), Tier the tier of a tier
	// table's rule.
	Rule string
	Tier string

	// Decision is that of the most restrictive of the descriptor's limits
	// (the one that refused, if one did): its Kind, its Limit (the
	// current limit: Rate per Period, Burst), Remaining, RetryAfter and
	// ResetAfter (the time until it is full again). Its Rule names the
	// limit: the rule, then its tier, then the kind of limit if the rule
	// has several ("api/gold/quota"), followed by "/fail-open",
	// "/fail-closed" or "/fallback" when a failure policy decided.
	// Decision.Allowed is false iff that limit refused the request (or
	// failed), in shadow mode too; Code is what the descriptor reports.
	// When a later limit refused the request, the events this one had
	// admitted are given back, and Remaining counts them again. With no
	// limit asked (no rule matched, Exempt, Replaced), Decision is
	// admit.Decision{Allowed: true}; for Unlimited, its Limit is
	// admit.Unlimited and Remaining math.MaxInt64.
	Decision admit.Decision

	// Shadow reports that the rule is in shadow mode (its own, its
	// domain's, or the engine's), so Code is CodeOK whatever it decided;
	// WouldRefuse then reports that it would have refused.
	Shadow      bool
	WouldRefuse bool

	// Exempt: the descriptor has an exempt value of the rule (nothing was
	// checked). Unlimited: the rule (or tier) is unlimited (see
	// Decision). Replaced: the rule was replaced by another matched rule
	// (see Rule.Replaces). Override: the descriptor gave its limit inline.
	Exempt    bool
	Unlimited bool
	Replaced  bool
	Override  bool

	// Skipped reports that some of the descriptor's limits were not
	// asked, because the request was refused (by another descriptor's
	// limit) before their turn; nothing was consumed from them, and
	// Decision describes those that were asked, if any (else it admits,
	// with the configured Limit, Kind and name of the first, Remaining
	// 0).
	Skipped bool

	// Err is the error of one of the descriptor's limits (a shadow rule's
	// are reported only here; ErrStoreFailed: a failure policy decided).
	Err error
}

// Result is the outcome of a check: one decision for the request, and one
// status per descriptor. Reuse a Result from check to check: it keeps the
// capacity of Statuses and the scratch space of the checks (keys, layers),
// so that a check into a reused Result allocates nothing. A Result is not
// safe for concurrent use: keep one per goroutine.
type Result struct {
	// Decision is the request's: Allowed iff every limit of every
	// matched rule not in shadow mode admitted it; its Rule names the
	// limit that refused it, or, when admitted, the most restrictive
	// (fewest Remaining) of the limits asked. With no limit to ask, it
	// admits with Limit admit.Unlimited.
	Decision admit.Decision

	// Statuses has one Status per descriptor, in the request's order.
	Statuses []Status

	// ShadowRefused reports that a rule in shadow mode would have refused
	// the request; Shadow is the most restrictive of the refusals of
	// those rules.
	ShadowRefused bool
	Shadow        admit.Decision

	sc *scratch
}

// allowAll is the decision of a request no limit applies to.
var allowAll = admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: math.MaxInt64}

// Check decides whether req may proceed: it matches each descriptor to
// the rule of its domain that fits it best (see Rule), and asks the
// limits of every matched rule, as one all-or-nothing decision (the
// semantics of compose.Admit): the cheap local limits first, then those
// kept in Redis, the concurrency caps last; the first refusal stops the
// check, and what the limits before it consumed is given back (refunded,
// or released). Rules in shadow mode are asked after the others, only if
// they admitted the request, and never refuse it. out receives the
// decision and one status per descriptor.
//
// The slots that concurrency caps grant are recorded in h: release it
// when the request is done (h.Release), or better, when h.WantsOutcome,
// finish it with the request's outcome (h.Finish), which is what the
// adaptive limits learn from (see the package documentation). h may be
// nil for a policy without concurrency caps, or for a peek (Hits 0); a
// request that needs slots without h fails with compose.ErrNeedHeld
// (adaptive rates without h admit and learn nothing).
//
// With Config.RetryJitter, the retry time of a refusal (out.Decision's
// and that of the status of the descriptor that refused) is spread as it
// says, never earlier than the exact one.
//
// A refusal is not an error: out.Decision.Allowed is false. The error is
// non-nil when the request could not be decided, and the request is then
// refused: a bad request (ErrInvalidRequest: a negative cost, a
// descriptor without entries, an invalid inline limit), too many inline
// limits (an error wrapping admit.ErrTooManyKeys: "policy: too many
// distinct inline limits"), a closed engine (admit.ErrClosed: "policy:
// engine closed"), the context's end, too many keys for a rule's adaptive
// limit or lanes (admit.ErrTooManyKeys: "policy: too many keys for an
// adaptive limit"), or an error of a limiter that its failure policy does
// not absorb (a key longer than the limiter's maximum, or Redis failing
// for a rule whose failure policy lets errors through).
func (e *Engine) Check(ctx context.Context, req *Request, h *compose.Held, out *Result) error {
	nd := len(req.Descriptors)
	if cap(out.Statuses) < nd {
		out.Statuses = make([]Status, nd)
	} else {
		out.Statuses = out.Statuses[:nd]
		clear(out.Statuses)
	}
	out.Decision, out.Shadow, out.ShadowRefused = admit.Decision{}, admit.Decision{}, false
	if e.closed.Load() {
		out.Decision = refusal
		return errClosed
	}
	if req.Hits < 0 {
		out.Decision = refusal
		return fmt.Errorf("%w: cost %d is negative", ErrInvalidRequest, req.Hits)
	}
	for i := range req.Descriptors {
		d := &req.Descriptors[i]
		switch {
		case len(d.Entries) == 0:
			out.Decision = refusal
			return fmt.Errorf("%w: descriptor %d has no entries", ErrInvalidRequest, i)
		case d.OwnHits && d.Hits < 0:
			out.Decision = refusal
			return fmt.Errorf("%w: descriptor %d: cost %d is negative", ErrInvalidRequest, i, d.Hits)
		}
		out.Statuses[i].Code, out.Statuses[i].Decision.Allowed = CodeOK, true
	}
	dom := e.domains[req.Domain]
	if dom == nil {
		out.Decision = allowAll
		return nil
	}
	if out.sc == nil {
		out.sc = new(scratch)
	}
	err := e.check(ctx, dom, req, h, out, out.sc)
	out.sc.reset()
	if e.o.jitter.Fraction > 0 && !out.Decision.Allowed {
		jitter(e.o.jitter, out)
	}
	if e.o.onRefused != nil && err == nil && !out.Decision.Allowed {
		e.o.onRefused(out.Decision)
	}
	return err
}

// jitter spreads the retry time of out's refusal (Config.RetryJitter)
// with one draw: the request's Decision and the status of the descriptor
// that refused, which holds the same decision, agree.
func jitter(j admit.Jitter, out *Result) {
	d := out.Decision
	jd := j.Apply(d)
	if jd == d {
		return
	}
	out.Decision = jd
	for i := range out.Statuses {
		if st := &out.Statuses[i]; st.Code == CodeOverLimit && st.Decision == d {
			st.Decision = jd
		}
	}
}

// refusal is the decision of a request that could not be decided.
var refusal = admit.Decision{RetryAfter: admit.InfDuration}

// scratch is the per-request state of a check, pooled.
type scratch struct {
	held   compose.Held // the Held of peeks checked without one
	buf    []byte
	calls  []call
	rules  []*crule
	names  []string
	layers []compose.Layer  // the calls' layers, in the order asked
	reqs   []admit.Request  // the request of each layer
	decs   []admit.Decision // the decision of each layer
	order  []int            // the call of each layer
}

// reset empties sc, dropping its references to the engine's limiters and
// to the request (decs, whose Rules name the engine's limits, need not be
// cleared: compose.Admit sets every one it is given).
func (sc *scratch) reset() {
	clear(sc.calls)
	clear(sc.rules)
	clear(sc.layers)
	clear(sc.reqs)
	clear(sc.names)
	sc.buf, sc.calls, sc.rules, sc.names = sc.buf[:0], sc.calls[:0], sc.rules[:0], sc.names[:0]
	sc.layers, sc.reqs, sc.decs, sc.order = sc.layers[:0], sc.reqs[:0], sc.decs[:0], sc.order[:0]
}

// call is one limiter asked for one descriptor of a request, with its own
// cost, and what it decided.
type call struct {
	l      *clayer
	n      int64
	desc   int
	shadow bool
	koff   int // the key's offset in the buffer, or -1 for key
	kend   int
	key    string
	d      admit.Decision
	err    error
	done   bool
}

// record records what the call's limiter decided (d, which it updates),
// naming the call's layer as its Rule (unless its failure policy decided:
// see failure) and giving it the layer's Kind (a failure policy's
// decisions have none).
func (c *call) record(d *admit.Decision, err error) {
	if !strings.HasPrefix(d.Rule, c.l.prefix) {
		d.Rule = c.l.label
	}
	if c.l.kind != admit.KindRate && d.Kind == admit.KindRate {
		d.Kind = c.l.kind
	}
	c.d, c.err, c.done = *d, err, true
}

func (e *Engine) check(ctx context.Context, dom *cdomain, req *Request, h *compose.Held, out *Result, sc *scratch) error {
	if err := e.plan(dom, req, out, sc); err != nil || len(sc.calls) == 0 {
		return err
	}
	// The check of h.
	slots := false
	for j := range sc.calls {
		if c := &sc.calls[j]; c.l.slots != nil {
			slots = true
			if c.n > 0 && h == nil {
				out.Decision = refusal
				return fmt.Errorf("%w: rule %q caps concurrency", compose.ErrNeedHeld, c.l.label)
			}
		}
	}
	// The layers: the enforcing ones by class, then the shadow ones.
	for class := classLocal; class <= classAdaptiveSlots; class++ {
		for j := range sc.calls {
			if c := &sc.calls[j]; !c.shadow && c.l.class == class {
				sc.add(j)
			}
		}
	}
	enforcing := len(sc.layers)
	for j := range sc.calls {
		if sc.calls[j].shadow {
			sc.add(j)
		}
	}
	if slots && h == nil {
		h = &sc.held // peeks only: nothing will be held
	}
	// Room for the layers' decisions, which compose.Admit sets (or zeroes).
	if cap(sc.decs) < len(sc.layers) {
		sc.decs = make([]admit.Decision, len(sc.layers))
	}
	sc.decs = sc.decs[:len(sc.layers)]
	var dec admit.Decision
	var err error
	if enforcing > 0 {
		dec, err = sc.admit(ctx, 0, enforcing, h)
	} else {
		dec = allowAll
	}
	if dec.Allowed {
		for j := enforcing; j < len(sc.layers); j++ {
			_, _ = sc.admit(ctx, j, j+1, h)
		}
	}
	out.Decision = dec
	e.statuses(sc, out, dec.Allowed)
	return err
}

// add appends the layer of call j, with its request.
func (sc *scratch) add(j int) {
	c := &sc.calls[j]
	sc.layers = append(sc.layers, compose.Layer{Limiter: c.l.lim, Slots: c.l.slots})
	sc.reqs = append(sc.reqs, admit.Request{Key: c.key, N: c.n, MaxDelay: c.l.delay})
	sc.order = append(sc.order, j)
}

// admit asks layers [from, to) as one compose.Admit, records the
// decisions of the calls asked, and returns the request's: the refusal
// (or failure) of the layer that decided, else the most restrictive
// admission, as compose.Admit chooses it but with the calls' Rule and
// Kind (see record).
func (sc *scratch) admit(ctx context.Context, from, to int, h *compose.Held) (admit.Decision, error) {
	decs := sc.decs[from:to]
	all, err := compose.Admit(ctx, sc.layers[from:to], sc.reqs[from:to], h, decs)
	best := 0
	for k := range decs {
		d := &decs[k]
		if !d.Allowed {
			// The layer that decided; those after it were not asked.
			// (Bad input, which asks none, cannot come from a plan.)
			sc.calls[sc.order[from+k]].record(d, err)
			return *d, err
		}
		sc.calls[sc.order[from+k]].record(d, nil)
		if restrictive(d, &decs[best]) {
			best = k
		}
	}
	d := decs[best]
	d.Delay, d.TimeToAct = all.Delay, all.TimeToAct // the longest: the request acts then
	return d, err
}

// statuses fills the descriptors' statuses from the calls' decisions.
func (e *Engine) statuses(sc *scratch, out *Result, allowed bool) {
	for j := 0; j < len(sc.calls); {
		i := sc.calls[j].desc
		st := &out.Statuses[i]
		var worst admit.Decision
		have := false
		for ; j < len(sc.calls) && sc.calls[j].desc == i; j++ {
			c := &sc.calls[j]
			if st.Err == nil {
				st.Err = c.failure()
			}
			if !c.done {
				st.Skipped = true
				if !have && st.Decision.Limit == (admit.Limit{}) {
					st.Decision = admit.Decision{Allowed: true, Limit: c.l.limit, Rule: c.l.label, Kind: c.l.kind}
				}
				continue
			}
			d := c.d
			if !allowed && !c.shadow && d.Allowed && c.n > 0 {
				// Undone by compose.Admit: the events are back.
				d.Remaining = min(satAdd(d.Remaining, c.n), max(d.Limit.Burst, d.Remaining))
			}
			if c.shadow && !d.Allowed {
				if !out.ShadowRefused || restrictive(&d, &out.Shadow) {
					out.Shadow = d
				}
				out.ShadowRefused = true
			}
			if !have || worse(d, worst) {
				worst, have = d, true
			}
		}
		if !have {
			continue
		}
		st.Decision = worst
		if !worst.Allowed {
			if st.Shadow {
				st.WouldRefuse = true
			} else {
				st.Code = CodeOverLimit
			}
		}
	}
}

// worse reports whether decision a should stand for its descriptor rather
// than b: a refusal over an admission, else the more restrictive.
func worse(a, b admit.Decision) bool {
	if a.Allowed != b.Allowed {
		return !a.Allowed
	}
	return restrictive(&a, &b)
}

// restrictive reports whether a leaves less room than b (compose.Admit's
// order).
func restrictive(a, b *admit.Decision) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func hitsOf(req *Request, d *Descriptor) int64 {
	if d.OwnHits {
		return d.Hits
	}
	return req.Hits
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
