package compose

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
)

// Refunder is implemented by limiters that can give back events they
// admitted: Refund undoes an admission of n events for key as far as the
// limit allows (a GCRA's theoretical arrival time moves back, a bucket
// regains tokens up to its burst, a window's count goes down; nothing goes
// below a full state). All uses it to undo the layers that admitted a
// request a later layer refused. keyed.Limiter, redisstore.Limiter and
// Guard implement it.
type Refunder interface {
	Refund(ctx context.Context, key string, n int64) error
}

// Slots is a concurrency limit used as a layer: TryAcquire holds n slots
// for key if they are free, without waiting, and the Releaser gives them
// back. A denied or failed TryAcquire holds nothing and may return a nil
// Releaser. LocalSlots adapts a concurrency.Limiter.
type Slots interface {
	TryAcquire(ctx context.Context, key string, n int64) (Releaser, admit.Decision, error)
}

// Releaser gives back what a Slots layer granted. Release must be safe to
// call more than once; only the first call gives anything back.
type Releaser interface {
	Release()
}

// Layer is one limit of a chain: either a rate limit or quota (Limiter) or
// a concurrency limit (Slots), never both.
type Layer struct {
	// Name names the layer in the decisions it makes (Decision.Rule). If
	// empty, the Rule the limiter itself gives is kept.
	Name string
	// Limiter is a rate limit or a quota. Its admission is undone with
	// Refund when a later layer refuses the request, if it implements
	// Refunder.
	Limiter Limiter
	// Slots is a concurrency limit. Its slots are held until the Held
	// they were recorded in is released, and given back at once when a
	// later layer refuses the request.
	Slots Slots
}

func (l Layer) undoable() bool {
	if l.Slots != nil {
		return true
	}
	_, ok := l.Limiter.(Refunder)
	return ok
}

// Chain is a limit made of layers that must all admit a request: the
// hierarchical limit of a multi-tenant API (per client address, per user,
// per tenant, per route, a global concurrency cap). Build one with All. A
// Chain is safe for concurrent use if its layers are.
type Chain struct {
	layers []Layer
	slots  bool
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
// such a layer (a Limiter that is not a Refunder) comes before another
// layer.
//
// All fails with ErrNoLayers for no layers and ErrInvalidLayer for a layer
// with neither or both of Limiter and Slots (or a nil one), or a layer
// that cannot be undone placed before another.
func All(layers ...Layer) (*Chain, error) {
	if len(layers) == 0 {
		return nil, ErrNoLayers
	}
	c := &Chain{layers: append([]Layer(nil), layers...)}
	for i, l := range c.layers {
		lim, slots := !isNil(l.Limiter), l.Slots != nil && !isNil(l.Slots)
		if lim == slots {
			return nil, fmt.Errorf("%w: layer %d (%q) needs exactly one of Limiter and Slots", ErrInvalidLayer, i, l.Name)
		}
		if !lim {
			c.layers[i].Limiter = nil
		} else {
			c.layers[i].Slots = nil
		}
		if slots {
			c.slots = true
		}
		if i < len(layers)-1 && !c.layers[i].undoable() {
			return nil, fmt.Errorf("%w: layer %d (%q) cannot be undone (its limiter is not a Refunder), so it must be the last", ErrInvalidLayer, i, l.Name)
		}
	}
	return c, nil
}

// Layers returns a copy of the chain's layers, in order.
func (c *Chain) Layers() []Layer { return append([]Layer(nil), c.layers...) }

// Allow decides whether n events may happen for key now at every layer,
// each layer with the same key. It is AllowKeys with key for every layer
// and no Held, so it fails with ErrNeedHeld on a chain with Slots layers
// (their slots would never be released): use AllowKeys for those.
//
// Allow makes a Chain a Limiter, so a Chain can be a layer of another
// chain or the primary of a Guard.
func (c *Chain) Allow(ctx context.Context, key string, n int64) (admit.Decision, error) {
	if c.slots {
		return admit.Decision{}, ErrNeedHeld
	}
	var keys [8]string
	ks := keys[:0]
	if len(c.layers) > len(keys) {
		ks = make([]string, 0, len(c.layers))
	}
	for range c.layers {
		ks = append(ks, key)
	}
	return Admit(ctx, c.layers, ks, n, nil)
}

// AllowKeys decides whether n events may happen now, keys[i] being the key
// of layer i, and records the slots of Slots layers in h (which may be nil
// for a chain without them). See Admit.
func (c *Chain) AllowKeys(ctx context.Context, keys []string, n int64, h *Held) (admit.Decision, error) {
	return Admit(ctx, c.layers, keys, n, h)
}

// Admit checks a request of n events against layers in order, keys[i]
// being the key of layers[i], as a Chain does (see All), for callers that
// choose the layers per request, such as a policy engine. Unlike All it
// does not check the layers: a nil layer fails, and a layer that cannot be
// undone, placed before another, is not undone.
//
// If every layer admits the request, the decision is the most restrictive
// of theirs (the one with the fewest Remaining; of equals, the one with
// the longest ResetAfter), and the slots taken by Slots layers are
// recorded in h, to be given back by h.Release when the request is done.
// If a layer refuses it, the decision is that layer's and the layers
// before it are undone, under a context that keeps ctx's values but not
// its cancellation (the undoing must happen even if ctx has ended); errors
// of the undoing are ignored. If a layer fails, Admit undoes the same way
// and returns its error with a refusing decision naming it.
//
// Admit fails with ErrInvalidLayer if len(keys) != len(layers) and with
// ErrNeedHeld if a Slots layer admits while h is nil.
func Admit(ctx context.Context, layers []Layer, keys []string, n int64, h *Held) (admit.Decision, error) {
	if len(keys) != len(layers) {
		return admit.Decision{}, fmt.Errorf("%w: %d keys for %d layers", ErrInvalidLayer, len(keys), len(layers))
	}
	if len(layers) == 0 {
		return admit.Decision{}, ErrNoLayers
	}
	var (
		best admit.Decision
		mark int
	)
	if h != nil {
		mark = h.Len()
	}
	for i := range layers {
		l := &layers[i]
		var (
			d   admit.Decision
			err error
			rel Releaser
		)
		switch {
		case l.Limiter != nil:
			d, err = l.Limiter.Allow(ctx, keys[i], n)
		case l.Slots != nil:
			if h == nil {
				err = ErrNeedHeld
				break
			}
			rel, d, err = l.Slots.TryAcquire(ctx, keys[i], n)
		default:
			err = fmt.Errorf("%w: layer %d (%q) has neither Limiter nor Slots", ErrInvalidLayer, i, l.Name)
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
			undo(ctx, layers[:i], keys, n, h, mark)
			return d, err
		}
		if rel != nil {
			h.add(rel)
		}
		if i == 0 || restrictive(d, best) {
			best = d
		}
	}
	return best, nil
}

// restrictive reports whether admission a leaves less room than b.
func restrictive(a, b admit.Decision) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}

// undo gives back what layers (all of which admitted) took: refunds for
// Refunders, and the slots recorded in h since mark.
func undo(ctx context.Context, layers []Layer, keys []string, n int64, h *Held, mark int) {
	if h != nil {
		h.releaseFrom(mark)
	}
	if n == 0 {
		return
	}
	var uctx context.Context
	for i := len(layers) - 1; i >= 0; i-- {
		r, ok := layers[i].Limiter.(Refunder)
		if !ok {
			continue
		}
		if uctx == nil {
			uctx = context.WithoutCancel(ctx)
		}
		_ = r.Refund(uctx, keys[i], n)
	}
}

// Held records the slots that the Slots layers of admitted requests hold,
// until Release. Its zero value is empty and ready to use; keep it on the
// stack of the request's goroutine (it holds up to four grants without
// allocating). A Held is not safe for concurrent use.
type Held struct {
	small [4]Releaser
	more  []Releaser
	n     int
}

// Len returns the number of grants h holds.
func (h *Held) Len() int { return h.n }

func (h *Held) add(r Releaser) {
	if h.n < len(h.small) {
		h.small[h.n] = r
	} else {
		h.more = append(h.more, r)
	}
	h.n++
}

func (h *Held) at(i int) *Releaser {
	if i < len(h.small) {
		return &h.small[i]
	}
	return &h.more[i-len(h.small)]
}

// releaseFrom releases the grants from index mark on, newest first.
func (h *Held) releaseFrom(mark int) {
	for i := h.n - 1; i >= mark; i-- {
		p := h.at(i)
		(*p).Release()
		*p = nil
	}
	h.n = mark
	if mark <= len(h.small) {
		h.more = h.more[:0]
	} else {
		h.more = h.more[:mark-len(h.small)]
	}
}

// Release gives back every grant h holds, newest first, and empties h. It
// is safe to call on an empty Held.
func (h *Held) Release() { h.releaseFrom(0) }
