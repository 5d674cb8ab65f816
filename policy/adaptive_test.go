package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/fair"
)

// admitOne checks req into a fresh Held and fails the test unless it is
// admitted; it returns the Held and the result.
func admitOne(t *testing.T, e *Engine, req *Request) (*compose.Held, *Result) {
	t.Helper()
	h := new(compose.Held)
	res := check(t, e, req, h)
	if !res.Decision.Allowed {
		t.Fatalf("refused: %+v", res.Decision)
	}
	return h, res
}

// limitOf peeks at req and returns the rate (or cap) of its first status.
func limitOf(t *testing.T, e *Engine, req *Request) admit.Limit {
	t.Helper()
	peek := *req
	peek.Hits = 0
	res := check(t, e, &peek, nil)
	return res.Statuses[0].Limit
}

// TestEngineAdaptiveRate: an adaptive_rate rule is an AIMD per key that
// the outcomes reported with Held.Finish move: a failure halves it, a
// success adds the step, a release teaches nothing, and a slow success is
// a failure; decisions and statuses name the rule, Kind rate.
func TestEngineAdaptiveRate(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - name: backend
    match: backend
    adaptive_rate: {min: 10/s, max: 100/s, initial: 40/s, step: 2, latency_threshold: 500ms}
  - name: search
    match: {key: route, value: /search}
    adaptive_rate: {min: 1/s, max: 20/s, initial: 4/s}
`)
	req := request("api", desc("backend", "a"))
	h, res := admitOne(t, e, req)
	want(t, "first", res.Decision, true, "backend", 39)
	if st := res.Statuses[0]; st.Rule != "backend" || st.Kind != admit.KindRate || st.Limit != admit.PerSecond(40) {
		t.Errorf("status %+v", st)
	}
	if !h.WantsOutcome() {
		t.Fatal("an adaptive rate wants the outcome")
	}
	h.Finish(true)
	if l := limitOf(t, e, req); l != admit.PerSecond(20) {
		t.Fatalf("after a failure: %v, want 20/s", l)
	}
	// Another backend has a rate of its own.
	if l := limitOf(t, e, request("api", desc("backend", "b"))); l != admit.PerSecond(40) {
		t.Fatalf("backend b: %v, want 40/s", l)
	}
	h, _ = admitOne(t, e, req)
	h.Finish(false)
	if l := limitOf(t, e, req); l != admit.PerSecond(22) {
		t.Fatalf("after a success: %v, want 22/s", l)
	}
	h, _ = admitOne(t, e, req)
	h.Release()
	if l := limitOf(t, e, req); l != admit.PerSecond(22) {
		t.Fatalf("after a release: %v, want 22/s", l)
	}
	h, _ = admitOne(t, e, req)
	clock.Advance(600 * time.Millisecond)
	h.Finish(false)
	if l := limitOf(t, e, req); l != admit.PerSecond(11) {
		t.Fatalf("after a slow success: %v, want 11/s", l)
	}
	// The rate is enforced: 11 at once (three were admitted 600ms ago at
	// 22/s, and the change kept what was available).
	clock.Advance(time.Second)
	n := 0
	for {
		var h compose.Held
		res := check(t, e, req, &h)
		if !res.Decision.Allowed {
			if res.Decision.Rule != "backend" || res.Statuses[0].Code != CodeOverLimit || res.Decision.RetryAfter <= 0 {
				t.Fatalf("refusal %+v", res)
			}
			if h.Len() != 0 {
				t.Fatal("a refused request holds a grant")
			}
			break
		}
		h.Release()
		n++
	}
	if n != 11 {
		t.Fatalf("admitted %d at once, want 11", n)
	}
	// A peek tracks nothing.
	var hp compose.Held
	peek := *req
	peek.Hits = 0
	check(t, e, &peek, &hp)
	if hp.Len() != 0 {
		t.Fatal("a peek holds a grant")
	}
	// A rule matching one value has one rate.
	h, _ = admitOne(t, e, request("api", desc("route", "/search")))
	h.Finish(true)
	if l := limitOf(t, e, request("api", desc("route", "/search"))); l != admit.PerSecond(2) {
		t.Fatalf("search: %v, want 2/s", l)
	}
}

// TestEngineAdaptiveConcurrency: an adaptive_concurrency rule is a
// Gradient per key whose limit moves with the latencies of the manual
// clock: it grows while requests are fast, shrinks when they slow down,
// and halves on a failure; it is asked last, after the other caps.
func TestEngineAdaptiveConcurrency(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - name: db
    match: {key: backend, value: db}
    adaptive_concurrency: {min: 2, max: 50, initial: 4, smoothing: 1, queue_size: 0, window_samples: 1, window_time: 0s}
  - name: cap
    match: {key: generic_key, value: global}
    concurrency: 100
`)
	req := request("api", desc("backend", "db"))
	// batch admits k requests at once, advances the clock by lat, and
	// finishes them.
	batch := func(k int, lat time.Duration, failed bool) {
		t.Helper()
		hs := make([]*compose.Held, k)
		for i := range hs {
			var res *Result
			hs[i], res = admitOne(t, e, req)
			if st := res.Statuses[0]; st.Kind != admit.KindConcurrency || st.Rule != "db" {
				t.Fatalf("status %+v", st)
			}
		}
		clock.Advance(lat)
		for _, h := range hs {
			h.Finish(failed)
		}
	}
	if l := limitOf(t, e, req); l.Rate != 4 {
		t.Fatalf("initial limit %v", l)
	}
	// Four in flight: the fifth is refused.
	var hs [4]*compose.Held
	for i := range hs {
		hs[i], _ = admitOne(t, e, req)
	}
	res := check(t, e, req, new(compose.Held))
	want(t, "fifth", res.Decision, false, "db", 0)
	if res.Decision.Kind != admit.KindConcurrency || res.Statuses[0].Code != CodeOverLimit {
		t.Fatalf("fifth: %+v", res)
	}
	for _, h := range hs {
		h.Release() // successes of no latency
	}
	// A fresh engine, for windows whose latencies are known.
	e, clock = engine(t, `
domain: api
rules:
  - name: db
    match: {key: backend, value: db}
    adaptive_concurrency: {min: 2, max: 50, initial: 4, smoothing: 1, queue_size: 0, window_samples: 1, window_time: 0s}
`)
	// Window 1: two requests of 10ms: the latency without load is 10ms,
	// the gradient 1.5: 4 -> 6.
	batch(2, 10*time.Millisecond, false)
	if l := limitOf(t, e, req); l.Rate != 6 {
		t.Fatalf("after fast requests: %v, want 6", l.Rate)
	}
	// Window 2: three requests of 40ms: the gradient 0.375, clamped to
	// 0.5: 6 -> 3.
	batch(3, 40*time.Millisecond, false)
	if l := limitOf(t, e, req); l.Rate != 3 {
		t.Fatalf("after slow requests: %v, want 3", l.Rate)
	}
	// Window 3: a failure halves it, down to min.
	batch(1, 10*time.Millisecond, true)
	if l := limitOf(t, e, req); l.Rate != 2 {
		t.Fatalf("after a failure: %v, want 2", l.Rate)
	}
	// Fast again: it grows.
	batch(2, 10*time.Millisecond, false)
	if l := limitOf(t, e, req); l.Rate != 3 {
		t.Fatalf("after fast requests: %v, want 3", l.Rate)
	}
}

// TestEngineAdaptiveLast: the adaptive concurrency cap is asked after the
// other caps, so a request they refuse never takes (and gives back) its
// slots, which would count as a sample of no latency.
func TestEngineAdaptiveLast(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - name: db
    match: backend
    adaptive_concurrency: {min: 5, max: 50}
  - name: cap
    match: generic_key
    concurrency: 1
`)
	req := request("api", desc("backend", "db"), desc("generic_key", "global"))
	h, _ := admitOne(t, e, req)
	res := check(t, e, req, new(compose.Held))
	want(t, "second", res.Decision, false, "cap", 0)
	if st := res.Statuses[0]; !st.Skipped {
		t.Fatalf("the adaptive cap was asked before the cap that refused: %+v", st)
	}
	h.Release()
}

// TestEngineLanes: lanes of a rate budget, with percentages, no
// borrowing, the default lane for unknown values; and lanes of slots with
// weights, borrowing up, a budget per tenant.
func TestEngineLanes(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - name: api
    match: [{key: route, value: /api}, {key: priority}]
    lanes:
      budget: 10/s
      lane_key: priority
      shares: {critical: 50%, default: 30%, batch: 20%}
      borrow: none
      default_lane: default
  - name: workers
    match: [tenant, class]
    lanes: {concurrency: 10, shares: {high: 1, low: 1}}
`)
	count := func(prio string) int {
		n := 0
		for {
			res := check(t, e, request("api", desc("route", "/api", "priority", prio)), nil)
			if !res.Decision.Allowed {
				if res.Statuses[0].Rule != "api" || res.Statuses[0].Kind != admit.KindRate {
					t.Fatalf("refusal of %s: %+v", prio, res.Statuses[0])
				}
				return n
			}
			n++
		}
	}
	res := check(t, e, request("api", desc("route", "/api", "priority", "batch")), nil)
	want(t, "batch", res.Decision, true, "api/batch", 1)
	if res.Statuses[0].Limit != admit.PerSecond(2) {
		t.Fatalf("batch's share %v, want 2/s", res.Statuses[0].Limit)
	}
	if n := count("batch"); n != 1 {
		t.Fatalf("batch admitted %d more, want 1", n)
	}
	if n := count("critical"); n != 5 {
		t.Fatalf("critical admitted %d, want 5", n)
	}
	// Unknown lanes go to the default lane.
	if n := count("vip"); n != 3 {
		t.Fatalf("an unknown lane admitted %d, want the default's 3", n)
	}
	if n := count("default"); n != 0 {
		t.Fatalf("default admitted %d after the unknown lane took its share", n)
	}
	clock.Advance(time.Second)
	if n := count("default"); n != 3 {
		t.Fatalf("default admitted %d a second later, want 3", n)
	}

	// Slots: 5 each, a lane keeps 3; high borrows 2 of low's.
	acquire := func(tenant, class string, h *compose.Held) bool {
		res := check(t, e, request("api", desc("tenant", tenant, "class", class)), h)
		if res.Decision.Allowed && res.Decision.Kind != admit.KindConcurrency {
			t.Fatalf("decision %+v", res.Decision)
		}
		return res.Decision.Allowed
	}
	var h compose.Held
	n := 0
	for acquire("acme", "high", &h) {
		n++
	}
	if n != 7 {
		t.Fatalf("high took %d slots, want 5 + 2 borrowed", n)
	}
	n = 0
	for acquire("acme", "low", &h) {
		n++
	}
	if n != 3 {
		t.Fatalf("low took %d slots, want the 3 it kept", n)
	}
	// Another tenant has a budget of its own.
	var h2 compose.Held
	if !acquire("newco", "low", &h2) {
		t.Fatal("newco shares acme's budget")
	}
	h.Release()
	h2.Release()
	if !acquire("acme", "low", &h) {
		t.Fatal("the slots did not come back")
	}
	h.Release()
}

// TestEngineAdaptivePrevious: a reload keeps the state of unchanged
// adaptive rules and lanes (the rate learnt, the slots in flight) and
// starts changed ones afresh.
func TestEngineAdaptivePrevious(t *testing.T) {
	const src = `
domain: api
rules:
  - {name: backend, match: backend, adaptive_rate: {min: 10/s, max: 100/s, initial: 40/s}}
  - {name: db, match: db, adaptive_concurrency: {min: 1, max: 10, initial: 1}}
  - {name: lanes, match: prio, lanes: {concurrency: 2, shares: {hi: 50%, lo: 50%}, reserve: 100%}}
`
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	old, err := NewEngine(p)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	req := request("api", desc("backend", "a"), desc("db", "x"), desc("prio", "hi"))
	var res Result
	var h compose.Held
	if err := old.Check(context.Background(), req, &h, &res); err != nil || !res.Decision.Allowed {
		t.Fatal(err, res.Decision)
	}
	h.Finish(true) // 40/s -> 20/s
	var h1 compose.Held
	if err := old.Check(context.Background(), request("api", desc("db", "x"), desc("prio", "hi")), &h1, &res); err != nil || !res.Decision.Allowed {
		t.Fatal(err, res.Decision)
	}
	p2, err := Parse("p.yaml", []byte(src+`  - {name: new, match: other, rate: 1/s}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(p2, WithPrevious(old))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if l := limitOf(t, e, request("api", desc("backend", "a"))); l != admit.PerSecond(20) {
		t.Fatalf("the learnt rate was not kept: %v", l)
	}
	// The slot in flight is still held: the cap (1) and the lane are full.
	if err := e.Check(context.Background(), request("api", desc("db", "x")), &h, &res); err != nil || res.Decision.Allowed {
		t.Fatalf("the slot in flight was forgotten: %+v, %v", res.Decision, err)
	}
	if err := e.Check(context.Background(), request("api", desc("prio", "hi")), &h, &res); err != nil || res.Decision.Allowed {
		t.Fatalf("the lane's slot in flight was forgotten: %+v, %v", res.Decision, err)
	}
	h1.Release()
	// Changed: starts afresh.
	p3, err := Parse("p.yaml", []byte(`
domain: api
rules:
  - {name: backend, match: backend, adaptive_rate: {min: 10/s, max: 100/s, initial: 30/s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	e3, err := NewEngine(p3, WithPrevious(e))
	if err != nil {
		t.Fatal(err)
	}
	defer e3.Close()
	if l := limitOf(t, e3, request("api", desc("backend", "a"))); l != admit.PerSecond(30) {
		t.Fatalf("a changed rule kept its state: %v", l)
	}
}

// TestEngineAdaptiveKeys: per-value adaptive limits hold at most
// WithMaxKeys keys; a new key takes the place of an idle one, and fails
// with ErrTooManyKeys when none is idle.
func TestEngineAdaptiveKeys(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - {name: db, match: db, adaptive_concurrency: {min: 1, max: 10}}
  - {name: rate, match: backend, adaptive_rate: {min: 1/s, max: 10/s}}
  - {name: lanes, match: [tenant, prio], lanes: {budget: 2/s, shares: {hi: 1, lo: 1}}}
`, WithMaxKeys(2))
	var ha, hb compose.Held
	for _, c := range []struct {
		h   *compose.Held
		key string
	}{{&ha, "a"}, {&hb, "b"}} {
		if res := check(t, e, request("api", desc("db", c.key)), c.h); !res.Decision.Allowed {
			t.Fatalf("%s: %+v", c.key, res.Decision)
		}
	}
	var res Result
	err := e.Check(context.Background(), request("api", desc("db", "c")), new(compose.Held), &res)
	if !errors.Is(err, ErrTooManyKeys) || res.Decision.Allowed {
		t.Fatalf("a third key with two busy: %+v, %v", res.Decision, err)
	}
	ha.Release()
	if res := check(t, e, request("api", desc("db", "c")), &ha); !res.Decision.Allowed {
		t.Fatalf("a third key with one idle: %+v", res.Decision)
	}
	ha.Release()
	hb.Release()

	// Rates: a key whose rate is full is idle.
	for _, k := range []string{"a", "b"} {
		check(t, e, request("api", desc("backend", k)), nil)
	}
	if err := e.Check(context.Background(), request("api", desc("backend", "c")), nil, &res); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a third rate key with two in use: %+v, %v", res.Decision, err)
	}
	clock.Advance(time.Second)
	if res := check(t, e, request("api", desc("backend", "c")), nil); !res.Decision.Allowed {
		t.Fatalf("a third rate key a second later: %+v", res.Decision)
	}
	// Lanes: a budget whose lanes are all full is idle.
	for _, k := range []string{"a", "b"} {
		check(t, e, request("api", desc("tenant", k, "prio", "hi")), nil)
	}
	if err := e.Check(context.Background(), request("api", desc("tenant", "c", "prio", "hi")), nil, &res); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a third budget with two in use: %+v, %v", res.Decision, err)
	}
	clock.Advance(time.Second)
	if res := check(t, e, request("api", desc("tenant", "c", "prio", "lo")), nil); !res.Decision.Allowed {
		t.Fatalf("a third budget a second later: %+v", res.Decision)
	}
}

// TestEngineAdaptiveShadow: a shadow adaptive rule decides, learns from
// outcomes and never refuses.
func TestEngineAdaptiveShadow(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: backend, match: backend, shadow: true, adaptive_rate: {min: 1/s, max: 10/s, initial: 2/s}}
`)
	req := request("api", desc("backend", "a"))
	for i := range 3 {
		h, res := admitOne(t, e, req)
		if i == 2 && (!res.ShadowRefused || !res.Statuses[0].WouldRefuse) {
			t.Fatalf("third: %+v", res)
		}
		h.Finish(true)
	}
	if l := limitOf(t, e, req); l != admit.PerSecond(1) {
		t.Fatalf("a shadow rule did not learn: %v", l)
	}
}

// TestParseAdaptive: the fields of the new kinds, and their defaults.
func TestParseAdaptive(t *testing.T) {
	p, err := ParseYAML("p.yaml", []byte(`
defaults: {store: redis}
domain: api
rules:
  - name: a
    match: k
    adaptive_concurrency: {min: 2, max: 20, initial: 5, tolerance: 2, smoothing: 0.5, queue_size: 1.5, long_window: 10, window_samples: 4, window_time: 100ms}
  - name: b
    match: j
    adaptive_rate: {min: 60/m, max: 600/m, initial: 120/m, step: 6/m, factor: 0.75, burst: 30, latency_threshold: 1s, increase_interval: 2s, decrease_interval: 3s}
  - name: c
    match: [x, prio]
    lanes: {budget: 100/s burst 50, shares: {hi: 12.5%, mid: 37.5%, lo: 50%}, borrow: any, reserve: 25%}
  - name: d
    match: i
    adaptive_rate: {min: 1/s, max: 5/s, step: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs := p.Domains[0].Rules
	q, wt := 1.5, 100*time.Millisecond
	if a := rs[0].AdaptiveConcurrency; a == nil || fmt.Sprint(*a) != fmt.Sprint(AdaptiveConcurrency{Min: 2, Max: 20, Initial: 5, Tolerance: 2, Smoothing: 0.5, QueueSize: a.QueueSize, LongWindow: 10, WindowSamples: 4, WindowTime: a.WindowTime}) ||
		*a.QueueSize != q || *a.WindowTime != wt {
		t.Errorf("adaptive_concurrency %+v", a)
	}
	if a := rs[1].AdaptiveRate; a == nil || *a != (AdaptiveRate{Period: time.Minute, Min: 60, Max: 600, Initial: 120, Step: 6, Factor: 0.75, Burst: 30,
		LatencyThreshold: time.Second, IncreaseInterval: 2 * time.Second, DecreaseInterval: 3 * time.Second}) {
		t.Errorf("adaptive_rate %+v", a)
	}
	if l := rs[2].Lanes; l == nil || *l.Budget != admit.PerSecond(100).WithBurst(50) || l.LaneKey != "" || l.Reserve != 0.25 ||
		fmt.Sprint(l.Lanes) != "[{hi 1250} {mid 3750} {lo 5000}]" || l.DefaultLane != "" || l.Borrow.String() != "any" {
		t.Errorf("lanes %+v", l)
	}
	if a := rs[3].AdaptiveRate; a == nil || *a != (AdaptiveRate{Period: time.Second, Min: 1, Max: 5, Step: 2}) {
		t.Errorf("adaptive_rate %+v", a)
	}
	// Kept in memory, whatever defaults.store says.
	for _, r := range rs {
		if r.Store != StoreLocal || r.Failure != (Failure{}) {
			t.Errorf("rule %s: store %v, failure %v", r.Name, r.Store, r.Failure)
		}
	}
	if _, err := NewEngine(p); err != nil {
		t.Fatalf("NewEngine without Redis: %v", err)
	}
}

// adaptiveBad are policies whose new kinds are invalid, with the errors
// they must give (also seeds of FuzzParseYAML).
var adaptiveBad = []struct {
	name string
	src  string
	want []string
}{
	{"store redis", "rules:\n  - name: a\n    match: k\n    adaptive_rate: {min: 1/s, max: 10/s}\n    store: redis\n",
		[]string{
			`p.yaml:5:12: rules[0].store: adaptive_rate is kept in memory only (an adaptive limit learns from the requests of this instance, and Redis holds no such state), and so is its rule: remove store: redis, or put the limits to keep in Redis in a rule of their own`,
		}},
	{"failure", "defaults: {store: redis}\nrules:\n  - name: a\n    match: k\n    adaptive_concurrency: {min: 1, max: 10}\n    failure: fail_open\n",
		[]string{
			`p.yaml:6:14: rules[0].failure: a failure policy applies to rules kept in Redis, and this one is kept in memory, as every rule with adaptive_concurrency is`,
		}},
	{"bounds", "rules:\n  - {name: a, match: k, adaptive_concurrency: {min: 10, max: 5}}\n  - {name: b, match: j, adaptive_rate: {min: 10/s, max: 20/s, initial: 30/s}}\n  - {name: c, match: i, adaptive_concurrency: {min: 1, max: 5, initial: 9}}\n",
		[]string{
			`p.yaml:2:62: rules[0].adaptive_concurrency.max: max 5 is below min 10`,
			`p.yaml:3:72: rules[1].adaptive_rate.initial: initial 30 is outside [min, max] = [10, 20]`,
			`p.yaml:4:73: rules[2].adaptive_concurrency.initial: initial 9 is outside [min, max] = [1, 5]`,
		}},
	{"periods", "rules:\n  - {name: a, match: k, adaptive_rate: {min: 10/s, max: 600/m}}\n  - {name: b, match: j, adaptive_rate: {min: 1/s, max: 9/s, step: 1/m}}\n",
		[]string{
			`p.yaml:2:57: rules[0].adaptive_rate.max: max 600/m is a rate per 1m0s and min 10/s one per 1s: give the rates of adaptive_rate per the same period`,
			`p.yaml:3:67: rules[1].adaptive_rate.step: step 1/m is a rate per 1m0s and min 1/s one per 1s: give the rates of adaptive_rate per the same period`,
		}},
	{"rates", "rules:\n  - {name: a, match: k, adaptive_rate: {min: 1/s burst 5, max: unlimited}}\n  - {name: b, match: j, adaptive_rate: {min: 0/s, max: 5/x}}\n",
		[]string{
			`p.yaml:2:46: rules[0].adaptive_rate.min: a burst here means nothing: the burst follows the rate (or give adaptive_rate a burst)`,
			`p.yaml:2:64: rules[0].adaptive_rate.max: an adaptive rate cannot be unlimited`,
			`p.yaml:3:46: rules[1].adaptive_rate.min: rate 0/s is below one event per period`,
			`p.yaml:3:56: rules[1].adaptive_rate.max: invalid rate "5/x": period "x": want a unit (s, min, h, d, week) or a duration (500ms, 5m, 1h30m)`,
		}},
	{"numbers", "rules:\n  - {name: a, match: k, adaptive_concurrency: {min: 1, max: 5, tolerance: 0.5, smoothing: 2, queue_size: -1, long_window: 0, window_time: -1s}}\n  - {name: b, match: j, adaptive_rate: {min: 1/s, max: 5/s, factor: 1, step: 0, burst: x, latency_threshold: soon}}\n  - {name: c, match: i, adaptive_concurrency: {min: 1, max: 5, tolerance: .nan, smoothing: true}}\n",
		[]string{
			`p.yaml:2:75: rules[0].adaptive_concurrency.tolerance: tolerance 0.5 is below 1: requests may always take as long as without load`,
			`p.yaml:2:91: rules[0].adaptive_concurrency.smoothing: smoothing 2 is outside (0, 1]`,
			`p.yaml:2:106: rules[0].adaptive_concurrency.queue_size: queue_size -1 is negative`,
			`p.yaml:2:123: rules[0].adaptive_concurrency.long_window: 0 is too small (the minimum is 1)`,
			`p.yaml:2:139: rules[0].adaptive_concurrency.window_time: duration -1s is negative`,
			`p.yaml:3:69: rules[1].adaptive_rate.factor: factor 1 is outside (0, 1): a failure must cut the rate`,
			`p.yaml:3:78: rules[1].adaptive_rate.step: 0 is too small (the minimum is 1)`,
			`p.yaml:3:88: rules[1].adaptive_rate.burst: want a whole number, got the string "x"`,
			`p.yaml:3:110: rules[1].adaptive_rate.latency_threshold: want a duration (50ms, 30s, 1m), got "soon"`,
			`p.yaml:4:75: rules[2].adaptive_concurrency.tolerance: want a finite number, got a number (.nan)`,
			`p.yaml:4:92: rules[2].adaptive_concurrency.smoothing: want a number, got a boolean (true)`,
		}},
	{"missing", "rules:\n  - {name: a, match: k, adaptive_concurrency: {min: 1}}\n  - {name: b, match: j, adaptive_rate: {max: 5/s}}\n  - {name: c, match: i, lanes: {budget: 5/s}}\n  - {name: d, match: h, lanes: {shares: {a: 1}}}\n",
		[]string{
			`p.yaml:2:47: rules[0].adaptive_concurrency: adaptive_concurrency needs min and max, the bounds of the limit`,
			`p.yaml:3:40: rules[1].adaptive_rate: adaptive_rate needs min and max, the bounds of the rate (10/s, 1000/s)`,
			`p.yaml:4:32: rules[2].lanes: lanes need shares: the lanes, highest priority first, and their shares (critical: 50%)`,
			`p.yaml:5:32: rules[3].lanes: lanes need a budget (a rate, 100/s) or concurrency (slots in flight) to share`,
		}},
	{"not mappings", "rules:\n  - {name: a, match: k, adaptive_concurrency: 5}\n  - {name: b, match: j, adaptive_rate: 10/s}\n  - {name: c, match: i, lanes: [a, b]}\n",
		[]string{
			`p.yaml:2:47: rules[0].adaptive_concurrency: want a mapping, got a number (5)`,
			`p.yaml:3:40: rules[1].adaptive_rate: want a mapping, got the string "10/s"`,
			`p.yaml:4:32: rules[2].lanes: want a mapping, got a list`,
		}},
	{"unknown fields", "rules:\n  - {name: a, match: k, adaptive_concurrency: {min: 1, max: 5, limit: 3}}\n  - {name: b, match: j, adaptive_rate: {min: 1/s, max: 5/s, rate: 3/s}}\n  - {name: c, match: i, lanes: {budget: 5/s, shares: {a: 1}, lanes: 3}}\n",
		[]string{
			`p.yaml:2:64: rules[0].adaptive_concurrency.limit: unknown field "limit" (want one of min, max, initial, tolerance, smoothing, queue_size, long_window, window_samples, window_time)`,
			`p.yaml:3:61: rules[1].adaptive_rate.rate: unknown field "rate" (want one of min, max, initial, step, factor, burst, latency_threshold, increase_interval, decrease_interval)`,
			`p.yaml:4:62: rules[2].lanes.lanes: unknown field "lanes" (want one of budget, concurrency, lane_key, shares, borrow, default_lane, reserve)`,
		}},
	{"shares", "rules:\n  - {name: a, match: k, lanes: {budget: 10/s, shares: {a: 50%, b: 40%}}}\n  - {name: b, match: j, lanes: {budget: 10/s, shares: {a: 50%, b: 2}}}\n  - {name: c, match: i, lanes: {budget: 10/s, shares: {}}}\n  - {name: d, match: h, lanes: {budget: 10/s, shares: {\"\": 1, x: 0%, y: 100.001%, z: 0}}}\n",
		[]string{
			`p.yaml:2:56: rules[0].lanes.shares: the shares add up to 90%, want 100% (or give weights: whole numbers without %)`,
			`p.yaml:3:67: rules[1].lanes.shares.b: give every share as a percentage (50%) or every share as a weight (a whole number), not both`,
			`p.yaml:4:55: rules[2].lanes.shares: no lanes`,
			`p.yaml:5:56: rules[3].lanes.shares[""]: a lane needs a name`,
			`p.yaml:5:66: rules[3].lanes.shares.x: want a percentage above 0 and at most 100% with at most two decimals (50%, 12.5%), got "0%"`,
			`p.yaml:5:73: rules[3].lanes.shares.y: want a percentage above 0 and at most 100% with at most two decimals (50%, 12.5%), got "100.001%"`,
			`p.yaml:5:86: rules[3].lanes.shares.z: 0 is too small (the minimum is 1)`,
		}},
	{"lanes names", "rules:\n  - {name: a, match: [k, p], lanes: {budget: 10/s, shares: {hi: 1, lo: 1}, default_lane: mid, lane_key: prio}}\n",
		[]string{
			`p.yaml:2:90: rules[0].lanes.default_lane: default_lane "mid" is not a lane (lanes: hi, lo)`,
			`p.yaml:2:105: rules[0].lanes.lane_key: no match entry has key "prio", whose value would pick the lane`,
		}},
	{"lanes budget", "rules:\n  - {name: a, match: k, lanes: {budget: 10/s, concurrency: 5, shares: {a: 1}}}\n  - {name: b, match: j, lanes: {budget: unlimited, shares: {a: 1}}}\n  - {name: c, match: i, lanes: {budget: 2/s, shares: {a: 1, b: 1, c: 1}}}\n  - {name: d, match: h, lanes: {concurrency: 0, shares: {a: 1}}}\n  - {name: e, match: g, lanes: {budget: 0/s, shares: {a: 1}}}\n",
		[]string{
			`p.yaml:2:60: rules[0].lanes.concurrency: give lanes a budget (a rate) or concurrency (slots), not both`,
			`p.yaml:3:41: rules[1].lanes.budget: the budget of lanes cannot be unlimited`,
			`p.yaml:4:41: rules[2].lanes.budget: burst 2 is too small to give lane "c" (share 1 of 3) one of its own`,
			`p.yaml:5:46: rules[3].lanes.concurrency: 0 is too small (the minimum is 1)`,
			`p.yaml:6:41: rules[4].lanes.budget: the budget of lanes cannot be zero`,
		}},
	{"lanes options", "rules:\n  - {name: a, match: k, lanes: {budget: 10/s, shares: {a: 1}, borrow: sometimes, reserve: 0}}\n  - {name: b, match: j, lanes: {budget: 10/s, shares: {a: 1}, reserve: 150%}}\n  - {name: c, match: i, lanes: {budget: 10/s, shares: {a: 1}, reserve: 1.5}}\n",
		[]string{
			`p.yaml:2:71: rules[0].lanes.borrow: unknown borrowing "sometimes" (want up, any or none)`,
			`p.yaml:2:91: rules[0].lanes.reserve: 0 is not a fraction in (0, 1] (0.5, or 50%)`,
			`p.yaml:3:72: rules[1].lanes.reserve: 150% is not a fraction in (0, 1] (0.5, or 50%)`,
			`p.yaml:4:72: rules[2].lanes.reserve: 1.5 is not a fraction in (0, 1] (0.5, or 50%)`,
		}},
	{"tiers", "tier_tables:\n  plans:\n    default: free\n    tiers:\n      free: {rate: 1/s, adaptive_rate: {min: 1/s, max: 2/s}}\nrules:\n  - {name: a, match: k, tiers: plans, lanes: {budget: 10/s, shares: {a: 1}}}\n",
		[]string{
			`p.yaml:5:25: tier_tables.plans.tiers.free.adaptive_rate: unknown field "adaptive_rate" (want one of description, extends, rate, burst, algorithm, quota, concurrency, unlimited)`,
			`p.yaml:7:46: rules[0].lanes: lanes contradicts tiers: the tiers of the table give the rule's limits`,
		}},
	{"unlimited", "rules:\n  - {name: a, match: k, unlimited: true, adaptive_concurrency: {min: 1, max: 5}}\n",
		[]string{
			`p.yaml:2:36: rules[0].unlimited: unlimited contradicts the adaptive_concurrency, adaptive_rate or lanes also given`,
		}},
}

func TestParseAdaptiveBad(t *testing.T) {
	for _, tc := range adaptiveBad {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseYAML("p.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("loaded %+v", p)
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("%v is not ErrInvalidPolicy", err)
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestValidateAdaptive: a Policy built in Go with invalid new kinds is
// refused by Validate (and NewEngine), each problem named; a valid one,
// with its zero fields as defaults, runs.
func TestValidateAdaptive(t *testing.T) {
	neg := -time.Second
	nan := math.NaN()
	many := make([]fair.Lane, fair.MaxLanes+1)
	for i := range many {
		many[i] = fair.Lane{Name: fmt.Sprint("l", i), Share: 1}
	}
	rule := func(name string, l Limits) *Rule {
		return &Rule{Name: name, Match: []Matcher{{Key: name}}, Limits: l}
	}
	redis := rule("redis", Limits{AdaptiveRate: &AdaptiveRate{Min: 1, Max: 2}})
	redis.Store = StoreRedis
	failing := rule("failing", Limits{AdaptiveConcurrency: &AdaptiveConcurrency{Min: 1, Max: 2}})
	failing.Failure = Failure{Policy: FailClosed}
	p := &Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{
		redis, failing,
		rule("conc", Limits{AdaptiveConcurrency: &AdaptiveConcurrency{Min: 0, Max: 5, Tolerance: nan, Smoothing: 2, QueueSize: &nan, LongWindow: -1, WindowSamples: -1, WindowTime: &neg}}),
		rule("rate", Limits{AdaptiveRate: &AdaptiveRate{Min: 1, Max: admit.Inf, Step: -1, Factor: 2, Burst: -1, LatencyThreshold: -1}}),
		rule("period", Limits{AdaptiveRate: &AdaptiveRate{Period: -time.Second, Min: 1, Max: 2}}),
		rule("overflow", Limits{AdaptiveRate: &AdaptiveRate{Period: time.Hour, Min: 1, Max: 1 << 40}}),
		rule("both", Limits{Lanes: &Lanes{Budget: &admit.Limit{Rate: 1, Period: time.Second}, Concurrency: 3, Lanes: []fair.Lane{{Name: "a", Share: 1}}}}),
		rule("none", Limits{Lanes: &Lanes{Lanes: []fair.Lane{{Name: "a", Share: 1}}}}),
		rule("lanes", Limits{Lanes: &Lanes{Concurrency: 10, Lanes: []fair.Lane{{Name: "a", Share: 1}, {Name: "a", Share: 0}, {Name: "", Share: 1}}, Borrow: 9, Reserve: 2, DefaultLane: "z", LaneKey: "q"}}),
		rule("many", Limits{Lanes: &Lanes{Concurrency: 100, Lanes: many}}),
		rule("nolanes", Limits{Lanes: &Lanes{Budget: &admit.Limit{Rate: 1, Period: -1}}}),
		{Name: "tiered", Match: []Matcher{{Key: "tiered"}}, Tiers: &TierTable{Name: "t", Default: "x", Tiers: map[string]*Tier{
			"x": {Name: "x", Limits: Limits{Lanes: &Lanes{Concurrency: 1, Lanes: []fair.Lane{{Name: "a", Share: 1}}}}},
		}}},
	}}}}
	err := p.Validate()
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Validate: %v", err)
	}
	got := err.Error()
	for _, w := range []string{
		"rules[0].store: adaptive_rate is kept in memory only",
		"rules[1].failure: a failure policy applies to rules kept in Redis",
		"rules[2].adaptive_concurrency.min: min 0 is below 1",
		"rules[2].adaptive_concurrency.tolerance: tolerance NaN",
		"rules[2].adaptive_concurrency.smoothing: smoothing 2",
		"rules[2].adaptive_concurrency.queue_size: queue_size NaN",
		"rules[2].adaptive_concurrency.long_window: long_window -1 is negative",
		"rules[2].adaptive_concurrency.window_samples: window_samples -1 is negative",
		"rules[2].adaptive_concurrency.window_time: window_time -1s is negative",
		"rules[3].adaptive_rate.max: max cannot be unlimited",
		"rules[3].adaptive_rate.step: step -1 is negative",
		"rules[3].adaptive_rate.factor: factor 2 is outside (0, 1)",
		"rules[3].adaptive_rate.burst: burst -1 is negative",
		"rules[3].adaptive_rate.latency_threshold: latency_threshold -1ns is negative",
		"rules[4].adaptive_rate: period -1s is negative",
		"rules[5].adaptive_rate: ",
		"rules[6].lanes.concurrency: give lanes a budget (a rate) or concurrency (slots), not both",
		"rules[7].lanes: lanes need a budget",
		`rules[8].lanes.shares:a: two lanes named "a"`,
		"rules[8].lanes.shares: a lane needs a name",
		"rules[8].lanes.borrow: unknown borrowing Borrowing(9)",
		"rules[8].lanes.reserve: reserve 2 is outside (0, 1]",
		`rules[8].lanes.default_lane: default_lane "z" is not a lane`,
		`rules[8].lanes.lane_key: no match entry has key "q"`,
		"rules[9].lanes.shares: 65 lanes, the most is 64",
		"rules[10].lanes.budget: invalid budget",
		"rules[10].lanes.shares: no lanes",
		`tier_tables.t.tier:x: tier "x" has adaptive_concurrency, adaptive_rate or lanes, which only a rule may have`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("no error %q in:\n%s", w, got)
		}
	}
	if _, err := NewEngine(p); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("NewEngine: %v", err)
	}

	// Zero fields are defaults; StoreDefault is memory, even with Redis.
	ok := &Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{
		rule("conc", Limits{AdaptiveConcurrency: &AdaptiveConcurrency{Min: 1, Max: 5}}),
		rule("rate", Limits{AdaptiveRate: &AdaptiveRate{Min: 1, Max: 5}}),
		{Name: "lanes", Match: []Matcher{{Key: "p"}}, Limits: Limits{Lanes: &Lanes{Concurrency: 4, Lanes: []fair.Lane{{Name: "hi", Share: 1}, {Name: "lo", Share: 1}}}}},
	}}}}
	e, err := NewEngine(ok)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res := check(t, e, request("d", desc("conc", "x"), desc("rate", "y"), desc("p", "unknown")), new(compose.Held))
	if !res.Decision.Allowed || res.Statuses[0].Limit.Rate != 1 || res.Statuses[1].Limit != admit.PerSecond(1) || res.Statuses[2].Limit.Rate != 2 {
		t.Fatalf("%+v", res)
	}
	// The unknown lane went to the last: its decision names it.
	var one Result
	if err := e.Check(context.Background(), request("d", desc("p", "unknown")), new(compose.Held), &one); err != nil || one.Decision.Rule != "lanes/lo" {
		t.Fatalf("%+v, %v", one.Decision, err)
	}
}

// TestEngineExampleAdaptive: testdata/example-adaptive.yaml loads and
// decides as its comments say.
func TestEngineExampleAdaptive(t *testing.T) {
	e, clock := engine(t, fileText(t, "testdata/example-adaptive.yaml"))
	req := request("backends", desc("backend", "orders"), desc("route", "/payments"), desc("priority", "critical"))
	h, res := admitOne(t, e, req)
	if h.Len() != 2 || !h.WantsOutcome() {
		t.Fatalf("Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
	}
	st := res.Statuses
	if st[0].Rule != "per-backend" || st[0].Limit.Rate != 10 || st[1].Rule != "payments" || st[1].Limit != admit.PerSecond(100) ||
		st[2].Rule != "priority" || st[2].Limit != admit.PerSecond(500) {
		t.Fatalf("statuses %+v", st)
	}
	clock.Advance(3 * time.Second)
	h.Finish(false) // slower than 2s: a failure for payments
	if l := limitOf(t, e, request("backends", desc("route", "/payments"))); l != admit.PerSecond(50) {
		t.Fatalf("payments after a slow success: %v", l)
	}
	// A request naming no lane is batch (a fifth of the budget).
	if res := check(t, e, request("backends", desc("priority", "urgent!")), nil); res.Decision.Rule != "priority/batch" || res.Decision.Limit != admit.PerSecond(200) {
		t.Fatalf("unknown lane: %+v", res.Decision)
	}
}
