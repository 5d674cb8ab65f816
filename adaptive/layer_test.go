package adaptive

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

func TestLayers(t *testing.T) {
	ctx := context.Background()
	clk := admittest.NewManualClock(t0)
	a := mustAIMD(t, 1, 100, WithInitial(3), WithClock(clk), WithName("rate"))
	g := mustGradient(t, 2, 10, WithClock(clk), WithName("inflight"), WithWindow(1000, 0))
	perUser, err := keyed.New(admit.AlgGCRA, admit.PerSecond(100), keyed.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := compose.All(
		compose.Layer{Name: "user", Limiter: perUser},
		compose.Layer{Limiter: a.Layer()},
		compose.Layer{Slots: g.Layer()},
	)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"alice", "", ""}
	var h1, h2 compose.Held
	for i, h := range []*compose.Held{&h1, &h2} {
		d, err := chain.AllowKeys(ctx, keys, 1, h)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	// The third passes the rate (3/s) but not the concurrency limit (2):
	// the rate layer is refunded.
	var h3 compose.Held
	d, err := chain.AllowKeys(ctx, keys, 1, &h3)
	if err != nil || d.Allowed || d.Rule != "inflight" || d.Kind != admit.KindConcurrency {
		t.Fatalf("third: %+v, %v", d, err)
	}
	if !a.AllowN(t0, 1) || a.AllowN(t0, 1) {
		t.Fatal("the rate layer was not refunded")
	}
	clk.Advance(10 * time.Millisecond)
	h1.Release()
	h2.Release()
	if st := g.Stats(); st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The rate layer refuses now (3 used at t0), naming itself.
	var h4 compose.Held
	d, err = chain.AllowKeys(ctx, keys, 1, &h4)
	if err != nil || d.Allowed || d.Rule != "rate" || d.RetryAfter != 323333334 {
		t.Fatalf("fourth: %+v, %v", d, err)
	}

	// Bad input.
	if _, err := a.Layer().Allow(ctx, "", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if err := a.Layer().Refund(ctx, "", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if err := a.Layer().Refund(ctx, "", 0); err != nil {
		t.Fatal(err)
	}
	if r, d, err := g.Layer().TryAcquire(ctx, "", 11); err != nil || r != nil || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatal(r, d, err)
	}
	if _, _, err := g.Layer().TryAcquire(ctx, "", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if r, d, err := g.Layer().TryAcquire(ctx, "", 0); err != nil || r != nil || !d.Allowed {
		t.Fatal(r, d, err)
	}
	// A Releaser is a Token: a caller can report a drop through it.
	r, _, _ := g.Layer().TryAcquire(ctx, "", 1)
	if !r.(Token).Done(Dropped) {
		t.Fatal("the token held nothing")
	}
	r.Release() // second release: nothing
	if st := g.Stats(); st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}
