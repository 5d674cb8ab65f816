package policy

// Tests of the engine's adaptive limits and lanes: their decisions, what they learn, reloads, keys and shadow mode.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

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
	if st := res.Statuses[0]; st.Rule != "backend" || st.Decision.Kind != admit.KindRate || st.Decision.Limit != admit.PerSecond(40) {
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
			if st := res.Statuses[0]; st.Decision.Kind != admit.KindConcurrency || st.Rule != "db" {
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
				if res.Statuses[0].Rule != "api" || res.Statuses[0].Decision.Kind != admit.KindRate {
					t.Fatalf("refusal of %s: %+v", prio, res.Statuses[0])
				}
				return n
			}
			n++
		}
	}
	res := check(t, e, request("api", desc("route", "/api", "priority", "batch")), nil)
	want(t, "batch", res.Decision, true, "api/batch", 1)
	if res.Statuses[0].Decision.Limit != admit.PerSecond(2) {
		t.Fatalf("batch's share %v, want 2/s", res.Statuses[0].Decision.Limit)
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
	old, err := newEngine(p, Config{})
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
	e, err := newEngine(p2, Config{Previous: old})
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
	e3, err := newEngine(p3, Config{Previous: e})
	if err != nil {
		t.Fatal(err)
	}
	defer e3.Close()
	if l := limitOf(t, e3, request("api", desc("backend", "a"))); l != admit.PerSecond(30) {
		t.Fatalf("a changed rule kept its state: %v", l)
	}
}

// TestEngineAdaptiveKeys: per-value adaptive limits hold at most
// Config.MaxKeys keys; a new key takes the place of an idle one, and fails
// with ErrTooManyKeys when none is idle.
func TestEngineAdaptiveKeys(t *testing.T) {
	e, clock := engine(t, `
domain: api
rules:
  - {name: db, match: db, adaptive_concurrency: {min: 1, max: 10}}
  - {name: rate, match: backend, adaptive_rate: {min: 1/s, max: 10/s}}
  - {name: lanes, match: [tenant, prio], lanes: {budget: 2/s, shares: {hi: 1, lo: 1}}}
`, Config{MaxKeys: 2})
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
	if !errors.Is(err, admit.ErrTooManyKeys) || !strings.Contains(err.Error(), "policy: too many keys for an adaptive limit: 2 keys, none idle") || res.Decision.Allowed {
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
	if err := e.Check(context.Background(), request("api", desc("backend", "c")), nil, &res); !errors.Is(err, admit.ErrTooManyKeys) || !strings.Contains(err.Error(), "policy: too many keys for an adaptive limit") {
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
	if err := e.Check(context.Background(), request("api", desc("tenant", "c", "prio", "hi")), nil, &res); !errors.Is(err, admit.ErrTooManyKeys) || !strings.Contains(err.Error(), "policy: too many keys for an adaptive limit") {
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
	if st[0].Rule != "per-backend" || st[0].Decision.Limit.Rate != 10 || st[1].Rule != "payments" || st[1].Decision.Limit != admit.PerSecond(100) ||
		st[2].Rule != "priority" || st[2].Decision.Limit != admit.PerSecond(500) {
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
