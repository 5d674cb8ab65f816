package compose_test

// Refunds through a Guard and a Shared: who gets them, bad input, timeouts.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// countingRefunder forwards to a keyed limiter and counts in a probe.
type countingRefunder struct {
	p   *probe
	lim *keyed.Limiter
}

func (c *countingRefunder) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	key, n := req.Key, req.N
	return c.p.Allow(ctx, admit.Request{Key: key, N: n})
}

func (c *countingRefunder) Refund(ctx context.Context, req admit.Request) error {
	key, n := req.Key, req.N
	if err := c.lim.Refund(ctx, admit.Request{Key: key, N: n}); err != nil {
		return err
	}
	return c.p.Refund(ctx, admit.Request{Key: key, N: n})
}

// TestGuardRefund: a Guard gives events back to the limiter that decides
// its requests now.
func TestGuardRefund(t *testing.T) {
	t.Run("healthy primary", func(t *testing.T) {
		prim, local := newProbe("primary", admits(5)), newProbe("local", admits(5))
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.Fallback(local)})
		allow(t, g, "k", 2)
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 2}); err != nil {
			t.Fatal(err)
		}
		if _, r := prim.counts(); r != 1 || prim.held("k") != 0 {
			t.Errorf("primary: %d refunds", r)
		}
		if _, r := local.counts(); r != 0 {
			t.Errorf("local: %d refunds", r)
		}
	})
	t.Run("breaker open", func(t *testing.T) {
		prim, local := newProbe("primary", fails(errDown)), newProbe("local", admits(5))
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.Breaker(compose.Fallback(local)), Threshold: 1, ProbeInterval: time.Hour})
		allow(t, g, "k", 1) // fails: the breaker opens, the local limiter decides
		allow(t, g, "k", 2)
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 3}); err != nil {
			t.Fatal(err)
		}
		if _, r := prim.counts(); r != 0 {
			t.Errorf("primary refunded %d times while the breaker is open", r)
		}
		if local.held("k") != 0 {
			t.Errorf("local holds %d", local.held("k"))
		}
	})
	t.Run("primary fails the refund", func(t *testing.T) {
		local := newProbe("local", admits(5))
		prim := &failingRefunder{probe: newProbe("primary", fails(errDown)), err: errDown}
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.Fallback(local), Threshold: 100})
		allow(t, g, "k", 2) // the primary fails, the local decides
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 2}); err != nil {
			t.Fatal(err)
		}
		if local.held("k") != 0 {
			t.Errorf("local holds %d", local.held("k"))
		}
		// An error about the request is returned.
		prim.err = admit.ErrKeyTooLong
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 2}); !errors.Is(err, admit.ErrKeyTooLong) {
			t.Errorf("an error about the request: %v", err)
		}
	})
	t.Run("fail open", func(t *testing.T) {
		prim := newProbe("primary", fails(errDown))
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.Breaker(compose.FailOpen), Threshold: 1, ProbeInterval: time.Hour})
		allow(t, g, "k", 1)
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 1}); err != nil {
			t.Errorf("FailOpen has nothing to give back: %v", err)
		}
	})
	t.Run("not refunders", func(t *testing.T) {
		g := mustGuard(t, &oneWay{}, compose.GuardConfig{Policy: compose.FailOpen})
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "compose: the limiter cannot give events back: the primary") {
			t.Errorf("a one-way primary: %v", err)
		}
		prim := newProbe("primary", fails(errDown))
		g = mustGuard(t, prim, compose.GuardConfig{Policy: compose.Breaker(compose.Fallback(&oneWay{})), Threshold: 1, ProbeInterval: time.Hour})
		allow(t, g, "k", 1)
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "compose: the limiter cannot give events back: the local limiter") {
			t.Errorf("a one-way local limiter: %v", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		prim := newProbe("primary", admits(5))
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen})
		if err := g.Refund(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
			t.Errorf("n < 0: %v", err)
		}
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 0}); err != nil {
			t.Errorf("n = 0: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.Refund(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: %v", err)
		}
		if _, r := prim.counts(); r != 0 {
			t.Errorf("%d refunds reached the primary", r)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		local := newProbe("local", admits(5))
		g := mustGuard(t, &hangingRefunder{probe: newProbe("primary", admits(5))}, compose.GuardConfig{Policy: compose.Fallback(local), Timeout: 5 * time.Millisecond})
		allow(t, g, "k", 1)
		if err := g.Refund(ctx, admit.Request{Key: "k", N: 1}); err != nil {
			t.Fatal(err)
		}
		if _, r := local.counts(); r != 1 {
			t.Errorf("a refund that timed out went to the local limiter %d times", r)
		}
	})
}

// failingRefunder's refunds fail with err.
type failingRefunder struct {
	*probe
	err error
}

func (f *failingRefunder) Refund(context.Context, admit.Request) error { return f.err }

// hangingRefunder's refunds wait for their context.
type hangingRefunder struct{ *probe }

func (h *hangingRefunder) Refund(ctx context.Context, req admit.Request) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestSharedRefund: a Shared gives back under its current share.
func TestSharedRefund(t *testing.T) {
	live := 2
	sh, err := keyed.LiveShare(keyed.Config{Limit: admit.PerSecond(10)}, func() int { return live })
	if err != nil {
		t.Fatal(err)
	}
	if d := allow(t, sh, "k", 5); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("%+v", d)
	}
	if err := sh.Refund(ctx, admit.Request{Key: "k", N: 3}); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, sh, "k", 0); d.Remaining < 3 {
		t.Fatalf("after Refund: %+v", d)
	}
	if err := sh.Refund(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n < 0: %v", err)
	}
}
