package compose_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

var ctx = context.Background()

func mustGuard(t testing.TB, primary compose.Limiter, p compose.Policy, opts ...compose.Option) *compose.Guard {
	t.Helper()
	g, err := compose.NewGuard(primary, p, opts...)
	if err != nil {
		t.Fatalf("NewGuard: %v", err)
	}
	return g
}

func allow(t testing.TB, g compose.Limiter, key string, n int64) admit.Decision {
	t.Helper()
	d, err := g.Allow(ctx, key, n)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, n, err)
	}
	return d
}

func TestHealthyPrimaryDecides(t *testing.T) {
	for _, p := range []compose.Policy{compose.FailOpen, compose.FailClosed, compose.Breaker(compose.FailOpen)} {
		prim := newPrimary(healthy)
		obs := &recorder{}
		g := mustGuard(t, prim, p, compose.WithObserver(obs))
		for range 3 {
			if d := allow(t, g, "k", 1); d != primaryDecision {
				t.Errorf("%v: decision %+v, want the primary's %+v", p, d, primaryDecision)
			}
		}
		if s := g.Stats(); s != (compose.Stats{}) {
			t.Errorf("%v: stats %+v, want zero", p, s)
		}
		if prim.calls.Load() != 3 || obs.decided.Load() != 0 || len(obs.Events()) != 0 {
			t.Errorf("%v: %d calls, %d decisions observed, events %v", p, prim.calls.Load(), obs.decided.Load(), obs.Events())
		}
	}
}

func TestFailOpen(t *testing.T) {
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.FailOpen, compose.WithName("api"), compose.WithObserver(obs))
	d := allow(t, g, "k", 3)
	want := admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: math.MaxInt64, Rule: "api/fail-open"}
	if d != want {
		t.Errorf("decision %+v, want %+v", d, want)
	}
	if s := g.Stats(); s.Failures != 1 || s.Decided != 1 || s.Active || s.Switches != 0 {
		t.Errorf("stats %+v", s)
	}
	if obs.decided.Load() != 1 {
		t.Errorf("%d decisions observed, want 1", obs.decided.Load())
	}
	// A negative cost is an error under every policy.
	if _, err := g.Allow(ctx, "k", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
}

func TestFailClosed(t *testing.T) {
	g := mustGuard(t, newPrimary(down), compose.FailClosed)
	d := allow(t, g, "k", 1)
	want := admit.Decision{RetryAfter: compose.DefaultRetryAfter, ResetAfter: compose.DefaultRetryAfter, Rule: "fail-closed"}
	if d != want {
		t.Errorf("decision %+v, want %+v", d, want)
	}
	g = mustGuard(t, newPrimary(down), compose.FailClosed, compose.WithRetryAfter(3*time.Second), compose.WithName("sms"))
	if d := allow(t, g, "k", 1); d.Allowed || d.RetryAfter != 3*time.Second || d.Rule != "sms/fail-closed" {
		t.Errorf("WithRetryAfter(3s): decision %+v", d)
	}
	// A peek (n = 0) is allowed, as always, and tells when to come back.
	if d := allow(t, g, "k", 0); !d.Allowed || d.Remaining != 0 || d.RetryAfter != 0 || d.ResetAfter != 3*time.Second {
		t.Errorf("n=0: decision %+v", d)
	}
	if _, err := g.Allow(ctx, "k", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
}

func TestFallback(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	local, err := keyed.New(admit.AlgGCRA, admit.PerSecond(2), keyed.WithClock(clk), keyed.WithName("local"))
	if err != nil {
		t.Fatal(err)
	}
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.Fallback(local), compose.WithName("api"), compose.WithObserver(obs))
	var got []string
	for range 3 {
		d := allow(t, g, "k", 1)
		got = append(got, fmt.Sprintf("%v/%d/%v/%s", d.Allowed, d.Remaining, d.RetryAfter, d.Rule))
	}
	want := []string{"true/1/0s/api/fallback", "true/0/0s/api/fallback", "false/0/500ms/api/fallback"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	// The local limiter's own errors are returned.
	if _, err := g.Allow(ctx, strings.Repeat("x", keyed.DefaultMaxKeyLength+1), 1); !errors.Is(err, keyed.ErrKeyTooLong) {
		t.Errorf("long key: error %v, want ErrKeyTooLong", err)
	}
	if s := g.Stats(); s.Failures != 4 || s.Decided != 3 {
		t.Errorf("stats %+v, want 4 failures, 3 decided", s)
	}
	if obs.decided.Load() != 3 {
		t.Errorf("%d decisions observed, want the local limiter's 3", obs.decided.Load())
	}
}

func TestRequestErrorsAreReturned(t *testing.T) {
	// A key too long, a negative cost: the primary is fine, the request is
	// not, and failing open on it would let it past the limit.
	prim, err := keyed.New(admit.AlgGCRA, admit.PerSecond(1), keyed.WithMaxKeyLength(8))
	if err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	g := mustGuard(t, prim, compose.FailOpen, compose.WithThreshold(1), compose.WithObserver(obs))
	if _, err := g.Allow(ctx, "a-key-that-is-too-long", 1); !errors.Is(err, keyed.ErrKeyTooLong) {
		t.Errorf("long key: error %v, want ErrKeyTooLong", err)
	}
	if _, err := g.Allow(ctx, "k", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
	if s := g.Stats(); s != (compose.Stats{}) || len(obs.Events()) != 0 {
		t.Errorf("stats %+v, events %v: request errors must count neither way", s, obs.Events())
	}

	// WithIsFailure decides which errors are the store's.
	errBad := errors.New("bad request")
	fp := newPrimary(func(context.Context, string, int64) (admit.Decision, error) { return admit.Decision{}, errBad })
	g = mustGuard(t, fp, compose.FailOpen, compose.WithIsFailure(func(err error) bool { return !errors.Is(err, errBad) }))
	if _, err := g.Allow(ctx, "k", 1); err != errBad {
		t.Errorf("error %v, want errBad", err)
	}
	fp.set(down)
	if d := allow(t, g, "k", 1); d.Rule != "fail-open" {
		t.Errorf("store error: decision %+v, want fail-open", d)
	}
}

func TestIsFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errDown, true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("x: %w", admit.ErrInvalidCost), false},
		{fmt.Errorf("x: %w", admit.ErrInvalidLimit), false},
		{fmt.Errorf("x: %w", admit.ErrUnknownAlgorithm), false},
		{fmt.Errorf("x: %w", keyed.ErrKeyTooLong), false},
		{fmt.Errorf("x: %w", keyed.ErrStoreFull), true},
	} {
		if got := compose.IsFailure(tc.err); got != tc.want {
			t.Errorf("IsFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// In the timeout tests, time is synctest's fake clock: the timeout fires
// as soon as every goroutine of the bubble is blocked, and the fake time
// elapsed is exactly the timeout.
func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prim := newPrimary(hang(nil))
		obs := &recorder{}
		g := mustGuard(t, prim, compose.FailClosed, compose.WithThreshold(1), compose.WithObserver(obs))
		start := time.Now()
		d := allow(t, g, "k", 1)
		if waited := time.Since(start); waited != compose.DefaultTimeout {
			t.Errorf("waited %v, want the timeout, %v", waited, compose.DefaultTimeout)
		}
		if d.Allowed || d.Rule != "fail-closed" {
			t.Errorf("decision %+v, want fail-closed's", d)
		}
		if s := g.Stats(); s.Failures != 1 || s.Timeouts != 1 || !s.Active {
			t.Errorf("stats %+v", s)
		}
		ev := obs.Events()
		if len(ev) != 1 || !errors.Is(ev[0].Reason, compose.ErrTimeout) || !errors.Is(ev[0].Reason, context.DeadlineExceeded) {
			t.Errorf("events %v, want one whose Reason is ErrTimeout", ev)
		}
		g = mustGuard(t, prim, compose.FailOpen, compose.WithTimeout(7*time.Millisecond))
		start = time.Now()
		allow(t, g, "k", 1)
		if waited := time.Since(start); waited != 7*time.Millisecond {
			t.Errorf("WithTimeout(7ms): waited %v", waited)
		}
	})
}

// TestTimeoutNoLeak runs many calls that time out at once, on the real
// clock, and checks that no goroutine outlives them.
func TestTimeoutNoLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	prim := newPrimary(hang(nil))
	g := mustGuard(t, prim, compose.FailOpen, compose.WithTimeout(2*time.Millisecond))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 4 {
				if d, err := g.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Errorf("Allow: %+v, %v", d, err)
				}
			}
		})
	}
	wg.Wait()
	if s := g.Stats(); s.Timeouts != 200 || s.Failures != 200 {
		t.Errorf("stats %+v, want 200 timeouts", s)
	}
	// The timers' goroutines end right after the calls do.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after the calls, %d before", n, base)
	}
}

func TestCallerCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prim := newPrimary(healthy)
		g := mustGuard(t, prim, compose.FailOpen, compose.WithThreshold(1))

		// Done before the call: the primary is not called.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := g.Allow(cctx, "k", 1); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled before: error %v, want context.Canceled", err)
		}
		if prim.calls.Load() != 0 {
			t.Errorf("the primary was called with a context already done")
		}

		// Done during the call.
		entered := make(chan struct{})
		prim.set(hang(entered))
		cctx, cancel = context.WithCancel(ctx)
		go func() { <-entered; cancel() }()
		if _, err := g.Allow(cctx, "k", 1); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled during: error %v, want context.Canceled", err)
		}

		// The caller's deadline, shorter than the Guard's timeout.
		prim.set(hang(nil))
		dctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		if _, err := g.Allow(dctx, "k", 1); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, compose.ErrTimeout) {
			t.Errorf("caller's deadline: error %v, want the caller's context.DeadlineExceeded", err)
		}

		if s := g.Stats(); s.Canceled != 3 || s.Failures != 0 || s.Timeouts != 0 || s.Decided != 0 || s.Active {
			t.Errorf("stats %+v: cancellations must not count as failures", s)
		}
	})
}

// TestTimeoutBound checks the deadline the primary sees: the Guard's
// timeout, or the caller's own deadline when that comes first (no context
// of the Guard's then).
func TestTimeoutBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen time.Time
		var bounded bool
		record := func(ctx context.Context, _ string, _ int64) (admit.Decision, error) {
			seen, bounded = ctx.Deadline()
			return admit.Decision{Allowed: true}, nil
		}
		prim := newPrimary(record)
		g := mustGuard(t, prim, compose.FailOpen, compose.WithTimeout(50*time.Millisecond))
		start := time.Now()
		cases := []struct {
			name   string
			caller time.Duration // 0: no deadline
			want   time.Duration
		}{
			{"no caller deadline", 0, 50 * time.Millisecond},
			{"caller's deadline later", time.Second, 50 * time.Millisecond},
			{"caller's deadline sooner", 20 * time.Millisecond, 20 * time.Millisecond},
			{"caller's deadline equal", 50 * time.Millisecond, 50 * time.Millisecond},
		}
		for _, c := range cases {
			cctx := ctx
			if c.caller > 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, c.caller)
				defer cancel()
			}
			if _, err := g.Allow(cctx, "k", 1); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !bounded || !seen.Equal(start.Add(c.want)) {
				t.Errorf("%s: the primary's deadline is %v (set: %v), want %v from now", c.name, seen.Sub(start), bounded, c.want)
			}
		}
		// A caller deadline that passes during the call: the caller gave
		// up, the primary did not fail.
		prim.set(hang(nil))
		dctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		if _, err := g.Allow(dctx, "k", 1); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, compose.ErrTimeout) {
			t.Errorf("caller's deadline: error %v, want the caller's context.DeadlineExceeded", err)
		}
		// The Guard's own timeout is a failure of the primary.
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if d, err := g.Allow(lctx, "k", 1); err != nil || !d.Allowed {
			t.Errorf("the Guard's timeout under FailOpen: %+v, %v, want admitted", d, err)
		}
		if s := g.Stats(); s.Timeouts != 1 || s.Canceled != 1 {
			t.Errorf("stats %+v, want 1 timeout and 1 cancellation", s)
		}
	})
}

func TestThresholdWithoutBreaker(t *testing.T) {
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.FailOpen, compose.WithThreshold(3), compose.WithObserver(obs))
	for i := 1; i <= 5; i++ {
		allow(t, g, "k", 1)
		if active, want := g.Stats().Active, i >= 3; active != want {
			t.Errorf("after %d failures: active %v, want %v", i, active, want)
		}
	}
	if prim.calls.Load() != 5 {
		t.Errorf("%d calls: without a breaker every request calls the primary", prim.calls.Load())
	}
	// A success below the threshold resets the count.
	prim.set(healthy)
	allow(t, g, "k", 1)
	prim.set(down)
	allow(t, g, "k", 1)
	allow(t, g, "k", 1)
	prim.set(healthy)
	allow(t, g, "k", 1)
	ev := obs.Events()
	if len(ev) != 2 || !ev[0].Active || ev[0].Reason != errDown || ev[1].Active || ev[1].Reason != nil {
		t.Errorf("events %v, want on (errDown) then off", ev)
	}
	if s := g.Stats(); s.Switches != 2 || s.Active || s.Failures != 7 {
		t.Errorf("stats %+v", s)
	}
}

func TestBreaker(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	prim := newPrimary(down)
	obs := &recorder{}
	var logs syncBuffer
	g := mustGuard(t, prim, compose.Breaker(compose.FailClosed),
		compose.WithName("api"), compose.WithClock(clk), compose.WithThreshold(3),
		compose.WithProbeInterval(time.Second), compose.WithObserver(obs),
		compose.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	calls := func(want int64) {
		t.Helper()
		if got := prim.calls.Load(); got != want {
			t.Fatalf("%d calls of the primary, want %d", got, want)
		}
	}
	// Below the threshold the primary is called, and the policy decides.
	for range 2 {
		if d := allow(t, g, "k", 1); d.Rule != "api/fail-closed" {
			t.Fatalf("decision %+v", d)
		}
	}
	calls(2)
	if len(obs.Events()) != 0 {
		t.Fatalf("events %v before the threshold", obs.Events())
	}
	// The third failure opens the breaker.
	allow(t, g, "k", 1)
	calls(3)
	if ev := obs.Events(); len(ev) != 1 || !ev[0].Active || ev[0].Limiter != "api" || ev[0].Reason != errDown {
		t.Fatalf("events %v, want one switch on", ev)
	}
	// Open: no call of the primary until the probe interval has passed.
	for range 10 {
		allow(t, g, "k", 1)
	}
	clk.Advance(999 * time.Millisecond)
	allow(t, g, "k", 1)
	calls(3)
	// One probe per interval; a failed probe keeps the breaker open.
	clk.Advance(time.Millisecond)
	for range 5 {
		if d := allow(t, g, "k", 1); d.Rule != "api/fail-closed" {
			t.Fatalf("decision %+v", d)
		}
	}
	calls(4)
	clk.Advance(1500 * time.Millisecond)
	allow(t, g, "k", 1)
	allow(t, g, "k", 1)
	calls(5)
	// The next probe is one interval after the last one, not after the
	// instant it was due.
	clk.Advance(999 * time.Millisecond)
	allow(t, g, "k", 1)
	calls(5)
	clk.Advance(time.Millisecond)
	prim.set(healthy)
	if d := allow(t, g, "k", 1); d != primaryDecision {
		t.Fatalf("the successful probe's decision %+v, want the primary's", d)
	}
	calls(6)
	// Closed again: every request calls the primary.
	for range 3 {
		allow(t, g, "k", 1)
	}
	calls(9)
	if ev := obs.Events(); len(ev) != 2 || ev[1].Active || ev[1].Reason != nil {
		t.Fatalf("events %v, want on then off", ev)
	}
	s := g.Stats()
	want := compose.Stats{Failures: 5, Decided: 22, Skipped: 17, Probes: 3, Switches: 2}
	if s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
	// And it opens again at the threshold.
	prim.set(down)
	for range 3 {
		allow(t, g, "k", 1)
	}
	allow(t, g, "k", 1)
	calls(12)
	if ev := obs.Events(); len(ev) != 3 || !ev[2].Active {
		t.Fatalf("events %v, want on, off, on", ev)
	}
	lines := logs.Lines()
	if len(lines) != 3 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "limiter=api") ||
		!strings.Contains(lines[0], "policy=breaker/fail-closed") || !strings.Contains(lines[0], `err="store down"`) ||
		!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "down=3.5s") {
		t.Errorf("logs:\n%s", strings.Join(lines, "\n"))
	}
}

// TestBreakerInconclusiveProbe: a probe ended by its caller, or refused as
// a bad request, tells nothing about the store: the next request probes.
func TestBreakerInconclusiveProbe(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	prim := newPrimary(down)
	g := mustGuard(t, prim, compose.Breaker(compose.FailOpen), compose.WithClock(clk), compose.WithThreshold(1))
	allow(t, g, "k", 1) // opens
	clk.Advance(time.Second)

	prim.set(func(context.Context, string, int64) (admit.Decision, error) {
		return admit.Decision{}, fmt.Errorf("%w: 9999 bytes", keyed.ErrKeyTooLong)
	})
	if _, err := g.Allow(ctx, "k", 1); !errors.Is(err, keyed.ErrKeyTooLong) {
		t.Fatalf("probe with a bad request: error %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		prim.set(hang(entered))
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-entered; cancel() }()
		if _, err := g.Allow(cctx, "k", 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled probe: error %v", err)
		}
	})
	prim.set(healthy)
	if d := allow(t, g, "k", 1); d != primaryDecision {
		t.Fatalf("third probe: decision %+v, want the primary's", d)
	}
	if s := g.Stats(); s.Probes != 3 || s.Active || s.Canceled != 1 || s.Failures != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestBreakerInFlightSuccess: a call that began before the breaker opened
// and succeeds after does not close it; only a probe does.
func TestBreakerInFlightSuccess(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	entered, gate := make(chan struct{}), make(chan struct{})
	prim := newPrimary(gated(entered, gate, healthy))
	g := mustGuard(t, prim, compose.Breaker(compose.FailOpen), compose.WithClock(clk), compose.WithThreshold(2))
	done := make(chan admit.Decision)
	go func() {
		d, _ := g.Allow(ctx, "slow", 1)
		done <- d
	}()
	<-entered
	prim.set(down)
	allow(t, g, "k", 1)
	allow(t, g, "k", 1) // opens
	close(gate)
	if d := <-done; d != primaryDecision {
		t.Errorf("the slow call's decision %+v, want the primary's", d)
	}
	if s := g.Stats(); !s.Active {
		t.Errorf("stats %+v: the breaker must stay open", s)
	}
	before := prim.calls.Load()
	allow(t, g, "k", 1)
	if prim.calls.Load() != before {
		t.Errorf("the primary was called while the breaker was open")
	}
}

// TestBreakerOneProbeUnderLoad: however many goroutines ask at once, one
// request per interval probes, and none waits for it.
func TestBreakerOneProbeUnderLoad(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.Breaker(compose.FailOpen), compose.WithClock(clk),
		compose.WithThreshold(1), compose.WithObserver(obs))
	allow(t, g, "k", 1)
	for round := 1; round <= 5; round++ {
		clk.Advance(time.Second)
		entered, gate := make(chan struct{}, 1), make(chan struct{})
		prim.set(gated(entered, gate, down))
		before := prim.calls.Load()
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for range 20 {
					if d, err := g.Allow(ctx, "k", 1); err != nil || !d.Allowed {
						t.Errorf("Allow: %+v, %v", d, err)
					}
				}
			})
		}
		<-entered // the probe is waiting on the primary...
		if got := prim.calls.Load() - before; got != 1 {
			t.Errorf("round %d: %d probes, want 1", round, got)
		}
		close(gate) // ...and the others did not wait for it
		wg.Wait()
		if got := prim.calls.Load() - before; got != 1 {
			t.Errorf("round %d: %d probes, want 1", round, got)
		}
	}
	if s := g.Stats(); s.Probes != 5 || s.Switches != 1 {
		t.Errorf("stats %+v", s)
	}
	if ev := obs.Events(); len(ev) != 1 {
		t.Errorf("events %v, want one", ev)
	}
}

// TestSwitchesReportedOnceUnderLoad: many goroutines fail at once, then
// succeed at once; each switch is reported once, to the observer and the
// logger, in order.
func TestSwitchesReportedOnceUnderLoad(t *testing.T) {
	for _, p := range []compose.Policy{compose.FailOpen, compose.Breaker(compose.FailOpen)} {
		t.Run(p.String(), func(t *testing.T) {
			clk := admittest.NewManualClock(admittest.Epoch)
			prim := newPrimary(down)
			obs := &recorder{}
			var logs syncBuffer
			g := mustGuard(t, prim, p, compose.WithClock(clk), compose.WithObserver(obs),
				compose.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			load := func() {
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() {
						for range 200 {
							if _, err := g.Allow(ctx, "k", 1); err != nil {
								t.Errorf("Allow: %v", err)
							}
						}
					})
				}
				wg.Wait()
			}
			load()
			s1 := g.Stats()
			if s1.Failures+s1.Skipped != 6400 || s1.Decided != 6400 || !s1.Active {
				t.Errorf("stats %+v after the failing load", s1)
			}
			prim.set(healthy)
			clk.Advance(compose.DefaultProbeInterval)
			load()
			ev := obs.Events()
			if len(ev) != 2 || !ev[0].Active || ev[1].Active {
				t.Errorf("events %v, want one on, one off", ev)
			}
			if lines := logs.Lines(); len(lines) != 2 {
				t.Errorf("%d log lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			// (Under the breaker, the requests that find it open while the
			// probe succeeds are decided by the policy.)
			if s := g.Stats(); s.Switches != 2 || s.Active || s.Failures != s1.Failures {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestBreakerFallback(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	local, err := compose.LocalShare(admit.AlgGCRA, admit.PerSecond(10), 2, keyed.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	prim := newPrimary(down)
	g := mustGuard(t, prim, compose.Breaker(compose.Fallback(local)), compose.WithClock(clk), compose.WithThreshold(1))
	admitted := 0
	for range 20 {
		if allow(t, g, "k", 1).Allowed {
			admitted++
		}
	}
	if admitted != 5 || prim.calls.Load() != 1 {
		t.Errorf("%d admitted with %d calls of the primary, want the local share, 5, and 1 call", admitted, prim.calls.Load())
	}
}

func TestBadArguments(t *testing.T) {
	prim := newPrimary(healthy)
	var nilKeyed *keyed.Limiter
	for _, tc := range []struct {
		name    string
		primary compose.Limiter
		policy  compose.Policy
		opts    []compose.Option
		want    error
		text    string
	}{
		{"nil primary", nil, compose.FailOpen, nil, compose.ErrNilLimiter, "primary"},
		{"typed nil primary", nilKeyed, compose.FailOpen, nil, compose.ErrNilLimiter, "primary"},
		{"nil fallback", prim, compose.Fallback(nil), nil, compose.ErrNilLimiter, "Fallback(nil)"},
		{"typed nil fallback", prim, compose.Breaker(compose.Fallback(nilKeyed)), nil, compose.ErrNilLimiter, "Fallback(nil)"},
		{"zero policy", prim, compose.Policy{}, nil, compose.ErrInvalidPolicy, "zero Policy"},
		{"breaker of nothing", prim, compose.Breaker(compose.Policy{}), nil, compose.ErrInvalidPolicy, "zero Policy"},
		{"negative timeout", prim, compose.FailOpen, []compose.Option{compose.WithTimeout(-time.Millisecond)}, compose.ErrInvalidOption, "WithTimeout(-1ms)"},
		{"threshold 0", prim, compose.FailOpen, []compose.Option{compose.WithThreshold(0)}, compose.ErrInvalidOption, "WithThreshold(0)"},
		{"negative threshold", prim, compose.FailOpen, []compose.Option{compose.WithThreshold(-2)}, compose.ErrInvalidOption, "WithThreshold(-2)"},
		{"zero probe interval", prim, compose.FailOpen, []compose.Option{compose.WithProbeInterval(0)}, compose.ErrInvalidOption, "WithProbeInterval(0s)"},
		{"negative probe interval", prim, compose.FailOpen, []compose.Option{compose.WithProbeInterval(-time.Second)}, compose.ErrInvalidOption, "WithProbeInterval(-1s)"},
		{"zero retry", prim, compose.FailClosed, []compose.Option{compose.WithRetryAfter(0)}, compose.ErrInvalidOption, "WithRetryAfter(0s)"},
		{"first bad option wins", prim, compose.FailClosed, []compose.Option{compose.WithThreshold(0), compose.WithTimeout(-1)}, compose.ErrInvalidOption, "WithThreshold(0)"},
	} {
		g, err := compose.NewGuard(tc.primary, tc.policy, tc.opts...)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || g != nil {
			t.Errorf("%s: %v, %v; want an error wrapping %v and saying %q", tc.name, g, err, tc.want, tc.text)
		}
	}
	// Nil options, a nil clock and a nil failure test leave the defaults.
	g := mustGuard(t, prim, compose.FailOpen, nil, compose.WithClock(nil), compose.WithIsFailure(nil), compose.WithTimeout(0))
	if d := allow(t, g, "k", 1); d != primaryDecision {
		t.Errorf("decision %+v", d)
	}
}

func TestPolicyString(t *testing.T) {
	for p, want := range map[*compose.Policy]string{
		&compose.FailOpen:   "fail-open",
		&compose.FailClosed: "fail-closed",
		new(compose.Policy): "none",
	} {
		if got := p.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if got := compose.Breaker(compose.Breaker(compose.Fallback(newPrimary(healthy)))).String(); got != "breaker/fallback" {
		t.Errorf("String() = %q", got)
	}
	g := mustGuard(t, newPrimary(healthy), compose.Breaker(compose.FailClosed))
	if got := g.Policy().String(); got != "breaker/fail-closed" {
		t.Errorf("Policy() = %q", got)
	}
}

// TestBreakerTimeouts: a store that does not answer costs each request the
// timeout until the breaker opens, and nothing after, but the probe's.
func TestBreakerTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := admittest.NewManualClock(admittest.Epoch)
		prim := newPrimary(hang(nil))
		obs := &recorder{}
		g := mustGuard(t, prim, compose.Breaker(compose.FailOpen), compose.WithClock(clk), compose.WithObserver(obs))
		elapsed := func(calls int) time.Duration {
			start := time.Now()
			for range calls {
				if d := allow(t, g, "k", 1); d.Rule != "fail-open" {
					t.Fatalf("decision %+v", d)
				}
			}
			return time.Since(start)
		}
		if got, want := elapsed(compose.DefaultThreshold), compose.DefaultThreshold*compose.DefaultTimeout; got != want {
			t.Errorf("the first %d requests took %v, want %v", compose.DefaultThreshold, got, want)
		}
		if got := elapsed(1000); got != 0 {
			t.Errorf("1000 requests under the open breaker took %v, want 0", got)
		}
		clk.Advance(compose.DefaultProbeInterval)
		if got := elapsed(1000); got != compose.DefaultTimeout {
			t.Errorf("1000 requests with one probe took %v, want %v", got, compose.DefaultTimeout)
		}
		s := g.Stats()
		if want := (compose.Stats{Failures: 6, Timeouts: 6, Decided: 2005, Skipped: 1999, Probes: 1, Switches: 1, Active: true}); s != want {
			t.Errorf("stats %+v, want %+v", s, want)
		}
		if ev := obs.Events(); len(ev) != 1 || !errors.Is(ev[0].Reason, compose.ErrTimeout) {
			t.Errorf("events %v", ev)
		}
		if obs.decided.Load() != 2005 {
			t.Errorf("%d decisions observed, want 2005", obs.decided.Load())
		}
	})
}

// healthPrimary is a fakePrimary with a Healthy method, as a store with a
// local cache has: it may succeed without its store answering.
type healthPrimary struct {
	*fakePrimary
	up atomic.Bool
}

func (p *healthPrimary) Healthy() bool { return p.up.Load() }

// TestSuccessWithoutTheStore: successes the primary makes while it says
// its store is not answering (a cached denial) switch nothing back, with
// or without a breaker; once it is healthy, they do.
func TestSuccessWithoutTheStore(t *testing.T) {
	for _, breaker := range []bool{false, true} {
		clk := admittest.NewManualClock(admittest.Epoch)
		prim := &healthPrimary{fakePrimary: newPrimary(down)}
		policy := compose.FailOpen
		if breaker {
			policy = compose.Breaker(policy)
		}
		rec := &recorder{}
		g := mustGuard(t, prim, policy, compose.WithClock(clk), compose.WithThreshold(1), compose.WithObserver(rec))
		allow(t, g, "k", 1) // switches to the policy
		prim.set(healthy)   // answers, from its cache only
		for range 5 {
			clk.Advance(time.Second) // a probe each time, under the breaker
			allow(t, g, "k", 1)
		}
		if s := g.Stats(); !s.Active || s.Switches != 1 {
			t.Errorf("breaker %v, successes without the store: stats %+v", breaker, s)
		}
		prim.up.Store(true)
		clk.Advance(time.Second)
		if d := allow(t, g, "k", 1); d != primaryDecision {
			t.Errorf("breaker %v: decision %+v once healthy", breaker, d)
		}
		if s := g.Stats(); s.Active || s.Switches != 2 {
			t.Errorf("breaker %v, once healthy: stats %+v", breaker, s)
		}
	}
}

// cachePrimary is a fakePrimary that knows some answers without its store.
type cachePrimary struct {
	*fakePrimary
	known map[string]admit.Decision
}

func (p *cachePrimary) Cached(key string, n int64) (admit.Decision, bool) {
	d, ok := p.known[key]
	return d, ok
}

// TestOpenBreakerAsksCached: while the breaker is open, the requests the
// primary can answer without its store get its answer, the others the
// policy's.
func TestOpenBreakerAsksCached(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	denied := admit.Decision{Limit: admit.PerHour(1), RetryAfter: time.Minute, Rule: "primary"}
	prim := &cachePrimary{fakePrimary: newPrimary(down), known: map[string]admit.Decision{"hot": denied}}
	g := mustGuard(t, prim, compose.Breaker(compose.FailOpen), compose.WithClock(clk), compose.WithThreshold(1))
	allow(t, g, "cold", 1) // opens the breaker
	calls := prim.calls.Load()
	if d := allow(t, g, "hot", 1); d != denied {
		t.Errorf("a known key under the open breaker: %+v, want the primary's cached denial", d)
	}
	if d := allow(t, g, "cold", 1); !d.Allowed || d.Rule != "fail-open" {
		t.Errorf("another key under the open breaker: %+v, want the policy's", d)
	}
	if prim.calls.Load() != calls {
		t.Error("the open breaker called the primary's Allow")
	}
}
