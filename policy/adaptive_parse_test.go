package policy

// Tests of loading and validating adaptive limits and lanes.

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

// TestParseAdaptive: the fields of the new kinds, and their defaults.
func TestParseAdaptive(t *testing.T) {
	p, err := parseAdmit("p.yaml", []byte(`
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
	if _, err := newEngine(p, Config{}); err != nil {
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
			`p.yaml:5:12: rules[0].store: adaptive_rate is kept in memory only (an adaptive limit learns from the requests of this instance, and a shared store holds no such state), and so is its rule: remove store: redis, or put the limits to keep in redis in a rule of their own`,
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
			p, err := parseAdmit("p.yaml", []byte(tc.src))
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
	many := make([]fair.Lane, 65) // one more than the 64 fair.Lane allows
	for i := range many {
		many[i] = fair.Lane{Name: fmt.Sprint("l", i), Share: 1}
	}
	rule := func(name string, l Limits) *Rule {
		return &Rule{Name: name, Match: []Matcher{{Key: name}}, Limits: l}
	}
	redis := rule("redis", Limits{AdaptiveRate: &AdaptiveRate{Min: 1, Max: 2}})
	redis.Store = "redis"
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
	if _, err := newEngine(p, Config{}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("NewEngine: %v", err)
	}

	// Zero fields are defaults; storeDefault is memory, even with Redis.
	ok := &Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{
		rule("conc", Limits{AdaptiveConcurrency: &AdaptiveConcurrency{Min: 1, Max: 5}}),
		rule("rate", Limits{AdaptiveRate: &AdaptiveRate{Min: 1, Max: 5}}),
		{Name: "lanes", Match: []Matcher{{Key: "p"}}, Limits: Limits{Lanes: &Lanes{Concurrency: 4, Lanes: []fair.Lane{{Name: "hi", Share: 1}, {Name: "lo", Share: 1}}}}},
	}}}}
	e, err := newEngine(ok, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res := check(t, e, request("d", desc("conc", "x"), desc("rate", "y"), desc("p", "unknown")), new(compose.Held))
	if !res.Decision.Allowed || res.Statuses[0].Decision.Limit.Rate != 1 || res.Statuses[1].Decision.Limit != admit.PerSecond(1) || res.Statuses[2].Decision.Limit.Rate != 2 {
		t.Fatalf("%+v", res)
	}
	// The unknown lane went to the last: its decision names it.
	var one Result
	if err := e.Check(context.Background(), request("d", desc("p", "unknown")), new(compose.Held), &one); err != nil || one.Decision.Rule != "lanes/lo" {
		t.Fatalf("%+v, %v", one.Decision, err)
	}
}
