package compose_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// resettable is a primary that records its resets and fails them on
// demand.
type resettable struct {
	*fakePrimary
	resets []string
	err    error
}

func (r *resettable) Reset(_ context.Context, key string) error {
	r.resets = append(r.resets, key)
	return r.err
}

// TestGuardReset: a Guard resets its primary and, under Fallback, its
// local limiter, even with the primary failing; a Shared as the local
// limiter is reset too; a primary that is not an admit.Resetter is
// refused.
func TestGuardReset(t *testing.T) {
	local, err := keyed.New(keyed.Config{Limit: admit.PerMinute(1)})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := local.Allow(ctx, admit.Request{Key: "k", N: 1}); !d.Allowed {
		t.Fatal(d)
	}
	if d, _ := local.Allow(ctx, admit.Request{Key: "k", N: 1}); d.Allowed {
		t.Fatal("the local limiter admitted twice")
	}
	prim := &resettable{fakePrimary: newPrimary(healthy)}
	g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.Fallback(local)})
	if err := g.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if len(prim.resets) != 1 || prim.resets[0] != "k" {
		t.Errorf("the primary's resets: %q", prim.resets)
	}
	if d, _ := local.Allow(ctx, admit.Request{Key: "k", N: 1}); !d.Allowed {
		t.Error("the local limiter was not reset")
	}
	errDown := errors.New("store down")
	prim.err = errDown
	local.Allow(ctx, admit.Request{Key: "k", N: 1})
	if err := g.Reset(ctx, "k"); !errors.Is(err, errDown) {
		t.Errorf("a failing primary: %v", err)
	}
	if d, _ := local.Allow(ctx, admit.Request{Key: "k", N: 1}); !d.Allowed {
		t.Error("the local limiter was not reset while the primary failed")
	}

	sh, err := keyed.LiveShare(keyed.Config{Limit: admit.PerMinute(2)}, func() int { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	sh.Allow(ctx, admit.Request{Key: "s", N: 2})
	gs := mustGuard(t, &resettable{fakePrimary: newPrimary(healthy)}, compose.GuardConfig{Policy: compose.Fallback(sh)})
	if err := gs.Reset(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if d, _ := sh.Allow(ctx, admit.Request{Key: "s", N: 2}); !d.Allowed {
		t.Error("the Shared was not reset")
	}
	if err := mustGuard(t, newPrimary(healthy), compose.GuardConfig{Policy: compose.FailOpen}).Reset(ctx, "k"); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "compose: the limiter cannot reset a key") {
		t.Errorf("a limiter without Reset: %v", err)
	}
}
