package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Reset makes the limits that req's descriptors match forget the state of
// their keys, which then start full: an operator unblocking a client. The
// limits are those Check would apply to req, matched the same way (rule,
// tier, inline limit), in memory and in Redis: rates and quotas, shadow
// ones included. Concurrency caps (whose slots belong to the requests
// holding them) and adaptive limits are left alone. It returns how many
// limits it reset. The error is ErrInvalidRequest for a malformed request
// (as Check's), one wrapping admit.ErrClosed after Close, or joins the errors of the limits
// that could not be reset (Redis down: under a Fallback policy the local
// limiter is reset all the same). A domain the engine does not have resets
// nothing. Hits are ignored.
//
// In a fleet sharing Redis, a limit kept in Redis is reset for every
// instance; a limit kept in memory only in this engine's process.
func (e *Engine) Reset(ctx context.Context, req *Request) (int, error) {
	if e.closed.Load() {
		return 0, errClosed
	}
	for i := range req.Descriptors {
		if len(req.Descriptors[i].Entries) == 0 {
			return 0, fmt.Errorf("%w: descriptor %d has no entries", ErrInvalidRequest, i)
		}
	}
	dom := e.domains[req.Domain]
	if dom == nil {
		return 0, nil
	}
	out := Result{Statuses: make([]Status, len(req.Descriptors))}
	sc := new(scratch)
	if err := e.plan(dom, req, &out, sc); err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for j := range sc.calls {
		c := &sc.calls[j]
		if c.l.lim == nil || c.l.slots != nil || c.l.learn != nil || c.l.lanes {
			continue
		}
		r, ok := c.l.lim.(admit.Resetter)
		if !ok {
			continue // no state to forget
		}
		err := r.Reset(ctx, c.key)
		switch {
		case errors.Is(err, errors.ErrUnsupported): // a Guard whose primary cannot reset
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", c.l.label, err))
		default:
			n++
		}
	}
	return n, errors.Join(errs...)
}
