package promlimit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/prefetch"
	"github.com/admit-go/admit/promlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// t0 is the start of the manual clocks of these tests.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// watch watches v under name, failing t on an error.
func watch(t *testing.T, obs *promlimit.Observer, name string, v any) {
	t.Helper()
	if err := obs.Watch(name, v); err != nil {
		t.Fatal(err)
	}
}

// until waits, yielding, for cond to hold: for a goroutine to join a
// queue (not for time to pass, which a ManualClock makes).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// want checks the values of the named series of limiter (the metric's
// name after "admit_limiter_").
func want(t *testing.T, reg prometheus.Gatherer, limiter string, values map[string]float64) {
	t.Helper()
	for name, w := range values {
		labels := []string{"limiter", limiter}
		if stat, ok := strings.CutPrefix(name, "adaptive_limit/"); ok {
			name, labels = "adaptive_limit", append(labels, "stat", stat)
		}
		if got := value(t, reg, "admit_limiter_"+name, labels...); got != w {
			t.Errorf("admit_limiter_%s%q = %v, want %v", name, labels, got, w)
		}
	}
}

// waiter is a caller of a limiter that must wait, for checkWait.
type waiter struct {
	name    string
	waiting func() int   // the callers waiting now
	wait    func() error // waits, and gives back what it took
	free    func()       // makes room for the waiter
}

// checkWait runs w.wait on a goroutine once the watched limiter has no
// room, checks the series of w.name (before) once it waits, advances the
// clock 3s, makes room, and checks the series (after) once it was served:
// it waited 3s by the limiter's clock.
func checkWait(t *testing.T, reg prometheus.Gatherer, clock *admittest.ManualClock, w waiter, before, after map[string]float64) {
	t.Helper()
	want(t, reg, w.name, map[string]float64{"waiting": 0, "waits_total": 0, "wait_seconds_total": 0})
	done := make(chan error)
	go func() { done <- w.wait() }()
	until(t, "the waiter", func() bool { return w.waiting() == 1 })
	before["waiting"], before["waits_total"] = 1, 0
	want(t, reg, w.name, before)
	clock.Advance(3 * time.Second)
	w.free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after["waiting"], after["waits_total"], after["wait_seconds_total"] = 0, 1, 3
	want(t, reg, w.name, after)
}

func TestWatchPacer(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	clock := admittest.NewManualClock(t0)
	p, err := admit.NewPacer(admit.Every(3*time.Second), admit.PacerConfig{Options: admit.Options{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "pacer", p)
	ctx := context.Background()
	if err := p.Wait(ctx); err != nil { // released at once: no wait
		t.Fatal(err)
	}
	// The next slot is 3s away: the time is what makes room.
	checkWait(t, reg, clock, waiter{"pacer", p.Len, func() error { return p.Wait(ctx) }, func() {}}, map[string]float64{}, map[string]float64{})
	if n := testutil.CollectAndCount(obs, "admit_limiter_in_flight", "admit_limiter_adaptive_limit"); n != 0 {
		t.Errorf("%d in_flight or adaptive_limit series of a Pacer, want none", n)
	}
}

// TestWatchQueues: a concurrency.Limiter and a fair.Queue, full, each
// with a caller that waits 3s.
func TestWatchQueues(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	clock := admittest.NewManualClock(t0)
	ctx := context.Background()
	l, err := concurrency.New(concurrency.Config{Options: admit.Options{Clock: clock}, Max: 2})
	q, err2 := fair.NewQueue(fair.QueueConfig{Options: admit.Options{Clock: clock}, Max: 1})
	if err := errors.Join(err, err2); err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "uploads", l)
	watch(t, obs, "queue", q)
	lheld, _, err := l.Acquire(ctx, admit.Request{N: 2})
	qheld, _, err2 := q.Acquire(ctx, "a", 1)
	if err := errors.Join(err, err2); err != nil {
		t.Fatal(err)
	}
	acquireL := func() error {
		p, _, err := l.Acquire(ctx, admit.Request{N: 1})
		p.Release()
		return err
	}
	checkWait(t, reg, clock, waiter{"uploads", func() int { return l.Waiting("") }, acquireL, func() { lheld.Release() }},
		map[string]float64{"in_flight": 2}, map[string]float64{"in_flight": 0})
	acquireQ := func() error {
		p, _, err := q.Acquire(ctx, "b", 1)
		p.Release()
		return err
	}
	checkWait(t, reg, clock, waiter{"queue", func() int { return q.Stats().Waiting }, acquireQ, func() { qheld.Release() }},
		map[string]float64{"in_flight": 1}, map[string]float64{"in_flight": 0})
}

func TestWatchSlotLanes(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	s, err := fair.NewSlotLanes(fair.SlotLanesConfig{Max: 10, Lanes: []fair.Lane{{Name: "high", Share: 1}, {Name: "low", Share: 1}}, Borrowing: fair.BorrowAny})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "lanes", s)
	ctx := context.Background()
	for _, r := range []struct {
		lane string
		n    int64
	}{{"high", 1}, {"low", 5}, {"low", 1}} { // the last one borrowed from high
		if _, d, err := s.TryAcquire(ctx, r.lane, r.n); err != nil || !d.Allowed {
			t.Fatalf("%s %d: %+v, %v", r.lane, r.n, d, err)
		}
	}
	want(t, reg, "lanes", map[string]float64{"in_flight": 7})
	if n := testutil.CollectAndCount(obs, "admit_limiter_waiting", "admit_limiter_waits_total"); n != 0 {
		t.Errorf("%d waiting or waits series of SlotLanes, which never wait; want none", n)
	}
}

func TestWatchGradient(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	clock := admittest.NewManualClock(t0)
	g, err := adaptive.NewGradient(adaptive.GradientConfig{Options: admit.Options{Clock: clock}, Min: 2, Max: 50, Initial: 4})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "db", g)
	ctx := context.Background()
	var toks []adaptive.Token
	for range 4 {
		tok, err := g.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	acquire := func() error {
		tok, err := g.Acquire(ctx)
		tok.Release()
		return err
	}
	checkWait(t, reg, clock, waiter{"db", func() int { return g.Stats().Waiting }, acquire, func() { toks[0].Release() }},
		map[string]float64{"in_flight": 4, "adaptive_limit/current": 4, "adaptive_limit/floor": 2, "adaptive_limit/ceiling": 50},
		map[string]float64{"in_flight": 3, "adaptive_limit/current": float64(g.Limit())})
}

func TestWatchAIMD(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	clock := admittest.NewManualClock(t0)
	// Rates per 2s: 4 is 2 per second, the bounds 1 and 5 per second.
	a, err := adaptive.NewAIMD(adaptive.AIMDConfig{Options: admit.Options{Clock: clock}, Min: 2, Max: 10, Initial: 4, Period: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "api", a)
	want(t, reg, "api", map[string]float64{"adaptive_limit/current": 2, "adaptive_limit/floor": 1, "adaptive_limit/ceiling": 5})
	a.Feedback(adaptive.Dropped) // halved: 2 per 2s
	want(t, reg, "api", map[string]float64{"adaptive_limit/current": 1})
	if n := testutil.CollectAndCount(obs, "admit_limiter_adaptive_limit"); n != 3 {
		t.Errorf("%d adaptive_limit series, want 3 (current, floor, ceiling)", n)
	}
}

func TestWatchGuard(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	primary := &flaky{}
	g, err := compose.NewGuard(primary, compose.GuardConfig{Policy: compose.FailOpen, Threshold: 2, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "shared", g)
	ctx := context.Background()
	want(t, reg, "shared", map[string]float64{"guard_active": 0, "guard_failures_total": 0})
	primary.down.Store(true)
	for range 3 {
		if _, err := g.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s := g.Stats()
	want(t, reg, "shared", map[string]float64{
		"guard_active":                 1,
		"guard_failures_total":         float64(s.Failures),
		"guard_timeouts_total":         0,
		"guard_policy_decisions_total": 3,
		"guard_probes_total":           float64(s.Probes),
	})
	if s.Failures == 0 {
		t.Error("no failures counted")
	}
}

func TestWatchPrefetch(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	store, err := keyed.New(keyed.Config{Limit: admit.Limit{Rate: 20, Period: time.Second, Burst: 10}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := prefetch.New(prefetch.Config{Store: store, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(ctx) })
	watch(t, obs, "hot", l)
	for i := range 40 {
		if _, err := l.Allow(ctx, admit.Request{Key: "tenant", N: 1, At: admittest.At(time.Duration(i) * 25 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	s := l.Stats()
	if s.Blocks == 0 || s.Local == 0 {
		t.Fatalf("no blocks or nothing admitted from them: %+v", s)
	}
	values := map[string]float64{}
	for _, m := range enginehook.PrefetchMetrics {
		values["prefetch_"+m.Name] = m.Value(&s)
	}
	want(t, reg, "hot", values)
}

// TestWatchBadInput: each bad call is an error wrapping
// admit.ErrInvalidConfig that says what is wrong, and changes nothing.
func TestWatchBadInput(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	l, err := concurrency.New(concurrency.Config{Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "taken", l)
	watch(t, obs, "a\xff", l) // the same limiter under two names is fine
	store, err := keyed.New(keyed.Config{Limit: admit.PerSecond(1)})
	if err != nil {
		t.Fatal(err)
	}
	var nilLimiter *concurrency.Limiter
	var nilPacer *admit.Pacer
	for _, tc := range []struct {
		name string
		v    any
		msg  string
	}{
		{"", l, "empty name"},
		{"x", nilLimiter, "a nil *concurrency.Limiter"},
		{"x", nilPacer, "a nil *admit.Pacer"},
		{"x", store, "cannot watch a *keyed.Limiter: want a *admit.Pacer, *concurrency.Limiter"},
		{"x", "db", "cannot watch a string"},
		{"x", concurrency.Permit{}, "cannot watch a concurrency.Permit"},
		{"taken", l, "watched under this name already"},
		{"a\xfe", l, "its label \"a\uFFFD\", once made valid UTF-8, is that of a name watched already"},
		{"untaken", nil, "no limiter is watched under this name"},
		{strings.Repeat("n", 1000), 42, `"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"...`},
	} {
		err := obs.Watch(tc.name, tc.v)
		if !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Watch(%.20q, %T) = %v, want an error wrapping admit.ErrInvalidConfig saying %q", tc.name, tc.v, err, tc.msg)
		}
	}
	if n := testutil.CollectAndCount(obs, "admit_limiter_in_flight"); n != 2 {
		t.Errorf("%d in_flight series, want 2 (taken, a\\ufffd)", n)
	}
	want(t, reg, "a\uFFFD", map[string]float64{"in_flight": 0})

	// A nil or zero Observer checks its arguments, and records nothing.
	for i, o := range []*promlimit.Observer{nil, {}} {
		if err := o.Watch("x", l); err != nil {
			t.Errorf("Watch on Observer %d (nil, zero): %v", i, err)
		}
		if err := o.Watch("x", nil); err != nil {
			t.Errorf("Watch(x, nil) on Observer %d (nil, zero): %v", i, err)
		}
		if err := o.Watch("x", store); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("Watch(x, keyed) on Observer %d (nil, zero): %v, want an error", i, err)
		}
	}
}

// TestWatchStop: Watch(name, nil) stops watching name, whose series go,
// and the name can be watched again.
func TestWatchStop(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	a, _ := concurrency.New(concurrency.Config{Max: 1})
	b, _ := concurrency.New(concurrency.Config{Max: 5})
	watch(t, obs, "x", a)
	watch(t, obs, "y", a)
	if err := obs.Watch("x", nil); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(obs, "admit_limiter_in_flight"); n != 1 {
		t.Errorf("%d in_flight series after stopping x, want 1", n)
	}
	if _, _, err := b.TryAcquire(context.Background(), admit.Request{N: 4}); err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "x", b)
	want(t, reg, "x", map[string]float64{"in_flight": 4})
}

// TestWatchMaxSeries: watched names beyond Config.MaxSeries, too long, or
// "other", are added up under limiter="other" (but their adaptive
// limits); a name no longer watched makes room.
func TestWatchMaxSeries(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{MaxSeries: 2})
	ctx := context.Background()
	slots := func(n int64) *concurrency.Limiter {
		t.Helper()
		l, err := concurrency.New(concurrency.Config{Max: 100})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.TryAcquire(ctx, admit.Request{N: n}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	watch(t, obs, "a", slots(1))
	watch(t, obs, "b", slots(2))
	watch(t, obs, "c", slots(4))                      // beyond the cap
	watch(t, obs, strings.Repeat("d", 257), slots(8)) // too long
	watch(t, obs, "other", slots(16))
	g, err := adaptive.NewGradient(adaptive.GradientConfig{Min: 1, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "e", g)
	want(t, reg, "a", map[string]float64{"in_flight": 1})
	want(t, reg, "b", map[string]float64{"in_flight": 2})
	want(t, reg, "other", map[string]float64{"in_flight": 4 + 8 + 16, "waiting": 0})
	if n := testutil.CollectAndCount(obs, "admit_limiter_in_flight"); n != 3 {
		t.Errorf("%d in_flight series, want 3 (a, b, other)", n)
	}
	if n := testutil.CollectAndCount(obs, "admit_limiter_adaptive_limit"); n != 0 {
		t.Errorf("%d adaptive_limit series, want none (e is under other)", n)
	}
	if err := obs.Watch("a", nil); err != nil {
		t.Fatal(err)
	}
	watch(t, obs, "f", slots(32))
	want(t, reg, "f", map[string]float64{"in_flight": 32})
}

// TestWatchLabels: the watched limiters' metrics have the Observer's
// namespace and const labels, and "stat" is a label of its own.
func TestWatchLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := promlimit.New(reg, promlimit.Config{Namespace: "shop", ConstLabels: prometheus.Labels{"component": "jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := concurrency.New(concurrency.Config{Max: 1})
	watch(t, obs, "db", l)
	if got := value(t, reg, "shop_limiter_in_flight", "limiter", "db", "component", "jobs"); got != 0 {
		t.Errorf("shop_limiter_in_flight = %v", got)
	}
	if _, err := promlimit.New(prometheus.NewRegistry(), promlimit.Config{ConstLabels: prometheus.Labels{"stat": "x"}}); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("a const label named stat: %v, want an error", err)
	}
}

// TestWatchConcurrent: Watch, stop and scrape at once (run with -race).
func TestWatchConcurrent(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{MaxSeries: 8})
	ctx := context.Background()
	l, _ := concurrency.New(concurrency.Config{Max: 1000})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				name := fmt.Sprintf("l%d-%d", w, i%20)
				if err := obs.Watch(name, l); err != nil {
					if err := obs.Watch(name, nil); err != nil {
						t.Error(err)
						return
					}
				}
				if p, _, err := l.TryAcquire(ctx, admit.Request{N: 1}); err == nil {
					p.Release()
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestWatchLint watches a limiter of each type and checks their metrics
// with promlint, the linter of `promtool check metrics`.
func TestWatchLint(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	ok := func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	store := ok(keyed.New(keyed.Config{Limit: admit.PerSecond(10)})).(*keyed.Limiter)
	pre := ok(prefetch.New(prefetch.Config{Store: store})).(*prefetch.Limiter)
	t.Cleanup(func() { _ = pre.Close(ctx) })
	for i, v := range []any{
		ok(admit.NewPacer(admit.PerSecond(1))),
		ok(concurrency.New(concurrency.Config{Max: 1})),
		ok(fair.NewQueue(fair.QueueConfig{Max: 1})),
		ok(fair.NewSlotLanes(fair.SlotLanesConfig{Max: 2, Lanes: []fair.Lane{{Name: "a", Share: 1}}})),
		ok(adaptive.NewGradient(adaptive.GradientConfig{Min: 1, Max: 2})),
		ok(adaptive.NewAIMD(adaptive.AIMDConfig{Min: 1, Max: 2})),
		ok(compose.NewGuard(&flaky{}, compose.GuardConfig{Policy: compose.FailOpen})),
		pre,
	} {
		watch(t, obs, fmt.Sprintf("l%d", i), v)
	}
	// Pacer 3, concurrency 4, queue 4, lanes 1, gradient 4+3, AIMD 3,
	// guard 5, prefetch 11.
	if n := testutil.CollectAndCount(obs); n != 3+4+4+1+7+3+5+len(enginehook.PrefetchMetrics) {
		t.Errorf("%d series", n)
	}
	lint(t, reg)
}
