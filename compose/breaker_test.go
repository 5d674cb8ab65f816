package compose_test

// The Guard's switching: the failure threshold and the circuit breaker's probes.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

func TestThresholdWithoutBreaker(t *testing.T) {
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Observer: obs}, Policy: compose.FailOpen, Threshold: 3})
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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Name: "api", Clock: clk, Observer: obs}, Policy: compose.Breaker(compose.FailClosed), Threshold: 3, ProbeInterval: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})

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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk}, Policy: compose.Breaker(compose.FailOpen), Threshold: 1})
	allow(t, g, "k", 1) // opens
	clk.Advance(time.Second)

	prim.set(func(context.Context, string, int64) (admit.Decision, error) {
		return admit.Decision{}, fmt.Errorf("%w: 9999 bytes", admit.ErrKeyTooLong)
	})
	if _, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Fatalf("probe with a bad request: error %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		prim.set(hang(entered))
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-entered; cancel() }()
		if _, err := g.Allow(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.Canceled) {
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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk}, Policy: compose.Breaker(compose.FailOpen), Threshold: 2})
	done := make(chan admit.Decision)
	go func() {
		d, _ := g.Allow(ctx, admit.Request{Key: "slow", N: 1})
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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk, Observer: obs}, Policy: compose.Breaker(compose.FailOpen), Threshold: 1})
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
					if d, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil || !d.Allowed {
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
			g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk, Observer: obs}, Policy: p, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			load := func() {
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() {
						for range 200 {
							if _, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil {
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
			clk.Advance(defaultProbeInterval)
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
	local, err := keyed.LocalShare(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(10)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	prim := newPrimary(down)
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk}, Policy: compose.Breaker(compose.Fallback(local)), Threshold: 1})
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

// TestBreakerTimeouts: a store that does not answer costs each request the
// timeout until the breaker opens, and nothing after, but the probe's.
func TestBreakerTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := admittest.NewManualClock(admittest.Epoch)
		prim := newPrimary(hang(nil))
		obs := &recorder{}
		g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk, Observer: obs}, Policy: compose.Breaker(compose.FailOpen)})
		elapsed := func(calls int) time.Duration {
			start := time.Now()
			for range calls {
				if d := allow(t, g, "k", 1); d.Rule != "fail-open" {
					t.Fatalf("decision %+v", d)
				}
			}
			return time.Since(start)
		}
		if got, want := elapsed(defaultThreshold), defaultThreshold*defaultTimeout; got != want {
			t.Errorf("the first %d requests took %v, want %v", defaultThreshold, got, want)
		}
		if got := elapsed(1000); got != 0 {
			t.Errorf("1000 requests under the open breaker took %v, want 0", got)
		}
		clk.Advance(defaultProbeInterval)
		if got := elapsed(1000); got != defaultTimeout {
			t.Errorf("1000 requests with one probe took %v, want %v", got, defaultTimeout)
		}
		s := g.Stats()
		if want := (compose.Stats{Failures: 6, Timeouts: 6, Decided: 2005, Skipped: 1999, Probes: 1, Switches: 1, Active: true}); s != want {
			t.Errorf("stats %+v, want %+v", s, want)
		}
		if ev := obs.Events(); len(ev) != 1 || !isTimeout(ev[0].Reason) {
			t.Errorf("events %v", ev)
		}
		if obs.decided.Load() != 2005 {
			t.Errorf("%d decisions observed, want 2005", obs.decided.Load())
		}
	})
}

// cachePrimary is a fakePrimary that knows some answers without its store.
type cachePrimary struct {
	*fakePrimary
	known map[string]admit.Decision
}

func (p *cachePrimary) Cached(req admit.Request) (admit.Decision, bool) {
	key := req.Key
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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk}, Policy: compose.Breaker(compose.FailOpen), Threshold: 1})
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

// TestTimeoutAsksCachedFirst: a Guard with a timeout asks a primary that
// can answer without its store first, so such answers cost no timer of
// the Guard's; the primary's Allow decides the rest, and every request
// when the caller's own deadline bounds the call anyway.
func TestTimeoutAsksCachedFirst(t *testing.T) {
	admitted := admit.Decision{Allowed: true, Limit: admit.PerSecond(10), Remaining: 3, Rule: "block"}
	prim := &cachePrimary{fakePrimary: newPrimary(healthy), known: map[string]admit.Decision{"hot": admitted}}
	g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: time.Second})
	if d := allow(t, g, "hot", 1); d != admitted || prim.calls.Load() != 0 {
		t.Errorf("a key the primary knows: %+v after %d calls of Allow; want its cached answer and no call", d, prim.calls.Load())
	}
	if d := allow(t, g, "cold", 1); d != primaryDecision || prim.calls.Load() != 1 {
		t.Errorf("another key: %+v after %d calls of Allow; want the primary's Allow", d, prim.calls.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second/2)
	defer cancel()
	if d, err := g.Allow(ctx, admit.Request{Key: "hot", N: 1}); err != nil || d != primaryDecision || prim.calls.Load() != 2 {
		t.Errorf("under a caller's deadline shorter than the timeout: %+v, %v after %d calls; want the primary's Allow", d, err, prim.calls.Load())
	}
	if s := g.Stats(); s.Failures != 0 || s.Decided != 0 {
		t.Errorf("stats %+v: a cached answer is neither a failure nor the policy's", s)
	}
}
