package compose_test

import (
	"context"
	"errors"
	"fmt"
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

func TestHealthyPrimaryDecides(t *testing.T) {
	for _, p := range []compose.Policy{compose.FailOpen, compose.FailClosed, compose.Breaker(compose.FailOpen)} {
		prim := newPrimary(healthy)
		obs := &recorder{}
		g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Observer: obs}, Policy: p})
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
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Name: "api", Observer: obs}, Policy: compose.FailOpen})
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
	if _, err := g.Allow(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
}

func TestFailClosed(t *testing.T) {
	g := mustGuard(t, newPrimary(down), compose.GuardConfig{Policy: compose.FailClosed})
	d := allow(t, g, "k", 1)
	want := admit.Decision{RetryAfter: defaultRetryAfter, ResetAfter: defaultRetryAfter, Rule: "fail-closed"}
	if d != want {
		t.Errorf("decision %+v, want %+v", d, want)
	}
	g = mustGuard(t, newPrimary(down), compose.GuardConfig{Options: admit.Options{Name: "sms"}, Policy: compose.FailClosed, RetryAfter: 3 * time.Second})
	if d := allow(t, g, "k", 1); d.Allowed || d.RetryAfter != 3*time.Second || d.Rule != "sms/fail-closed" {
		t.Errorf("WithRetryAfter(3s): decision %+v", d)
	}
	// A peek (n = 0) is allowed, as always, and tells when to come back.
	if d := allow(t, g, "k", 0); !d.Allowed || d.Remaining != 0 || d.RetryAfter != 0 || d.ResetAfter != 3*time.Second {
		t.Errorf("n=0: decision %+v", d)
	}
	if _, err := g.Allow(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
}

func TestFallback(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	local, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk, Name: "local"}, Limit: admit.PerSecond(2)})
	if err != nil {
		t.Fatal(err)
	}
	prim := newPrimary(down)
	obs := &recorder{}
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Name: "api", Observer: obs}, Policy: compose.Fallback(local)})
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
	if _, err := g.Allow(ctx, admit.Request{Key: strings.Repeat("x", 4096+1), N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
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
	prim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(1), MaxKeyLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Observer: obs}, Policy: compose.FailOpen, Threshold: 1})
	if _, err := g.Allow(ctx, admit.Request{Key: "a-key-that-is-too-long", N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("long key: error %v, want ErrKeyTooLong", err)
	}
	if _, err := g.Allow(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n=-1: error %v, want ErrInvalidCost", err)
	}
	if s := g.Stats(); s != (compose.Stats{}) || len(obs.Events()) != 0 {
		t.Errorf("stats %+v, events %v: request errors must count neither way", s, obs.Events())
	}

	// WithIsFailure decides which errors are the store's.
	errBad := errors.New("bad request")
	fp := newPrimary(func(context.Context, string, int64) (admit.Decision, error) { return admit.Decision{}, errBad })
	g = mustGuard(t, fp, compose.GuardConfig{Policy: compose.FailOpen, IsFailure: func(err error) bool { return !errors.Is(err, errBad) }})
	if _, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); err != errBad {
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
		{fmt.Errorf("x: %w", admit.ErrInvalidConfig), false},
		{fmt.Errorf("x: %w", admit.ErrKeyTooLong), false},
		{fmt.Errorf("x: %w", admit.ErrTooManyKeys), true}, // keyed's full store too
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
		g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Observer: obs}, Policy: compose.FailClosed, Threshold: 1})
		start := time.Now()
		d := allow(t, g, "k", 1)
		if waited := time.Since(start); waited != defaultTimeout {
			t.Errorf("waited %v, want the timeout, %v", waited, defaultTimeout)
		}
		if d.Allowed || d.Rule != "fail-closed" {
			t.Errorf("decision %+v, want fail-closed's", d)
		}
		if s := g.Stats(); s.Failures != 1 || s.Timeouts != 1 || !s.Active {
			t.Errorf("stats %+v", s)
		}
		ev := obs.Events()
		if len(ev) != 1 || !isTimeout(ev[0].Reason) {
			t.Errorf("events %v, want one whose Reason is the Guard's timeout", ev)
		}
		g = mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: 7 * time.Millisecond})
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
	g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: 2 * time.Millisecond})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 4 {
				if d, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil || !d.Allowed {
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
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Threshold: 1})

		// Done before the call: the primary is not called.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := g.Allow(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.Canceled) {
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
		if _, err := g.Allow(cctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled during: error %v, want context.Canceled", err)
		}

		// The caller's deadline, shorter than the Guard's timeout.
		prim.set(hang(nil))
		dctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		if _, err := g.Allow(dctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
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
		g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: 50 * time.Millisecond})
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
			if _, err := g.Allow(cctx, admit.Request{Key: "k", N: 1}); err != nil {
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
		if _, err := g.Allow(dctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			t.Errorf("caller's deadline: error %v, want the caller's context.DeadlineExceeded", err)
		}
		// The Guard's own timeout is a failure of the primary.
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if d, err := g.Allow(lctx, admit.Request{Key: "k", N: 1}); err != nil || !d.Allowed {
			t.Errorf("the Guard's timeout under FailOpen: %+v, %v, want admitted", d, err)
		}
		if s := g.Stats(); s.Timeouts != 1 || s.Canceled != 1 {
			t.Errorf("stats %+v, want 1 timeout and 1 cancellation", s)
		}
	})
}

func TestBadArguments(t *testing.T) {
	prim := newPrimary(healthy)
	var nilKeyed *keyed.Limiter
	for _, tc := range []struct {
		name    string
		primary admit.KeyedLimiter
		policy  compose.Policy
		cfg     compose.GuardConfig
		want    error
		text    string
	}{
		{"nil primary", nil, compose.FailOpen, compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: nil limiter: NewGuard needs a primary"},
		{"typed nil primary", nilKeyed, compose.FailOpen, compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: nil limiter: NewGuard needs a primary"},
		{"nil fallback", prim, compose.Fallback(nil), compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: nil limiter: Fallback(nil)"},
		{"typed nil fallback", prim, compose.Breaker(compose.Fallback(nilKeyed)), compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: nil limiter: Fallback(nil)"},
		{"zero policy", prim, compose.Policy{}, compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: invalid policy: the zero Policy"},
		{"breaker of nothing", prim, compose.Breaker(compose.Policy{}), compose.GuardConfig{}, admit.ErrInvalidConfig, "compose: invalid policy: the zero Policy"},
		{"negative threshold", prim, compose.FailOpen, compose.GuardConfig{Threshold: -2}, admit.ErrInvalidConfig, "Threshold -2"},
		{"negative probe interval", prim, compose.FailOpen, compose.GuardConfig{ProbeInterval: -time.Second}, admit.ErrInvalidConfig, "ProbeInterval -1s"},
		{"negative retry", prim, compose.FailClosed, compose.GuardConfig{RetryAfter: -time.Second}, admit.ErrInvalidConfig, "RetryAfter -1s"},
		{"first bad field wins", prim, compose.FailClosed, compose.GuardConfig{Threshold: -1, RetryAfter: -1}, admit.ErrInvalidConfig, "Threshold -1"},
	} {
		cfg := tc.cfg
		cfg.Policy = tc.policy
		g, err := compose.NewGuard(tc.primary, cfg)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || g != nil {
			t.Errorf("%s: %v, %v; want an error wrapping %v and saying %q", tc.name, g, err, tc.want, tc.text)
		}
	}
	// The zero fields (a nil clock and a nil failure test among them) are
	// the defaults; a negative Timeout is none.
	g := mustGuard(t, prim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: -1})
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
	// The Guard decides with the policy it was given (Guard.Policy was
	// removed): fail-closed, as a breaker that stops calling the primary
	// after GuardConfig.Threshold failures and probes it once a second.
	clk := admittest.NewManualClock(admittest.Epoch)
	prim := newPrimary(down)
	g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk}, Policy: compose.Breaker(compose.FailClosed), Threshold: 2})
	for i := range 5 {
		if d := allow(t, g, "k", 1); d.Allowed || d.Rule != "fail-closed" {
			t.Fatalf("request %d: %+v, want fail-closed's decision", i, d)
		}
	}
	if n := prim.calls.Load(); n != 2 {
		t.Errorf("the primary was called %d times, want 2 (the breaker opened at the threshold)", n)
	}
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
		g := mustGuard(t, prim, compose.GuardConfig{Options: admit.Options{Clock: clk, Observer: rec}, Policy: policy, Threshold: 1})
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
