package policy

// Engines prefetching from a shared store kept in memory (keyed.Limiter,
// shared by the engines of a test as Redis is by a fleet): the bound, the
// stores that cannot prefetch, the failure policy, Close and reloads,
// keys, Reset.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/prefetch"
)

var errDown = errors.New("test store down")

// sharedMemory is a shared store kept in memory: one keyed.Limiter per
// limiter name, the same for every engine given the store, which fails
// while down. Its limiters grant part of a request unless whole.
type sharedMemory struct {
	whole bool
	down  atomic.Bool
	mu    sync.Mutex
	lims  map[string]*sharedLimiter
}

func (m *sharedMemory) Rate(s Spec) (admit.KeyedLimiter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.lims[s.Name]; l != nil {
		return m.wrap(l), nil
	}
	s.Observer = nil
	lim, err := stores.Rate(stores.Spec(s))
	if err != nil {
		return nil, err
	}
	if m.lims == nil {
		m.lims = map[string]*sharedLimiter{}
	}
	l := &sharedLimiter{Store: lim.(prefetch.Store), m: m}
	m.lims[s.Name] = l
	return m.wrap(l), nil
}

func (m *sharedMemory) wrap(l *sharedLimiter) admit.KeyedLimiter {
	if m.whole {
		return struct{ admit.KeyedLimiter }{l}
	}
	return l
}

func (m *sharedMemory) Quota(s Spec) (admit.KeyedLimiter, error) { return stores.Quota(stores.Spec(s)) }
func (m *sharedMemory) Slots(s Spec) (admit.Slots, error)        { return stores.Slots(stores.Spec(s)) }
func (m *sharedMemory) Shared() bool                             { return true }

// sharedLimiter is a limiter of a sharedMemory.
type sharedLimiter struct {
	prefetch.Store
	m *sharedMemory
}

func (l *sharedLimiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if l.m.down.Load() {
		return admit.Decision{}, errDown
	}
	return l.Store.Allow(ctx, r)
}

func (l *sharedLimiter) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	if l.m.down.Load() {
		return 0, admit.Decision{}, errDown
	}
	return l.Store.AllowAtMost(ctx, r)
}

func (l *sharedLimiter) Refund(ctx context.Context, r admit.Request) error {
	return l.Store.(admit.Refunder).Refund(ctx, r)
}

func (l *sharedLimiter) Reset(ctx context.Context, key string) error {
	return l.Store.(admit.Resetter).Reset(ctx, key)
}

// fleetEngine is an engine of src on clock with m as store "fleet", its
// default store, closed by t.Cleanup.
func fleetEngine(t *testing.T, src string, m *sharedMemory, clock admit.Clock, prev *Engine) *Engine {
	t.Helper()
	p, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(p, Config{Options: admit.Options{Clock: clock}, Backends: map[string]Backend{"fleet": m}, DefaultStore: "fleet", Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// statsOf returns the counts of e's prefetching limiters, by label.
func statsOf(e *Engine) map[string]prefetch.Stats {
	m := map[string]prefetch.Stats{}
	enginehook.Prefetch(e, func(label string, s prefetch.Stats) { m[label] = s })
	return m
}

// TestEnginePrefetchFleet: two engines prefetching from one store, asked
// a hot key at ten times its limit, admit together no more than the
// algorithm's bound, mostly from blocks.
func TestEnginePrefetchFleet(t *testing.T) {
	const src = `defaults: {store: fleet}
domain: d
rules:
  - {name: gcra, match: [{key: r, value: gcra}, k], rate: 100/s burst 20, prefetch: auto}
  - {name: window, match: [{key: r, value: window}, k], rate: 100/s burst 20, algorithm: fixed_window, prefetch: 5}
  - {name: bucket, match: [{key: r, value: bucket}, k], rate: 100/s burst 20, algorithm: token_bucket, prefetch: 20}
`
	m := &sharedMemory{}
	clock := admittest.NewManualClock(t0)
	es := []*Engine{fleetEngine(t, src, m, clock, nil), fleetEngine(t, src, m, clock, nil)}
	limit := admit.PerSecond(100).WithBurst(20)
	for _, rule := range []struct {
		name string
		alg  admit.Algorithm
	}{{"gcra", admit.AlgGCRA}, {"window", admit.AlgFixedWindow}, {"bucket", admit.AlgTokenBucket}} {
		var events []admittest.Event
		req := request("d", desc("r", rule.name, "k", "hot"))
		var res Result
		start := clock.Now()
		for step := range 2000 {
			clock.Advance(time.Millisecond / 2)
			e := es[step%2]
			if err := e.Check(context.Background(), req, nil, &res); err != nil {
				t.Fatal(err)
			}
			if d := res.Decision; d.Allowed {
				if d.Rule != rule.name {
					t.Fatalf("%s: admitted by %q", rule.name, d.Rule)
				}
				events = append(events, admittest.Event{At: clock.Now(), N: 1})
			}
		}
		if err := admittest.CheckBound(rule.alg, events, limit); err != nil {
			t.Errorf("%s: %v", rule.name, err)
		}
		// 1s at 100/s and a burst of 20: at most 120; blocks held or
		// expiring unspent deny some early.
		if len(events) < 60 {
			t.Errorf("%s: %d admitted in %v", rule.name, len(events), clock.Now().Sub(start))
		}
		// Blocks of the whole burst (bucket) may keep one instance
		// from ever getting one: the early denial the docs state.
		var blocks, local int64
		for i, e := range es {
			s := statsOf(e)[rule.name]
			if s.Keys != 1 {
				t.Errorf("%s: engine %d: %+v", rule.name, i, s)
			}
			blocks, local = blocks+s.Blocks, local+s.Local
		}
		if blocks == 0 || local < int64(len(events))/2 {
			t.Errorf("%s: %d blocks, %d of %d admitted from them", rule.name, blocks, local, len(events))
		}
	}
}

// TestEnginePrefetchStores: NewEngine refuses a prefetch of a store that
// is not shared, or whose limiters cannot grant part of a request, at the
// rule's prefetch field (or at defaults.prefetch, naming what took it).
func TestEnginePrefetchStores(t *testing.T) {
	cfg := Config{Backends: map[string]Backend{"mem": testMemory{}, "whole": &sharedMemory{whole: true}, "fleet": &sharedMemory{}}}
	for _, tc := range []struct{ src, want string }{
		{"rules:\n  - {name: a, match: k, rate: 5/s, store: mem, prefetch: auto}\n",
			`test.yaml:2:58: rules[0].prefetch: policy: prefetch without a shared store: the rule is kept in store "mem", which is not shared: every check is local already; prefetch takes blocks of a limit a fleet shares`},
		{"rules:\n  - {name: a, match: k, rate: 5/s, store: whole, prefetch: 3}\n",
			`test.yaml:2:60: rules[0].prefetch: policy: the store cannot prefetch: the limiters of store "whole" cannot grant part of a request (admit.PartialAllower), which taking a block needs`},
		{"defaults: {store: whole, prefetch: auto}\nrules:\n  - {name: a, match: k, rate: 5/s}\n",
			"test.yaml:1:36: defaults.prefetch: the inline limits of domain \"default\": policy: the store cannot prefetch: the limiters of store \"whole\" cannot grant part of a request (admit.PartialAllower), which taking a block needs\n" +
				`test.yaml:1:36: defaults.prefetch: rule "a": policy: the store cannot prefetch: the limiters of store "whole" cannot grant part of a request (admit.PartialAllower), which taking a block needs`},
		{"overrides: {store: mem, prefetch: 2}\nrules:\n  - {name: a, match: k, rate: 5/s}\n",
			`test.yaml:1:35: overrides.prefetch: policy: prefetch without a shared store: inline limits are kept in store "mem", which is not shared: every check is local already; prefetch takes blocks of a limit a fleet shares`},
	} {
		p, err := Parse("test.yaml", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = newEngine(p, cfg)
		if !errors.Is(err, ErrInvalidPolicy) || err.Error() != tc.want {
			t.Errorf("%s: got\n%v\nwant\n%s", tc.src, err, tc.want)
		}
	}
	p, err := Parse("test.yaml", []byte("rules:\n  - {name: a, match: k, rate: 5/s, store: fleet, prefetch: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestEnginePrefetchFailure: while the store fails, what the blocks hold
// is spent first; then the rule's failure policy decides.
func TestEnginePrefetchFailure(t *testing.T) {
	const src = `domain: d
rules:
  - {name: a, match: k, rate: 100/s burst 40, store: fleet, prefetch: 10, failure: fail_closed}
`
	m := &sharedMemory{}
	clock := admittest.NewManualClock(t0)
	e := fleetEngine(t, src, m, clock, nil)
	req := request("d", desc("k", "hot"))
	spentThenFailed(t, e, clock, req, func() { m.down.Store(true) })
	m.down.Store(false)
	clock.Advance(time.Second)
	if res := check(t, e, req, nil); !res.Decision.Allowed || res.Decision.Rule != "a" {
		t.Errorf("store back: %+v", res.Decision)
	}
}

// spentThenFailed checks req's key of rule "a" on e, advancing clock,
// until its blocks hold some events; then it calls down, which makes the
// store fail, and checks that the next checks are admitted from the
// blocks (one at least, at most two blocks of 10), then refused by the
// rule's fail_closed policy.
func spentThenFailed(t *testing.T, e *Engine, clock *admittest.ManualClock, req *Request, down func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for statsOf(e)["a"].Held < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no block held: %+v", statsOf(e)["a"])
		}
		clock.Advance(time.Millisecond)
		check(t, e, req, nil)
	}
	down()
	admitted := 0
	var res Result
	for range 50 {
		if err := e.Check(context.Background(), req, nil, &res); err != nil {
			t.Fatal(err)
		}
		d := res.Decision
		if d.Allowed {
			if d.Rule != "a" {
				t.Fatalf("admitted by %q", d.Rule)
			}
			admitted++
			continue
		}
		if d.Rule != "a/fail-closed" || !errors.Is(res.Statuses[0].Err, ErrStoreFailed) {
			t.Fatalf("refused by %q (%v), want the failure policy", d.Rule, res.Statuses[0].Err)
		}
		break
	}
	if admitted == 0 || admitted > 20 {
		t.Errorf("%d admitted from blocks after the store failed", admitted)
	}
}

// TestEnginePrefetchClose: an engine closes the prefetching limiters it
// owns, those it took over from Previous included, and not those a later
// engine took over from it; a closed limiter is not taken over.
func TestEnginePrefetchClose(t *testing.T) {
	const src = "domain: d\nrules:\n  - {name: a, match: k, rate: 100/s, store: fleet, prefetch: auto}\n  - {name: b, match: j, rate: %d/s, store: fleet, prefetch: auto}\n"
	m := &sharedMemory{}
	clock := admittest.NewManualClock(t0)
	layer := func(e *Engine, rule string) *prefetched {
		for _, c := range e.byPrint {
			if c.label == rule {
				return c.pf
			}
		}
		t.Fatalf("no layer %s", rule)
		return nil
	}
	e1 := fleetEngine(t, fmt.Sprintf(src, 10), m, clock, nil)
	e2 := fleetEngine(t, fmt.Sprintf(src, 20), m, clock, e1)
	a1, b1, a2, b2 := layer(e1, "a"), layer(e1, "b"), layer(e2, "a"), layer(e2, "b")
	if a1 != a2 || b1 == b2 || a2.owner.Load() != e2 || b1.owner.Load() != e1 {
		t.Fatalf("reload: a %p %p, b %p %p", a1, a2, b1, b2)
	}
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	if a2.closed.Load() || !b1.closed.Load() {
		t.Errorf("e1 closed: a closed %v (e2's), b closed %v (e1's)", a2.closed.Load(), b1.closed.Load())
	}
	if res := check(t, e2, request("d", desc("k", "x")), nil); !res.Decision.Allowed || res.Decision.Rule != "a" {
		t.Errorf("e2 after e1 closed: %+v", res.Decision)
	}
	// An engine built on a closed one takes over what is open (a, which
	// e2 owned) and builds afresh what was closed (b of 10/s).
	e3 := fleetEngine(t, fmt.Sprintf(src, 10), m, clock, e1)
	a3, b3 := layer(e3, "a"), layer(e3, "b")
	if a3 != a1 || a3.owner.Load() != e3 || b3 == b1 || b3.closed.Load() {
		t.Errorf("built on a closed engine: a %p (e1's %p), b %p (e1's %p, closed)", a3, a1, b3, b1)
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	if a2.closed.Load() || !b2.closed.Load() {
		t.Errorf("e2 closed: a closed %v (e3's), b closed %v (e2's)", a2.closed.Load(), b2.closed.Load())
	}
	if len(statsOf(e2)) != 0 {
		t.Error("a closed engine's stats")
	}
	if err := e3.Close(); err != nil {
		t.Fatal(err)
	}
	if !a3.closed.Load() || !b3.closed.Load() {
		t.Errorf("e3 closed: a %v, b %v", a3.closed.Load(), b3.closed.Load())
	}
}

// TestEnginePrefetchKeys: a prefetching limiter keeps the keys it is
// given, so the engine gives it keys of their own, not its scratch space:
// checks of many keys into one Result keep one entry per key.
func TestEnginePrefetchKeys(t *testing.T) {
	m := &sharedMemory{}
	clock := admittest.NewManualClock(t0)
	e := fleetEngine(t, "domain: d\nrules:\n  - {name: a, match: k, rate: 1000/s, store: fleet, prefetch: auto}\n", m, clock, nil)
	var res Result
	const keys = 50
	for round := range 10 {
		for i := range keys {
			clock.Advance(time.Microsecond)
			if err := e.Check(context.Background(), request("d", desc("k", fmt.Sprintf("key-%03d", (i*7+round)%keys))), nil, &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := statsOf(e)["a"]; s.Keys != keys {
		t.Errorf("%d keys kept for %d: %+v", s.Keys, keys, s)
	}
}

// TestEnginePrefetchReset: Reset of a prefetching rule resets the key in
// the store.
func TestEnginePrefetchReset(t *testing.T) {
	m := &sharedMemory{}
	clock := admittest.NewManualClock(t0)
	e := fleetEngine(t, "domain: d\nrules:\n  - {name: a, match: k, rate: 10/min, store: fleet, prefetch: 2}\n", m, clock, nil)
	req := request("d", desc("k", "x"))
	for range 10 {
		check(t, e, req, nil)
	}
	if res := check(t, e, req, nil); res.Decision.Allowed {
		t.Fatalf("11th of 10/min admitted: %+v", res.Decision)
	}
	if n, err := e.Reset(context.Background(), req); n != 1 || err != nil {
		t.Fatalf("Reset: %d, %v", n, err)
	}
	lim := m.lims["a"]
	if granted, _, err := lim.AllowAtMost(context.Background(), admit.Request{Key: "1:x", N: 20}); err != nil || granted != 10 {
		t.Errorf("after Reset, the store grants %d of 20 (%v)", granted, err)
	}
}
