package inredis

import (
	"context"
	"errors"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/lanekey"
	"github.com/admit-go/admit/internal/stores"
)

// inBudgets is what redisstore's share limiter (Store.Share) offers beyond
// the contract: decisions and refunds in any budget of the limiter.
type inBudgets interface {
	AllowIn(ctx context.Context, budget string, r admit.Request) (admit.Decision, error)
	RefundIn(ctx context.Context, budget string, r admit.Request) error
	admit.HealthReporter
}

// share returns the limiter of a stores.Spec with a Share: redisstore's share of
// s.Share's budget, whose request keys name the tenant and the budget
// (see lanekey).
func (r *Redis) share(s stores.Spec) (admit.KeyedLimiter, error) {
	cfg := *s.Share
	cfg.Options = redisOptions(&s)
	lim, err := r.Store.Share(cfg)
	if err != nil {
		return nil, err
	}
	in, ok := lim.(inBudgets)
	if !ok {
		return nil, errors.New("stores: redisstore's share decides in one budget only") // cannot happen
	}
	return &budgetShare{in, r.Clock}, nil
}

// budgetShare is a share limiter of many budgets as an admit.KeyedLimiter
// whose keys name the tenant and the budget, deciding at clock's instants
// when clock is not nil.
type budgetShare struct {
	in    inBudgets
	clock admit.Clock
}

func (b *budgetShare) split(r admit.Request) (string, admit.Request) {
	tenant, budget := lanekey.Split(r.Key)
	r.Key = tenant
	if r.At.IsZero() && b.clock != nil {
		r.At = b.clock.Now()
	}
	return budget, r
}

func (b *budgetShare) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	budget, r := b.split(r)
	return b.in.AllowIn(ctx, budget, r)
}

func (b *budgetShare) Refund(ctx context.Context, r admit.Request) error {
	budget, r := b.split(r)
	return b.in.RefundIn(ctx, budget, r)
}

func (b *budgetShare) Healthy() bool { return b.in.Healthy() }
