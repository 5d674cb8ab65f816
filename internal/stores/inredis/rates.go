package inredis

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/redisstore"
)

// Rates builds a Redis limiter per stores.Spec of specs and returns one limiter
// deciding them together for a key, all or nothing, in one script call
// (redisstore.Store.AllowLayers, tagged by the key, so that each rate's
// state is the key its own limiter's Allow and Refund use): a request is
// admitted, and counted by every rate, only if every rate admits it, and
// otherwise counted by none. The decision is AllowLayers': the refusal
// with the longest RetryAfter, or the admission with the fewest
// Remaining. Requests are decided at r.Clock.Now() when it is not nil and
// they give no instant.
func (r *Redis) Rates(specs []stores.Spec) (admit.KeyedLimiter, error) {
	s := &rateSet{store: r.Store, clock: r.Clock, lims: make([]*redisstore.Limiter, len(specs))}
	for i := range specs {
		lim, err := r.Store.Limiter(redisstore.LimiterConfig{
			Options:   redisOptions(&specs[i]),
			Algorithm: specs[i].Algorithm,
			Limit:     specs[i].Limit,
		})
		if err != nil {
			return nil, err
		}
		s.lims[i] = lim
	}
	return s, nil
}

// rateSet is the limiter Rates returns.
type rateSet struct {
	store *redisstore.Store
	clock admit.Clock
	lims  []*redisstore.Limiter
}

func (s *rateSet) at(r admit.Request) admit.Request {
	if r.At.IsZero() && s.clock != nil {
		r.At = s.clock.Now()
	}
	return r
}

func (s *rateSet) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if r.Limit != (admit.Limit{}) {
		return admit.Decision{RetryAfter: admit.InfDuration}, fmt.Errorf("%w: a limiter of several rates takes no per-call limit", admit.ErrInvalidConfig)
	}
	layers := make([]redisstore.Layer, len(s.lims))
	for i, lim := range s.lims {
		layers[i] = redisstore.Layer{Limiter: lim, Key: r.Key}
	}
	d, _, err := s.store.AllowLayers(ctx, s.at(r), layers, nil)
	return d, err
}

// Refund gives back r's events to every rate.
func (s *rateSet) Refund(ctx context.Context, r admit.Request) error {
	r = s.at(r)
	var first error
	for _, lim := range s.lims {
		if err := lim.Refund(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Healthy reports whether the store answered its last round trip.
func (s *rateSet) Healthy() bool { return s.lims[0].Healthy() }
