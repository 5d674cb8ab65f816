package compose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// brokenSlots fails every call with err.
type brokenSlots struct{ err error }

func (b brokenSlots) TryAcquire(context.Context, admit.Request) (admit.Releaser, admit.Decision, error) {
	return nil, admit.Decision{}, b.err
}

// countSlots grants every request, counting what is held.
type countSlots struct{ held *int64 }

type countRelease struct {
	held *int64
	n    int64
}

func (r *countRelease) Release() { *r.held -= r.n; r.n = 0 }

func (c countSlots) TryAcquire(_ context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	*c.held += r.N
	return &countRelease{c.held, r.N}, admit.Decision{Allowed: true, Rule: "local"}, nil
}

// errSlotsTimeout is the error of a primary whose store did not answer in
// time.
var errSlotsTimeout = fmt.Errorf("slots store did not answer in time: %w", context.DeadlineExceeded)

func TestGuardSlots(t *testing.T) {
	ctx := context.Background()
	down := brokenSlots{errSlotsTimeout}
	open, err := GuardSlots(down, GuardConfig{Options: admit.Options{Name: "r"}, Policy: FailOpen})
	if err != nil {
		t.Fatal(err)
	}
	if rel, d, err := open.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); err != nil || rel != nil || !d.Allowed || d.Rule != "r/fail-open" || d.Kind != admit.KindConcurrency {
		t.Errorf("fail open: %v %+v %v", rel, d, err)
	}
	closed, err := GuardSlots(down, GuardConfig{Options: admit.Options{Name: "r"}, Policy: Breaker(FailClosed), RetryAfter: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, d, err := closed.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); err != nil || d.Allowed || d.Rule != "r/fail-closed" || d.RetryAfter != 3*time.Second {
		t.Errorf("fail closed: %+v %v", d, err)
	}
	if _, d, err := closed.TryAcquire(ctx, admit.Request{Key: "k", N: 0}); err != nil || !d.Allowed {
		t.Errorf("fail closed, a peek: %+v %v", d, err)
	}
	var held int64
	fb, err := GuardSlots(down, GuardConfig{Options: admit.Options{Name: "r"}, Policy: FallbackSlots(countSlots{&held})})
	if err != nil {
		t.Fatal(err)
	}
	rel, d, err := fb.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	if err != nil || !d.Allowed || d.Rule != "r/fallback" || held != 2 {
		t.Errorf("fallback: %+v %v, %d held", d, err, held)
	}
	rel.Release()
	if held != 0 {
		t.Errorf("fallback's slots not given back: %d held", held)
	}
	// Not a failure of the store: returned as it is.
	bad := fmt.Errorf("key: %w", admit.ErrKeyTooLong)
	g, _ := GuardSlots(brokenSlots{bad}, GuardConfig{Policy: FailOpen})
	if _, _, err := g.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, bad) {
		t.Errorf("a request's error: %v", err)
	}
	// A canceled caller is not a failure either.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := open.TryAcquire(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, errSlotsTimeout) {
		t.Errorf("canceled: %v", err)
	}
	// A healthy primary decides.
	ok, _ := GuardSlots(countSlots{&held}, GuardConfig{Policy: FailClosed})
	if _, d, err := ok.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); err != nil || !d.Allowed || d.Rule != "local" {
		t.Errorf("healthy: %+v %v", d, err)
	}
	for _, c := range []struct {
		p    Policy
		text string
	}{
		{Policy{}, "compose: invalid policy: the zero Policy"},
		{Fallback(countSlots{&held}.asLimiter()), "compose: invalid policy: Fallback is for rate limiters"},
		{FallbackSlots(nil), "compose: nil limiter: FallbackSlots(nil)"},
	} {
		if _, err := GuardSlots(down, GuardConfig{Policy: c.p}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("GuardSlots(%v, GuardConfig{}): %v, want admit.ErrInvalidConfig saying %q", c.p, err, c.text)
		}
	}
	if _, err := GuardSlots(nil, GuardConfig{Policy: FailOpen}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "compose: nil limiter: GuardSlots needs a primary") {
		t.Errorf("nil primary: %v", err)
	}
	if _, err := GuardSlots(down, GuardConfig{Policy: FailOpen, RetryAfter: -1}); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("bad config: %v", err)
	}
}

// asLimiter is any rate limiter, for Fallback.
func (c countSlots) asLimiter() admit.KeyedLimiter { return allowAll{} }

type allowAll struct{}

func (allowAll) Allow(context.Context, admit.Request) (admit.Decision, error) {
	return admit.Decision{Allowed: true}, nil
}
