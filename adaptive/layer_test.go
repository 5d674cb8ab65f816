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
	a := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: clk, Name: "rate"}, Min: 1, Max: 100, Initial: 3})
	g := mustGradient(t, GradientConfig{Options: admit.Options{Clock: clk, Name: "inflight"}, Min: 2, Max: 10, WindowSamples: 1000, WindowTime: -1})
	perUser, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(100)})
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
	if _, err := a.Layer().Allow(ctx, admit.Request{Key: "", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if err := a.Layer().(admit.Refunder).Refund(ctx, admit.Request{Key: "", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if err := a.Layer().(admit.Refunder).Refund(ctx, admit.Request{Key: "", N: 0}); err != nil {
		t.Fatal(err)
	}
	if r, d, err := g.Layer().TryAcquire(ctx, admit.Request{Key: "", N: 11}); err != nil || r != nil || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatal(r, d, err)
	}
	if _, _, err := g.Layer().TryAcquire(ctx, admit.Request{Key: "", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if r, d, err := g.Layer().TryAcquire(ctx, admit.Request{Key: "", N: 0}); err != nil || r != nil || !d.Allowed {
		t.Fatal(r, d, err)
	}
	// A Releaser is a Token: a caller can report a drop through it.
	r, _, _ := g.Layer().TryAcquire(ctx, admit.Request{Key: "", N: 1})
	if _, ok := r.(compose.Finisher); !ok {
		t.Fatalf("the Releaser %T is not a compose.Finisher", r)
	}
	if !r.(Token).Done(Dropped) {
		t.Fatal("the token held nothing")
	}
	r.Release() // second release: nothing
	if st := g.Stats(); st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLayerCapabilities: AIMD.Layer's doc comment promises that the
// limiter it returns is an admit.Refunder and a compose.Learner (a chain
// refunds it, and teaches it through a compose.Held), and Gradient.Layer's
// that the Slots it returns are admit.Slots whose Releasers are
// compose.Finishers. The types behind them are unexported, so only these
// assertions keep the capabilities from vanishing.
func TestLayerCapabilities(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Min: 1, Max: 10})
	var l admit.KeyedLimiter = a.Layer()
	if _, ok := l.(admit.Refunder); !ok {
		t.Errorf("AIMD.Layer() %T is not an admit.Refunder", l)
	}
	if _, ok := l.(compose.Learner); !ok {
		t.Errorf("AIMD.Layer() %T is not a compose.Learner", l)
	}
	g := mustGradient(t, GradientConfig{Min: 1, Max: 10})
	var s admit.Slots = g.Layer()
	r, d, err := s.TryAcquire(context.Background(), admit.Request{N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("TryAcquire: %+v, %v", d, err)
	}
	if _, ok := r.(compose.Finisher); !ok {
		t.Errorf("the Releaser %T of Gradient.Layer() is not a compose.Finisher", r)
	}
	r.Release()
}

// TestLayerOutcomes: through a chain and a compose.Held, Finish reports
// the outcome to the AIMD (a failure halves the rate, a success adds the
// step, a slow success is a failure) and to the Gradient's Token; Release
// reports nothing to the AIMD; a request refused by a later layer teaches
// the AIMD nothing.
func TestLayerOutcomes(t *testing.T) {
	ctx := context.Background()
	clk := admittest.NewManualClock(t0)
	a := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: clk, Name: "rate"}, Min: 1, Max: 100, Initial: 40, LatencyThreshold: 100 * time.Millisecond})
	g := mustGradient(t, GradientConfig{Options: admit.Options{Clock: clk, Name: "inflight"}, Min: 1, Max: 10, Initial: 4, WindowSamples: 1, WindowTime: -1})
	chain, err := compose.All(compose.Layer{Limiter: a.Layer()}, compose.Layer{Slots: g.Layer()})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"", ""}
	admitNow := func(h *compose.Held) {
		t.Helper()
		if d, err := chain.AllowKeys(ctx, keys, 1, h); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		if h.Len() != 2 || !h.WantsOutcome() {
			t.Fatalf("Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
		}
	}
	var h compose.Held
	admitNow(&h)
	clk.Advance(10 * time.Millisecond)
	h.Finish(true)
	if r := a.Limit().Rate; r != 20 {
		t.Fatalf("rate %d after a failure, want 20", r)
	}
	if st := g.Stats(); st.InFlight != 0 || st.Windows != 1 || st.LongRTT != 0 {
		// A window of one drop: no latency learnt.
		t.Fatalf("gradient after a drop: %+v", st)
	}
	admitNow(&h)
	clk.Advance(20 * time.Millisecond)
	h.Finish(false)
	if r := a.Limit().Rate; r != 21 {
		t.Fatalf("rate %d after a success, want 21", r)
	}
	if st := g.Stats(); st.InFlight != 0 || st.Windows != 2 || st.LongRTT != 20*time.Millisecond {
		t.Fatalf("gradient after a success of 20ms: %+v", st)
	}
	// A success slower than the threshold is a failure for the AIMD.
	admitNow(&h)
	clk.Advance(150 * time.Millisecond)
	h.Finish(false)
	if r := a.Limit().Rate; r != 10 {
		t.Fatalf("rate %d after a slow success, want 10", r)
	}
	// Release: slots back, no feedback to the AIMD.
	admitNow(&h)
	h.Release()
	if r := a.Limit().Rate; r != 10 {
		t.Fatalf("rate %d after Release, want 10", r)
	}
	// A grant finishes once.
	admitNow(&h)
	h.Finish(true)
	h.Finish(true)
	if r := a.Limit().Rate; r != 5 {
		t.Fatalf("rate %d after one failure finished twice, want 5", r)
	}
	// A request refused by a later layer: the AIMD is refunded and learns
	// nothing.
	full := mustGradient(t, GradientConfig{Options: admit.Options{Clock: clk}, Min: 1, Max: 1})
	tok, _ := full.TryAcquire()
	refusing, err := compose.All(compose.Layer{Limiter: a.Layer()}, compose.Layer{Slots: full.Layer()})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := refusing.AllowKeys(ctx, keys, 1, &h); err != nil || d.Allowed || h.Len() != 0 || h.WantsOutcome() {
		t.Fatalf("%+v, %v, Len %d", d, err, h.Len())
	}
	h.Finish(true)
	if r := a.Limit().Rate; r != 5 {
		t.Fatalf("rate %d after a refused request, want 5", r)
	}
	tok.Release()

	// The grant on its own: Release, then Finish, reports nothing.
	f := a.Layer().(compose.Learner).Track("", 1)
	f.Release()
	f.Finish(true)
	if r := a.Limit().Rate; r != 5 {
		t.Fatalf("rate %d after Release then Finish, want 5", r)
	}
	// A Token on its own: Finish(false) is a success, once.
	tok, _ = g.TryAcquire()
	clk.Advance(20 * time.Millisecond)
	tok.Finish(false)
	tok.Finish(true)
	// Windows of one sample each: the drop, 20ms, 150ms, the release,
	// the drop finished once, and this one.
	if st := g.Stats(); st.InFlight != 0 || st.Windows != 6 {
		t.Fatalf("gradient after a Token's Finish: %+v", st)
	}
}
