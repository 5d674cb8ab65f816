package adaptive

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

func TestNewAIMDBadInput(t *testing.T) {
	cases := []struct {
		name string
		cfg  AIMDConfig
		want error
	}{
		{"zero min", AIMDConfig{Min: 0, Max: 10}, errBounds},
		{"negative min", AIMDConfig{Min: -5, Max: 10}, errBounds},
		{"min above max", AIMDConfig{Min: 11, Max: 10}, errBounds},
		{"unlimited max", AIMDConfig{Min: 1, Max: admit.Inf}, errBounds},
		{"initial below min", AIMDConfig{Min: 5, Max: 10, Initial: 4}, errBounds},
		{"initial above max", AIMDConfig{Min: 5, Max: 10, Initial: 11}, errBounds},
		{"negative initial", AIMDConfig{Min: 5, Max: 10, Initial: -1}, admit.ErrInvalidConfig},
		{"factor 1", AIMDConfig{Min: 1, Max: 10, Factor: 1}, admit.ErrInvalidConfig},
		{"factor above 1", AIMDConfig{Min: 1, Max: 10, Factor: 2}, admit.ErrInvalidConfig},
		{"factor negative", AIMDConfig{Min: 1, Max: 10, Factor: -0.5}, admit.ErrInvalidConfig},
		{"factor NaN", AIMDConfig{Min: 1, Max: 10, Factor: math.NaN()}, admit.ErrInvalidConfig},
		{"step negative", AIMDConfig{Min: 1, Max: 10, Step: -1}, admit.ErrInvalidConfig},
		{"period negative", AIMDConfig{Min: 1, Max: 10, Period: -time.Second}, admit.ErrInvalidConfig},
		{"burst negative", AIMDConfig{Min: 1, Max: 10, Burst: -1}, admit.ErrInvalidConfig},
		{"threshold negative", AIMDConfig{Min: 1, Max: 10, LatencyThreshold: -1}, admit.ErrInvalidConfig},
		{"increase interval negative", AIMDConfig{Min: 1, Max: 10, IncreaseInterval: -1}, admit.ErrInvalidConfig},
		{"decrease interval negative", AIMDConfig{Min: 1, Max: 10, DecreaseInterval: -1}, admit.ErrInvalidConfig},
		{"capacity over 36 years", AIMDConfig{Min: 1, Max: 10, Period: 40 * 365 * 24 * time.Hour, Burst: 1}, admit.ErrInvalidLimit},
		{"burst × period over 2^63", AIMDConfig{Min: 1, Max: 10, Burst: 1e9, Period: 1e10}, admit.ErrInvalidLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAIMD(c.cfg)
			if !matches(err, c.want) || a != nil {
				t.Fatalf("NewAIMD = %v, %v; want an error wrapping %v", a, err, c.want)
			}
		})
	}
	// The zero fields are the defaults: a factor of 0.5, a step of 1, a
	// period of one second.
	a := mustAIMD(t, AIMDConfig{Min: 1, Max: 10, Initial: 8})
	if l := a.Limit(); l.Period != time.Second {
		t.Fatalf("limit %v, want a period of one second", l)
	}
	a.FeedbackAt(t0, Dropped, 0)
	if r := a.Limit().Rate; r != 4 {
		t.Fatalf("rate %d after a failure, want 4 (factor 0.5)", r)
	}
	a.FeedbackAt(t0, Succeeded, 0)
	if r := a.Limit().Rate; r != 5 {
		t.Fatalf("rate %d after a success, want 5 (step 1)", r)
	}
}

func mustAIMD(t testing.TB, cfg AIMDConfig) *AIMD {
	t.Helper()
	a, err := NewAIMD(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAIMDMoves checks the additive increase and multiplicative decrease,
// and the bounds.
func TestAIMDMoves(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: admittest.NewManualClock(t0)}, Min: 10, Max: 100, Initial: 40})
	rates := func(want ...int64) {
		t.Helper()
		if r := a.Limit().Rate; r != want[0] {
			t.Fatalf("rate %d, want %d", r, want[0])
		}
	}
	rates(40)
	for range 3 {
		a.Feedback(Succeeded) // +1 each
	}
	rates(43)
	a.Feedback(Dropped) // ×0.5, rounded down
	rates(21)
	a.Feedback(Ignored)
	a.Feedback(Outcome(9))
	rates(21)
	a.Feedback(Dropped)
	rates(10)
	a.Feedback(Dropped) // min
	rates(10)
	for range 200 {
		a.Feedback(Succeeded)
	}
	rates(100) // max
	if l := a.Limit(); l != (admit.Limit{Rate: 100, Period: time.Second, Burst: 100}) {
		t.Fatalf("limit %+v", l)
	}

	// A step that overshoots max lands on max; a factor close to 1 still
	// moves the rate down by at least one.
	b := mustAIMD(t, AIMDConfig{Min: 1, Max: 100, Initial: 95, Step: 7, Factor: 0.99})
	b.FeedbackAt(t0, Succeeded, 0)
	if b.Limit().Rate != 100 {
		t.Fatalf("rate %d", b.Limit().Rate)
	}
	b.FeedbackAt(t0, Dropped, 0) // 99
	b.FeedbackAt(t0, Dropped, 0) // 98.01 → 98
	if b.Limit().Rate != 98 {
		t.Fatalf("rate %d", b.Limit().Rate)
	}
	c := mustAIMD(t, AIMDConfig{Min: 1, Max: 2, Initial: 2, Factor: 0.999999})
	c.FeedbackAt(t0, Dropped, 0)
	c.FeedbackAt(t0, Dropped, 0)
	if c.Limit().Rate != 1 {
		t.Fatalf("rate %d", c.Limit().Rate)
	}
	// Extreme rates do not overflow.
	d := mustAIMD(t, AIMDConfig{Min: 1, Max: admit.Inf - 1, Initial: admit.Inf - 1, Step: math.MaxInt64, Burst: 1})
	d.FeedbackAt(t0, Succeeded, 0)
	if d.Limit().Rate != admit.Inf-1 {
		t.Fatalf("rate %d", d.Limit().Rate)
	}
	d.FeedbackAt(t0, Dropped, 0)
	if r := d.Limit().Rate; r <= 0 || r >= admit.Inf-1 {
		t.Fatalf("rate %d", r)
	}
}

// TestAIMDEnforces checks that the current rate is enforced exactly, and
// that a change of the rate keeps the events available.
func TestAIMDEnforces(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Options: admit.Options{Name: "db"}, Min: 1, Max: 100, Initial: 10, Step: 10})
	for i := range 10 {
		if !a.AllowN(t0, 1) {
			t.Fatalf("event %d refused", i)
		}
	}
	d := a.DecideN(t0, 1)
	want := admit.Decision{Limit: admit.Limit{Rate: 10, Period: time.Second, Burst: 10}, RetryAfter: 100 * time.Millisecond, ResetAfter: time.Second, Rule: "db"}
	if d != want {
		t.Fatalf("decision %+v, want %+v", d, want)
	}
	if !a.AllowN(at(100), 1) || a.AllowN(at(100), 1) {
		t.Fatal("not one event per 100ms")
	}
	// Up to 20/s at 100ms: nothing available then, and still nothing:
	// the rise grants no capacity; one event per 50ms from then on.
	a.FeedbackAt(at(100), Succeeded, 0)
	if a.Limit().Rate != 20 || a.AllowN(at(100), 1) || a.AllowN(at(149), 1) || !a.AllowN(at(150), 1) {
		t.Fatal("rise to 20/s")
	}
	// Full again at 1150ms: 20 available; down to 10/s keeps 10 (the new
	// burst), not 20.
	a.FeedbackAt(at(1150), Dropped, 0)
	if a.Limit().Rate != 10 || !a.AllowN(at(1150), 10) || a.AllowN(at(1150), 1) {
		t.Fatal("fall to 10/s")
	}
	if a.AllowN(at(1150), -1) || !a.AllowN(at(1150), 0) || a.AllowN(at(5000), 11) {
		t.Fatal("n < 0, n = 0 or n > burst")
	}
	if d := a.DecideN(at(1150), -1); d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("n=-1: %+v", d)
	}
	if d := a.DecideN(at(1150), 0); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("n=0: %+v", d)
	}

	// A fixed burst stays as the rate moves.
	b := mustAIMD(t, AIMDConfig{Min: 1, Max: 100, Initial: 50, Burst: 5})
	if !b.AllowN(t0, 5) || b.AllowN(t0, 1) || b.Limit().Burst != 5 {
		t.Fatal("burst 5")
	}
	b.FeedbackAt(t0, Dropped, 0)
	if b.Limit() != (admit.Limit{Rate: 25, Period: time.Second, Burst: 5}) {
		t.Fatalf("limit %+v", b.Limit())
	}
	// A longer period gives a finer rate: 30/min is one per 2s.
	c := mustAIMD(t, AIMDConfig{Min: 30, Max: 600, Period: time.Minute, Burst: 1})
	if !c.AllowN(t0, 1) || c.AllowN(at(1999), 1) || !c.AllowN(at(2000), 1) {
		t.Fatal("30/min")
	}
}

func TestAIMDIntervals(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Min: 1, Max: 100, Initial: 50, IncreaseInterval: time.Second, DecreaseInterval: 500 * time.Millisecond})
	a.FeedbackAt(at(0), Succeeded, 0) // the first change is free
	a.FeedbackAt(at(999), Succeeded, 0)
	if a.Limit().Rate != 51 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(1000), Succeeded, 0)
	if a.Limit().Rate != 52 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(1100), Dropped, 0) // the first cut is free, whatever the increases
	if a.Limit().Rate != 26 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(1500), Dropped, 0) // within 500ms of the cut
	if a.Limit().Rate != 26 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(1600), Dropped, 0)
	if a.Limit().Rate != 13 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(2599), Succeeded, 0) // within 1s of the cut
	if a.Limit().Rate != 13 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(at(2600), Succeeded, 0)
	if a.Limit().Rate != 14 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	// An instant before the last change changes nothing.
	a.FeedbackAt(at(0), Dropped, 0)
	a.FeedbackAt(at(0), Succeeded, 0)
	if a.Limit().Rate != 14 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
}

func TestAIMDIncreaseOnlyWhenLimited(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Min: 1, Max: 100, Initial: 2, IncreaseOnlyWhenLimited: true})
	a.FeedbackAt(t0, Succeeded, 0)
	if a.Limit().Rate != 2 {
		t.Fatal("grew without being limited")
	}
	a.AllowN(t0, 2)
	a.AllowN(t0, 1) // refused: the rate is what holds the traffic back
	a.FeedbackAt(t0, Succeeded, 0)
	a.FeedbackAt(t0, Succeeded, 0) // needs another refusal
	if a.Limit().Rate != 3 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	if d := a.DecideN(t0, 1); d.Allowed {
		t.Fatal("allowed")
	}
	a.FeedbackAt(t0, Succeeded, 0)
	if a.Limit().Rate != 4 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	// A wait counts as being limited too.
	clk := admittest.NewManualClock(t0)
	b := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: clk}, Min: 1, Max: 100, Initial: 1, IncreaseOnlyWhenLimited: true})
	b.Allow()
	done := make(chan error)
	go func() { done <- b.Wait(context.Background()) }()
	clk.BlockUntilTimers(context.Background(), 1)
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b.Feedback(Succeeded)
	if b.Limit().Rate != 2 {
		t.Fatalf("rate %d", b.Limit().Rate)
	}
}

func TestAIMDLatencyThreshold(t *testing.T) {
	a := mustAIMD(t, AIMDConfig{Min: 1, Max: 100, Initial: 40, LatencyThreshold: 200 * time.Millisecond})
	a.FeedbackAt(t0, Succeeded, 200*time.Millisecond)
	if a.Limit().Rate != 41 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(t0, Succeeded, 201*time.Millisecond) // too slow: a failure
	if a.Limit().Rate != 20 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
	a.FeedbackAt(t0, Succeeded, -time.Second) // unknown
	if a.Limit().Rate != 21 {
		t.Fatalf("rate %d", a.Limit().Rate)
	}
}

func TestAIMDWait(t *testing.T) {
	checkGoroutines(t)
	clk := admittest.NewManualClock(t0)
	a := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: clk}, Min: 1, Max: 10, Initial: 1})
	ctx := context.Background()
	if err := a.Wait(ctx); err != nil { // available at once
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait(ctx) }()
	clk.BlockUntilTimers(ctx, 1)
	clk.Advance(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned early: %v", err)
	default:
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A cancelled wait gives its event back.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- a.Wait(cctx) }()
	clk.BlockUntilTimers(ctx, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if !a.Allow() || a.Allow() {
		t.Fatal("the cancelled wait kept its event")
	}
	// Errors.
	if err := a.WaitN(ctx, -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if err := a.WaitN(ctx, 2); !errors.Is(err, admit.ErrExceedsBurst) {
		t.Fatal(err)
	}
	if err := a.WaitN(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// A wait that would end after the deadline is refused at once (the
	// deadline is real time: the clock reads it here).
	rclk := admittest.NewManualClock(time.Now())
	b := mustAIMD(t, AIMDConfig{Options: admit.Options{Clock: rclk}, Min: 1, Max: 10, Initial: 1})
	b.Allow()
	dctx, dcancel := context.WithDeadline(ctx, rclk.Now().Add(500*time.Millisecond))
	defer dcancel()
	if err := b.Wait(dctx); !errors.Is(err, admit.ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if err := a.WaitN(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// failingServer is a backend that serves capacity requests per second
// (a token bucket of burst capacity/10) and fails the rest.
type failingServer struct {
	lim *admit.GCRA
}

func newFailingServer(t testing.TB, capacity int64) *failingServer {
	lim, err := admit.NewGCRA(admit.PerSecond(capacity).WithBurst(max(capacity/10, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return &failingServer{lim}
}

// TestAIMDFindsCapacity drives an AIMD with unlimited demand against a
// backend that fails requests beyond its capacity C: the rate climbs by
// the step, halves on failures, never leaves its bounds, and the backend
// serves a good share of its capacity.
func TestAIMDFindsCapacity(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  AIMDConfig
	}{
		{"per success", AIMDConfig{}},
		{"per 10ms", AIMDConfig{IncreaseInterval: 10 * time.Millisecond, Step: 2}},
		{"per 10ms, cut once per 50ms", AIMDConfig{IncreaseInterval: 10 * time.Millisecond, Step: 2, DecreaseInterval: 50 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const C = 500
			srv := newFailingServer(t, C)
			cfg := c.cfg
			cfg.Min, cfg.Max = 20, 2000
			a := mustAIMD(t, cfg)
			var served, failed int
			var rateSum float64
			prev := a.Limit().Rate
			const ms = 10000
			for i := range ms {
				now := at(float64(i))
				for a.AllowN(now, 1) {
					ok := srv.lim.AllowN(now, 1)
					if ok {
						served++
						a.FeedbackAt(now, Succeeded, 0)
					} else {
						failed++
						a.FeedbackAt(now, Dropped, 0)
					}
					r := a.Limit().Rate
					if r < 20 || r > 2000 {
						t.Fatalf("rate %d left its bounds", r)
					}
					if ok && r != prev && r != prev+1 && !(c.cfg.Step == 2 && r == prev+2) {
						t.Fatalf("success moved the rate from %d to %d", prev, r)
					}
					if !ok && r != prev && r != max(prev/2, 20) {
						t.Fatalf("failure moved the rate from %d to %d", prev, r)
					}
					prev = r
				}
				rateSum += float64(a.Limit().Rate)
			}
			thr := float64(served) / (ms / 1000)
			t.Logf("served %.0f/s of %d, failed %d, mean rate %.0f/s", thr, C, failed, rateSum/ms)
			if thr < 0.5*C || thr > 1.05*C {
				t.Errorf("served %.0f/s, capacity %d/s", thr, C)
			}
			if mean := rateSum / ms; mean < 0.4*C || mean > 2*C {
				t.Errorf("mean rate %.0f/s, capacity %d/s", mean, C)
			}
		})
	}
}

// TestAIMDConcurrent runs decisions, waits and feedback from many
// goroutines: the rate stays within its bounds, and at one instant no
// more than the burst is admitted.
func TestAIMDConcurrent(t *testing.T) {
	checkGoroutines(t)
	a := mustAIMD(t, AIMDConfig{Min: 10, Max: 1000, Initial: 100, Burst: 100})
	var (
		wg       sync.WaitGroup
		admitted atomic.Int64
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				if a.AllowN(t0, 1) {
					admitted.Add(1)
				}
				o := Succeeded
				if (w+i)%7 == 0 {
					o = Dropped
				}
				a.FeedbackAt(t0, o, 0)
				if r := a.Limit().Rate; r < 10 || r > 1000 {
					t.Errorf("rate %d", r)
				}
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n > 100 {
		t.Fatalf("admitted %d at one instant, burst 100", n)
	}
}
