package compose

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// Layer is one limit of a chain: either a rate limit or quota (Limiter) or
// a concurrency limit (Slots), never both.
type Layer struct {
	// Name names the layer in the decisions it makes (Decision.Rule). If
	// empty, the Rule the limiter itself gives is kept.
	Name string
	// Limiter is a rate limit or a quota. Its admission is undone with
	// Refund when a later layer refuses the request, if it implements
	// Refunder. If it is a Learner, what it Tracks of an admitted request
	// is recorded in the check's Held.
	Limiter admit.KeyedLimiter
	// Slots is a concurrency limit. Its slots are held until the Held
	// they were recorded in is released, and given back at once when a
	// later layer refuses the request.
	Slots admit.Slots
}

// undoable reports whether what the layer admits can be given back.
func (l Layer) undoable() bool {
	if l.Slots != nil {
		return true
	}
	return canRefund(l.Limiter)
}

// canRefund reports whether l can give back what it admitted: it is a
// Refunder, and if it is a Guard, so are the limiters it asks.
func canRefund(l admit.KeyedLimiter) bool {
	if g, ok := l.(*Guard); ok {
		return g.canRefund()
	}
	_, ok := l.(admit.Refunder)
	return ok
}

// Chain is a limit made of layers that must all admit a request: the
// hierarchical limit of a multi-tenant API (per client address, per user,
// per tenant, per route, a global concurrency cap). Build one with All;
// the zero Chain has no layers and refuses every call with an error
// wrapping admit.ErrInvalidConfig ("compose: no layers"). A
// Chain is safe for concurrent use if its layers are.
type Chain struct {
	layers   []Layer
	slots    bool
	learners bool // a Limiter is a Learner
}

// All returns the chain of layers, checked in the order given: put the
// cheap local layers first, so that a request they refuse never reaches a
// remote store, and the concurrency limits last among the layers of equal
// cost, so that their slots are rarely taken only to be given back.
//
// A request is admitted iff every layer admits it. The first layer that
// refuses it (or fails) stops the check, and the layers before it are
// undone: a Limiter that implements Refunder is refunded, a Slots layer
// releases its slots. So a refused request consumes nothing, except from
// a layer that cannot be undone; All therefore refuses a chain in which
// such a layer (a Limiter that is not a Refunder, or a Guard whose primary
// or Fallback's local limiter is not) comes before another layer.
//
// A refund happens after the admission it undoes, at the limiter's own
// instant (its clock, or Redis's), so it is exact when nothing else
// changed the key in between, which is the usual case: the layers of one
// request are checked within microseconds (or a round trip). Otherwise it
// gives back what the algorithm can (see keyed.Limiter.Refund): a window
// layer refunded just after its window ended gives back nothing, and one
// whose window another request has moved on takes the events off the new
// window's count.
//
// All fails with an error wrapping admit.ErrInvalidConfig for no layers
// ("compose: no layers") and for a layer with neither or both of Limiter
// and Slots (a nil pointer counts as none), or a layer that cannot be
// undone placed before another ("compose: invalid layer", naming it).
func All(layers ...Layer) (*Chain, error) {
	if len(layers) == 0 {
		return nil, errNoLayers
	}
	c := &Chain{layers: append([]Layer(nil), layers...)}
	for i, l := range c.layers {
		lim, slots := !isNil(l.Limiter), l.Slots != nil && !isNil(l.Slots)
		if lim == slots {
			return nil, fmt.Errorf("%w: layer %d (%q) needs exactly one of Limiter and Slots", errInvalidLayer, i, l.Name)
		}
		if !lim {
			c.layers[i].Limiter = nil
		} else {
			c.layers[i].Slots = nil
		}
		if slots {
			c.slots = true
		} else if _, ok := l.Limiter.(Learner); ok {
			c.learners = true
		}
		if i < len(layers)-1 && !c.layers[i].undoable() {
			return nil, fmt.Errorf("%w: layer %d (%q) cannot be undone (its limiter is not a Refunder), so it must be the last", errInvalidLayer, i, l.Name)
		}
	}
	return c, nil
}

// Layers returns a copy of the chain's layers, in order.
func (c *Chain) Layers() []Layer { return append([]Layer(nil), c.layers...) }

// Allow decides whether r.N events may happen for r.Key at every layer,
// each layer asked with r as it is (the same key, and r.Limit and r.At if
// they are set). It is AllowKeys with r.Key for every layer and no Held, so
// it fails with ErrNeedHeld on a chain with Slots layers (their slots
// would never be released): use AllowKeys for those.
//
// Allow makes a Chain an admit.KeyedLimiter, so a Chain can be the last
// layer of another chain or the primary of a Guard. Without a Held, its
// Learner layers learn nothing from the requests it admits.
func (c *Chain) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if c.slots {
		return admit.Decision{RetryAfter: admit.InfDuration}, ErrNeedHeld
	}
	return run(ctx, c.layers, &requests{base: r}, nil, false, nil)
}

// AllowKeys decides whether n events may happen now, keys[i] being the key
// of layer i, and records the slots of Slots layers and the Finishers of
// Learner layers in h (which may be nil for a chain without Slots layers;
// its Learners then learn nothing). See Admit.
func (c *Chain) AllowKeys(ctx context.Context, keys []string, n int64, h *Held) (admit.Decision, error) {
	if err := check(len(c.layers), keys, n); err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, err
	}
	if c.slots && h == nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, ErrNeedHeld
	}
	return run(ctx, c.layers, &requests{keys: keys, base: admit.Request{N: n}}, h, c.learners, nil)
}

// Admit checks a request against layers in order, reqs[i] being what
// layers[i] is asked (its key, its cost, and its limit and instant if they
// are set), as a Chain does (see All), for callers that choose the layers
// and their requests per check, such as a policy engine whose descriptors
// each have their own cost. It checks every layer and request before it
// asks any: each layer must hold exactly one of Limiter and Slots, and not
// a nil pointer. Unlike All it does not check that the layers can be
// undone: a layer that cannot, placed before another, is not undone.
//
// If every layer admits its request, the decision is the most restrictive
// of theirs (the one with the fewest Remaining; of equals, the one with
// the longest ResetAfter), with the longest Delay of theirs and its
// TimeToAct (layers asked with a Request.MaxDelay may admit with a
// delay: the request acts when the last of their slots comes), and the slots taken by Slots layers are
// recorded in h, to be given back by h.Release when the request is done
// (or by h.Finish, which also reports the request's outcome to the grants
// that learn from it: see Finisher). If h is not nil, the Finisher that
// each Limiter that is a Learner Tracks for its request is recorded in h
// too. A request of N = 0 is a peek: its layer reports, and nothing is
// consumed from it or held.
//
// If a layer refuses its request, the decision is that layer's and the
// layers before it are undone: their slots and Finishers released (never
// finished: the request did not run) and their admissions refunded, each
// with its own request, in reverse order, under a context that keeps
// ctx's values but not its cancellation (the undoing must happen even if
// ctx has ended); a layer that admitted with a Delay is refunded at its
// TimeToAct, which gives its slot back unless a later delayed request
// relies on it (see admit.Decision.TimeToAct). Errors of the undoing are not returned: the request was
// refused, and a refund that failed leaves that layer's events consumed
// (as a failed check may). If a layer fails, Admit undoes the same way and
// returns its error with a refusing decision naming it. Decisions made by
// a layer with a Name carry it as their Rule.
//
// If dst is not nil, it receives the decision of each layer: dst[i] is
// layers[i]'s (with Allowed false if it failed) for the layers asked, and
// the zero Decision for those after the one that refused or failed, which
// are not asked. The first i whose dst[i].Allowed is false is thus the
// layer that decided a refusal. The decisions of layers that were undone
// are those they made (their Remaining does not count what was given
// back).
//
// Admit allocates nothing of its own; the Releasers and Finishers of the
// layers are theirs.
//
// Bad input asks no layer, leaves dst as it was, and fails with a refusing
// decision: no layers, len(reqs) != len(layers), dst neither nil nor of
// len(layers), or an invalid layer (each an error wrapping
// admit.ErrInvalidConfig that says which), a
// negative N (admit.ErrInvalidCost), a Slots layer while h is nil
// (ErrNeedHeld).
func Admit(ctx context.Context, layers []Layer, reqs []admit.Request, h *Held, dst []admit.Decision) (admit.Decision, error) {
	switch {
	case len(layers) == 0:
		return admit.Decision{RetryAfter: admit.InfDuration}, errNoLayers
	case len(reqs) != len(layers):
		return admit.Decision{RetryAfter: admit.InfDuration}, fmt.Errorf("%w: %d requests for %d layers", errInvalidLayer, len(reqs), len(layers))
	case dst != nil && len(dst) != len(layers):
		return admit.Decision{RetryAfter: admit.InfDuration}, fmt.Errorf("%w: room for %d decisions for %d layers", errInvalidLayer, len(dst), len(layers))
	}
	for i := range layers {
		l := &layers[i]
		lim, slots := l.Limiter != nil, l.Slots != nil
		switch {
		case lim == slots || (lim && isNil(l.Limiter)) || (slots && isNil(l.Slots)):
			return admit.Decision{RetryAfter: admit.InfDuration, Rule: l.Name},
				fmt.Errorf("%w: layer %d (%q) needs exactly one of Limiter and Slots, not a nil pointer", errInvalidLayer, i, l.Name)
		case reqs[i].N < 0:
			return admit.Decision{RetryAfter: admit.InfDuration, Rule: l.Name}, fmt.Errorf("%w: layer %d (%q): n=%d", admit.ErrInvalidCost, i, l.Name, reqs[i].N)
		case slots && h == nil:
			return admit.Decision{RetryAfter: admit.InfDuration, Rule: l.Name}, ErrNeedHeld
		}
	}
	return run(ctx, layers, &requests{reqs: reqs}, h, true, dst)
}

// check refuses a request of a chain's that no layer should see.
func check(nlayers int, keys []string, n int64) error {
	switch {
	case nlayers == 0:
		return errNoLayers
	case len(keys) != nlayers:
		return fmt.Errorf("%w: %d keys for %d layers", errInvalidLayer, len(keys), nlayers)
	case n < 0:
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	return nil
}

// requests gives run the request of each layer: reqs[i] if reqs is not
// nil, else base with keys[i] as its Key (base as it is if keys is nil
// too).
type requests struct {
	reqs []admit.Request
	keys []string
	base admit.Request
}

func (q *requests) at(i int) admit.Request {
	if q.reqs != nil {
		return q.reqs[i]
	}
	r := q.base
	if q.keys != nil {
		r.Key = q.keys[i]
	}
	return r
}

// run is Admit on checked input: each layer holds exactly one of Limiter
// and Slots, q has a request of N >= 0 per layer, h is not nil if a Slots
// layer is among them, and dst is nil or has a decision per layer. learn
// says whether a Limiter may be a Learner (Chain knows which are).
func run(ctx context.Context, layers []Layer, q *requests, h *Held, learn bool, dst []admit.Decision) (admit.Decision, error) {
	var (
		best  admit.Decision
		mark  int
		acts  []time.Time // the layers' TimeToAct, once a layer delayed
		delay admit.Decision
	)
	if h != nil {
		mark = h.Len()
	}
	for i := range layers {
		l := &layers[i]
		var (
			d   admit.Decision
			err error
			rel admit.Releaser
		)
		req := q.at(i)
		if l.Limiter != nil {
			d, err = l.Limiter.Allow(ctx, req)
			if learn && h != nil && req.N > 0 && err == nil && d.Allowed {
				if lr, ok := l.Limiter.(Learner); ok {
					if f := lr.Track(req.Key, req.N); f != nil {
						rel = f
					}
				}
			}
		} else {
			rel, d, err = l.Slots.TryAcquire(ctx, req)
		}
		if l.Name != "" {
			d.Rule = l.Name
		}
		if err != nil || !d.Allowed {
			if rel != nil {
				rel.Release()
			}
			if err != nil {
				d.Allowed = false
			}
			if dst != nil {
				dst[i] = d
				clear(dst[i+1:])
			}
			undo(ctx, layers[:i], q, h, mark, acts)
			return d, err
		}
		if dst != nil {
			dst[i] = d
		}
		if d.Delay > 0 {
			if acts == nil {
				acts = make([]time.Time, len(layers))
			}
			acts[i] = d.TimeToAct
			if d.Delay > delay.Delay {
				delay = d
			}
		}
		if rel != nil {
			h.add(rel)
		}
		if i == 0 || restrictive(d, best) {
			best = d
		}
	}
	best.Delay, best.TimeToAct = delay.Delay, delay.TimeToAct
	return best, nil
}

// restrictive reports whether admission a leaves less room than b.
func restrictive(a, b admit.Decision) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}

// undo gives back what layers (all of which admitted) took: the slots
// recorded in h since mark, and refunds of their requests (q's) from the
// Refunders, latest first; a layer that admitted with a delay is refunded
// at its TimeToAct (acts[i], if acts is not nil), which gives its slot back.
func undo(ctx context.Context, layers []Layer, q *requests, h *Held, mark int, acts []time.Time) {
	if h != nil {
		h.releaseFrom(mark)
	}
	var uctx context.Context // made at the first refund
	for i := len(layers) - 1; i >= 0; i-- {
		r, ok := layers[i].Limiter.(admit.Refunder)
		if !ok {
			continue
		}
		req := q.at(i)
		if req.N == 0 {
			continue
		}
		if acts != nil && !acts[i].IsZero() {
			req.At = acts[i]
		}
		if uctx == nil {
			uctx = ctx
			if ctx.Done() != nil {
				uctx = context.WithoutCancel(ctx)
			}
		}
		_ = r.Refund(uctx, req)
	}
}
