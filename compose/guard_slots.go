package compose

import (
	"context"
	"fmt"
	"math"

	"github.com/admit-go/admit"
)

// GuardSlots returns primary, a concurrency layer kept in a shared store
// (redisstore.ConcurrencyLimiter.Slots), with cfg.Policy applied to each call
// that fails, as a Guard applies it to a rate limiter: FailOpen grants
// nothing and admits (Limit admit.Unlimited), FailClosed refuses (a
// request of N = 0 is allowed, as always; RetryAfter and ResetAfter are
// GuardConfig.RetryAfter), FallbackSlots(local) asks local for
// the slots, whose Releaser then gives them back to local.
//
// A call fails when it returns an error that IsFailure (or the function
// of GuardConfig.IsFailure) reports as a failure of the primary, and the
// caller's context is not done; other errors are returned as they are.
// Slots have no breaker and no timeout of the layer's own: every call asks
// the primary, within the store's own timeout (a Breaker policy decides as
// the policy it wraps, and GuardConfig's Timeout, Threshold,
// ProbeInterval, Clock, Observer and Logger are ignored), since slots granted by the store must be
// given back to it.
//
// The decisions the policy makes are marked as a Guard's are: their Rule
// is the name (GuardConfig.Name) followed by "/fail-open", "/fail-closed" or
// "/fallback", and their Kind is admit.KindConcurrency.
//
// The error wraps admit.ErrInvalidConfig and says what is wrong: a nil
// primary or FallbackSlots(nil) ("compose: nil limiter"), the zero Policy
// or Fallback, which is for rate limiters ("compose: invalid policy"), or
// another field of cfg outside its domain. The layer is safe for concurrent use if
// primary and local are.
func GuardSlots(primary admit.Slots, cfg GuardConfig) (admit.Slots, error) {
	policy := cfg.Policy
	if isNil(primary) {
		return nil, fmt.Errorf("%w: GuardSlots needs a primary", errNilLimiter)
	}
	switch {
	case policy.kind == failOpen || policy.kind == failClosed:
	case policy.kind == fallback && policy.local != nil:
		return nil, fmt.Errorf("%w: Fallback is for rate limiters: give GuardSlots FallbackSlots(local)", errInvalidPolicy)
	case policy.kind == fallback && isNil(policy.slots):
		return nil, fmt.Errorf("%w: FallbackSlots(nil): want the local slots to grant when the primary fails", errNilLimiter)
	case policy.kind != fallback:
		return nil, fmt.Errorf("%w: the zero Policy: want FailOpen, FailClosed or FallbackSlots(local)", errInvalidPolicy)
	}
	o, err := cfg.options()
	if err != nil {
		return nil, err
	}
	rule := policy.suffix()
	if o.name != "" {
		rule = o.name + "/" + rule
	}
	return &slotGuard{
		primary:   primary,
		local:     policy.slots,
		kind:      policy.kind,
		isFailure: o.isFailure,
		openD:     admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: math.MaxInt64, Rule: rule, Kind: admit.KindConcurrency},
		closedD:   admit.Decision{RetryAfter: o.retryAfter, ResetAfter: o.retryAfter, Rule: rule, Kind: admit.KindConcurrency},
	}, nil
}

// slotGuard is what GuardSlots returns.
type slotGuard struct {
	primary   admit.Slots
	local     admit.Slots
	kind      policyKind
	isFailure func(error) bool
	openD     admit.Decision
	closedD   admit.Decision
}

func (s *slotGuard) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	rel, d, err := s.primary.TryAcquire(ctx, r)
	if err == nil || ctx.Err() != nil || !s.isFailure(err) {
		return rel, d, err
	}
	switch s.kind {
	case failOpen:
		return nil, s.openD, nil
	case failClosed:
		if r.N == 0 {
			return nil, admit.Decision{Allowed: true, Rule: s.closedD.Rule, Kind: admit.KindConcurrency}, nil
		}
		return nil, s.closedD, nil
	}
	rel, d, err = s.local.TryAcquire(ctx, r)
	d.Rule = s.closedD.Rule
	return rel, d, err
}
