package policy

// The rates of a rule or tier with several (Limits.Rates), decided as one
// limiter: all or nothing, reporting the most restrictive.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/admit-go/admit"
)

// rateSetter is what a Backend may implement to decide several rates of
// one key at once, all or nothing, in one call (policy/backends.Redis:
// one script call): Rates returns the limiter of the rates of specs.
// Other backends' rates are asked one after the other (rateSet).
type rateSetter interface {
	Rates(specs []Spec) (admit.KeyedLimiter, error)
}

// rateName is the name of rate i of a layer labelled label: the label for
// the first (so a rule's first rate keeps its state, and its keys in a
// shared store, when rates are added), label#2, label#3... for the others.
func rateName(label string, i int) string {
	if i == 0 {
		return label
	}
	return label + "#" + strconv.Itoa(i+1)
}

// buildRates sets the limiter of c deciding rates ls by alg (more than
// one; see buildRate for one), in store st behind failure policy f, whose
// Fallback decides this instance's share of each rate.
func (e *Engine) buildRates(c *clayer, alg admit.Algorithm, ls []admit.Limit, st store, f Failure) error {
	specs := func(label string, n int) ([]Spec, error) {
		out := make([]Spec, len(ls))
		for i, l := range ls {
			out[i] = e.spec(rateName(label, i))
			out[i].Algorithm = alg
			var err error
			if out[i].Limit, err = l.Share(n); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	own, err := specs(c.label, 1)
	if err != nil {
		return err
	}
	lim, err := newRateSet(st.b, own)
	if err != nil {
		return err
	}
	return e.keyedLimiter(c, lim, st, f, func(b Backend) (admit.KeyedLimiter, error) {
		local, err := specs(c.label+"/fallback", share(f))
		if err != nil {
			return nil, err
		}
		return newRateSet(b, local)
	})
}

// newRateSet returns the limiter of the rates of specs in backend b: b's
// own if it decides several at once (rateSetter), else a rateSet of b's
// limiters, which must be able to give back what they took
// (admit.Refunder).
func newRateSet(b Backend, specs []Spec) (admit.KeyedLimiter, error) {
	if rs, ok := b.(rateSetter); ok {
		return rs.Rates(specs)
	}
	s := &rateSet{lims: make([]admit.KeyedLimiter, len(specs))}
	for i, sp := range specs {
		lim, err := b.Rate(sp)
		if err != nil {
			return nil, err
		}
		if _, ok := lim.(admit.Refunder); !ok {
			return nil, fmt.Errorf("%w: the store's rate limiters cannot give back what they took (admit.Refunder), which a rule with several rates needs", ErrInvalidPolicy)
		}
		s.lims[i] = lim
	}
	return s, nil
}

// rateSet decides a request against every one of its limiters, each
// keeping one rate of the same key: admitted iff all admit it; when one
// refuses, the others give back what they took (so a refusal consumes
// nothing, once it is decided), and the decision is the refusal with the
// longest RetryAfter (when every rate would admit the request). An
// admission reports the rate with the fewest Remaining (then the longest
// ResetAfter), as compose.Admit does.
type rateSet struct {
	lims []admit.KeyedLimiter
}

func (s *rateSet) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	var took [maxRates]bool
	var best admit.Decision
	refused := false
	for i, lim := range s.lims {
		d, err := lim.Allow(ctx, r)
		if err != nil {
			s.undo(ctx, r, took[:i])
			return d, err
		}
		took[i] = d.Allowed && r.N > 0
		switch {
		case i == 0:
			best = d
		case !d.Allowed:
			if best.Allowed || d.RetryAfter > best.RetryAfter {
				best = d
			}
		case best.Allowed && restrictive(&d, &best):
			best = d
		}
		refused = refused || !d.Allowed
	}
	if refused {
		s.undo(ctx, r, took[:len(s.lims)])
	}
	return best, nil
}

// undo gives back the events of r the limiters marked in took admitted.
func (s *rateSet) undo(ctx context.Context, r admit.Request, took []bool) {
	ctx = context.WithoutCancel(ctx)
	for i, t := range took {
		if t {
			_ = s.lims[i].(admit.Refunder).Refund(ctx, r)
		}
	}
}

// Refund gives back r's events to every rate.
func (s *rateSet) Refund(ctx context.Context, r admit.Request) error {
	var first error
	for _, lim := range s.lims {
		if err := lim.(admit.Refunder).Refund(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Healthy reports the health of the store of the first rate, if it
// reports one (admit.HealthReporter): the failure policies' breaker
// recovers by it.
func (s *rateSet) Healthy() bool {
	if h, ok := s.lims[0].(admit.HealthReporter); ok {
		return h.Healthy()
	}
	return true
}
