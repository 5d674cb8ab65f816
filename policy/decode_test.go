package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/quota"
)

func TestExampleFile(t *testing.T) {
	p, err := parseFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Domains) != 1 {
		t.Fatalf("%d domains", len(p.Domains))
	}
	d := p.Domains[0]
	if d.Name != "api" || len(d.Rules) != 5 || strings.Join(d.Keys, ",") != "remote_address,user,tenant,route,generic_key" {
		t.Fatalf("domain %q, %d rules, keys %v", d.Name, len(d.Rules), d.Keys)
	}
	byName := map[string]*Rule{}
	for _, r := range d.Rules {
		byName[r.Name] = r
	}
	ip := byName["per-ip"]
	if ip.Store != StoreLocal || *ip.Rate != admit.PerSecond(50) || len(ip.Exempt) != 1 || len(ip.Exempt[0].Values) != 2 {
		t.Errorf("per-ip: %+v", ip)
	}
	if u := byName["per-user"]; *u.Rate != admit.PerSecond(10).WithBurst(20) || u.Algorithm != admit.AlgGCRA {
		t.Errorf("per-user: %+v", u)
	}
	tenant := byName["per-tenant"]
	if tenant.Store != "redis" || tenant.Failure != (Failure{Policy: Fallback, Breaker: true, LocalShare: 4}) {
		t.Errorf("per-tenant: store %v, failure %+v", tenant.Store, tenant.Failure)
	}
	plans := tenant.Tiers
	if plans == nil || plans.Default != "free" || len(plans.Tiers) != 3 || plans.Assign["acme"] != "enterprise" {
		t.Fatalf("plans: %+v", plans)
	}
	for name, want := range map[string]struct{ rate, burst, quota, conc int64 }{
		"free":       {10, 20, 1000, 5},
		"standard":   {100, 200, 100_000, 50},
		"enterprise": {1000, 2000, 10_000_000, 500},
	} {
		tier := plans.Tiers[name]
		if *tier.Rate != (admit.Limit{Rate: want.rate, Period: time.Second, Burst: want.burst}) ||
			*tier.Quota != (Quota{Limit: want.quota, Period: quota.Day, WeekStart: time.Monday}) ||
			*tier.Concurrency != (Concurrency{Max: want.conc}) {
			t.Errorf("tier %s: rate %v, quota %+v, concurrency %+v", name, tier.Rate, tier.Quota, tier.Concurrency)
		}
	}
	login := byName["login"]
	if login.Match[0] != (Matcher{Key: "route", Kind: MatchExact, Value: "/login"}) || login.Failure != (Failure{Policy: FailClosed, Breaker: true}) {
		t.Errorf("login: %+v", login)
	}
	if g := byName["global"]; *g.Concurrency != (Concurrency{Max: 10000}) || g.Store != StoreLocal {
		t.Errorf("global: %+v", g)
	}
}

func TestParseYAMLForms(t *testing.T) {
	const src = `
version: 1
defaults:
  store: redis
  algorithm: sliding_window
  failure: breaker/fail_closed
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 10/min, quota: {limit: 100, period: month, timezone: Europe/Paris, week_start: sunday}}
      pro: {extends: free, burst: 20, concurrency: {max: 3, lease: 10s}}
      vip: {unlimited: true}
    assign: {acme: pro, "a.b": vip}
domains:
  - domain: a
    keys: [k, route, tenant]
    overrides: {algorithm: gcra, store: redis, failure: fail_open}
    rules:
      - name: one
        match: k
        rate: 100 per 5 minutes
        store: local
      - name: two
        match: [k, {key: route, prefix: /api/}]
        quota: 5/hour
        replaces: one
      - name: three
        match: [{key: tenant}]
        tiers: plans
        failure: {policy: fallback, local_share: 2, timeout: 10ms, threshold: 2, probe_interval: 2s, retry_after: 3s}
  - domain: b
    shadow: true
    rules:
      - name: four
        match: [{key: k, value: "1.50"}]
        unlimited: true
`
	p, err := parseAdmit("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Domains[0], p.Domains[1]
	if a.Override != (Override{Algorithm: admit.AlgGCRA, Store: "redis", Failure: Failure{}}) {
		t.Errorf("overrides: %+v", a.Override)
	}
	one, two, three := a.Rules[0], a.Rules[1], a.Rules[2]
	if one.Store != StoreLocal || one.Failure != (Failure{}) || one.Algorithm != admit.AlgSlidingWindow ||
		*one.Rate != (admit.Limit{Rate: 100, Period: 5 * time.Minute, Burst: 100}) {
		t.Errorf("one: %+v", one)
	}
	if two.Store != "redis" || two.Failure != (Failure{Policy: FailClosed, Breaker: true}) ||
		len(two.Match) != 2 || two.Match[1] != (Matcher{Key: "route", Kind: MatchPrefix, Value: "/api/"}) ||
		*two.Quota != (Quota{Limit: 5, Period: quota.Hour, WeekStart: time.Monday}) {
		t.Errorf("two: %+v", two)
	}
	if three.Failure != (Failure{Policy: Fallback, LocalShare: 2, Timeout: 10 * time.Millisecond, Threshold: 2, ProbeInterval: 2 * time.Second, RetryAfter: 3 * time.Second}) {
		t.Errorf("three: %+v", three.Failure)
	}
	tiers := three.Tiers.Tiers
	free, pro, vip := tiers["free"], tiers["pro"], tiers["vip"]
	if free.Quota.Location.String() != "Europe/Paris" || free.Quota.WeekStart != time.Sunday || free.Quota.Period != quota.Month {
		t.Errorf("free: %+v", free.Quota)
	}
	if *pro.Rate != (admit.Limit{Rate: 10, Period: time.Minute, Burst: 20}) || pro.Quota != free.Quota ||
		*pro.Concurrency != (Concurrency{Max: 3, Lease: 10 * time.Second}) || *free.Rate != (admit.Limit{Rate: 10, Period: time.Minute, Burst: 10}) {
		t.Errorf("pro extends free: %+v %+v", pro.Rate, pro.Concurrency)
	}
	if !vip.Unlimited || vip.Rate != nil || vip.Quota != nil {
		t.Errorf("vip: %+v", vip)
	}
	if three.Tiers.Assign["a.b"] != "vip" {
		t.Errorf("assign: %v", three.Tiers.Assign)
	}
	four := b.Rules[0]
	if !b.Shadow || !four.Unlimited || four.Match[0].Value != "1.50" || two.Replaces[0] != "one" {
		t.Errorf("four: %+v", four)
	}
	_ = p
}

func TestParseYAMLTierContradiction(t *testing.T) {
	// A tier inheriting a quota while saying unlimited is reported at the
	// tier.
	const src = `
tier_tables:
  plans:
    default: free
    tiers:
      free: {quota: 5/day}
      vip: {extends: free, unlimited: true}
rules:
  - {name: t, match: tenant, tiers: plans}
`
	_, err := parseAdmit("t.yaml", []byte(src))
	want := `t.yaml:7:39: tier_tables.plans.tiers.vip.unlimited: unlimited contradicts the rate, quota or concurrency also given`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// badCases are policy files with what is wrong with them, every error
// expected, in order, with its file, line, column and field.
var badCases = []struct {
	name, src string
	want      []string
}{
	{"version", "version: 2\nrules:\n  - {name: a, match: k, rate: 1/s}\n",
		[]string{`p.yaml:1:10: version: unsupported version 2 (want 1)`}},
	{"malformed", "rules: [\n",
		[]string{`p.yaml:1: malformed YAML: did not find expected node content`}},
	{"tabs", "rules:\n\t- name: a\n",
		[]string{`p.yaml:2: malformed YAML: found character that cannot start any token`}},
	{"empty", "",
		[]string{`p.yaml:1: empty file: want a policy (rules, or domains)`}},
	{"not a mapping", "- a\n- b\n",
		[]string{`p.yaml:1:1: want a mapping, got a list`}},
	{"two documents", "rules:\n  - {name: a, match: k, rate: 1/s}\n---\nrules: []\n",
		[]string{`p.yaml:3:1: a second YAML document: a policy file holds one`}},
	{"no rules", "description: nothing\n",
		[]string{`p.yaml:1:1: no rules: want rules (with domain), or domains`}},
	{"unknown field", "rules:\n  - name: a\n    match: k\n    rate: 10/s\n    algorithm: bogus\n    colour: red\n",
		[]string{
			`p.yaml:5:16: rules[0].algorithm: unknown algorithm "bogus" (want one of gcra, token_bucket, leaky_bucket, fixed_window, sliding_window, sliding_window_approx, sliding_log)`,
			`p.yaml:6:5: rules[0].colour: unknown field "colour" (want one of name, description, match, rate, burst, algorithm, quota, concurrency, adaptive_concurrency, adaptive_rate, lanes, share, tiers, tier_key, unlimited, store, failure, prefetch, delay, shadow, exempt, shared, replaces)`,
		}},
	{"bad rate", "rules:\n  - name: a\n    match: k\n    rate: 10/x\n",
		[]string{`p.yaml:4:11: rules[0].rate: invalid rate "10/x": period "x": want a unit (s, min, h, d, week) or a duration (500ms, 5m, 1h30m)`}},
	{"negative burst, zero rate with a burst, duplicate name", "rules:\n  - name: a\n    match: k\n    rate: 10/s\n    burst: -3\n  - name: a\n    match: j\n    rate: 0/s\n    burst: 5\n",
		[]string{
			`p.yaml:5:12: rules[0].burst: -3 is negative`,
			`p.yaml:6:11: rules[1].name: duplicate rule name "a" (first at p.yaml:2:11)`,
			`p.yaml:9:12: rules[1].burst: burst 5 with rate 0/s: a zero rate denies every request, so it cannot have a burst`,
		}},
	{"overflow, shadowed by an identical match", "domain: api\nrules:\n  - name: a\n    match: k\n    concurrency: 99999999999999999999999\n  - name: b\n    match: k\n    quota: 5/day\n",
		[]string{
			`p.yaml:5:18: rules[0].concurrency: 99999999999999999999999 is too large (the maximum is 9007199254740992)`,
			`p.yaml:7:12: rules[1].match: can never match: rule "a" (at p.yaml:4:12) has the same match`,
		}},
	{"huge burst", "rules:\n  - name: a\n    match: k\n    rate: 10/s\n    algorithm: fixed_window\n    burst: 100000000000000\n",
		[]string{`p.yaml:6:12: rules[0].burst: burst 100000000000000 with rate 10/s: burst × period/rate is longer than 36 years`}},
	{"limits nothing", "rules:\n  - name: a\n    match: k\n",
		[]string{`p.yaml:2:5: rules[0]: limits nothing: give rate, quota, concurrency, adaptive_concurrency, adaptive_rate, lanes, tiers or unlimited`}},
	{"names", "rules:\n  - match: k\n    rate: 1/s\n  - name: \"\"\n    match: j\n    rate: 1/s\n  - name: \"a\\x01b\"\n    match: i\n    rate: 1/s\n",
		[]string{
			`p.yaml:2:5: rules[0]: missing name`,
			`p.yaml:4:11: rules[1].name: must not be empty`,
			`p.yaml:7:11: rules[2].name: name "a\x01b" holds a control character`,
		}},
	{"matches", "rules:\n  - name: a\n    rate: 1/s\n  - name: b\n    match: [{value: x}]\n    rate: 1/s\n  - name: c\n    match: [{key: k, value: x, prefix: y}]\n    rate: 1/s\n  - name: d\n    match: []\n    rate: 1/s\n",
		[]string{
			`p.yaml:2:5: rules[0]: missing match: a rule matches descriptors by their entries`,
			`p.yaml:5:13: rules[1].match[0]: missing key`,
			`p.yaml:8:40: rules[2].match[0].prefix: give value or prefix, not both`,
			`p.yaml:11:12: rules[3].match: missing match: a rule matches descriptors by their entries`,
		}},
	{"contradictions", "rules:\n  - name: a\n    match: k\n    rate: 1/s\n    unlimited: true\n  - name: b\n    match: j\n    rate: 1/s burst 5\n    burst: 6\n  - name: c\n    match: i\n    burst: 6\n  - name: d\n    match: h\n    quota: 5/day\n    algorithm: sliding_log\n",
		[]string{
			`p.yaml:5:16: rules[0].unlimited: unlimited contradicts the rate, quota or concurrency also given`,
			`p.yaml:9:12: rules[1].burst: burst given twice: in the rate "1/s burst 5" and here`,
			`p.yaml:12:12: rules[2].burst: burst without a rate`,
			`p.yaml:16:16: rules[3].algorithm: algorithm without a rate`,
		}},
	{"quotas and caps", "rules:\n  - name: a\n    match: k\n    quota: {limit: 0, period: fortnight}\n  - name: b\n    match: j\n    quota: {limit: 5, period: day, timezone: Mars/Olympus, week_start: someday}\n  - name: c\n    match: i\n    quota: {period: day}\n  - name: d\n    match: h\n    concurrency: {lease: 1s}\n  - name: e\n    match: g\n    concurrency: 0\n  - name: f\n    match: f\n    quota: 0/day\n",
		[]string{
			`p.yaml:4:20: rules[0].quota.limit: 0 is too small (the minimum is 1)`,
			`p.yaml:4:31: rules[0].quota.period: unknown period "fortnight" (want hour, day, week, month or year)`,
			`p.yaml:7:46: rules[1].quota.timezone: unknown time zone "Mars/Olympus"`,
			`p.yaml:7:72: rules[1].quota.week_start: unknown day "someday" (want monday ... sunday)`,
			`p.yaml:10:12: rules[2].quota: a quota needs limit and period (or write it as "1000/day")`,
			`p.yaml:13:18: rules[3].concurrency: a concurrency cap needs max`,
			`p.yaml:16:18: rules[4].concurrency: 0 is too small (the minimum is 1)`,
			`p.yaml:19:12: rules[5].quota: invalid quota "0/day": a quota of 0 admits nothing (want 1 to 2^53; use a rate of 0 to block)`,
		}},
	{"stores and failures", "rules:\n  - name: a\n    match: k\n    rate: 1/s\n    store: disk!\n  - name: b\n    match: j\n    rate: 1/s\n    store: redis\n    failure: explode\n  - name: c\n    match: i\n    rate: 1/s\n    store: redis\n    failure: {breaker: true}\n  - name: d\n    match: h\n    rate: 1/s\n    store: redis\n    failure: {policy: fallback, local_share: 0, timeout: -1s, threshold: 99999999, probe_interval: 0s, retry_after: soon, jitter: 1}\n",
		[]string{
			`p.yaml:5:12: rules[0].store: invalid store name "disk!" (want local, redis, default, or the name of a store the engine is given: lower-case letters, digits, '-' and '_', starting with a letter)`,
			`p.yaml:10:14: rules[1].failure: unknown failure policy "explode" (want fail_open, fail_closed or fallback, optionally after breaker/ (breaker/fallback))`,
			`p.yaml:15:14: rules[2].failure: missing policy (fail_open, fail_closed or fallback)`,
			`p.yaml:20:46: rules[3].failure.local_share: 0 is too small (the minimum is 1)`,
			`p.yaml:20:58: rules[3].failure.timeout: duration -1s is negative`,
			`p.yaml:20:74: rules[3].failure.threshold: 99999999 is too large (the maximum is 1048576)`,
			`p.yaml:20:100: rules[3].failure.probe_interval: duration 0s is too short (the minimum is 1ms)`,
			`p.yaml:20:117: rules[3].failure.retry_after: want a duration (50ms, 30s, 1m), got "soon"`,
			`p.yaml:20:123: rules[3].failure.jitter: unknown field "jitter" (want one of policy, breaker, local_share, timeout, threshold, probe_interval, retry_after)`,
		}},
	{"failure of a local rule, local share without fallback", "rules:\n  - name: loc\n    match: m\n    rate: 1/s\n    failure: fail_closed\n  - name: share\n    match: n\n    rate: 1/s\n    store: redis\n    failure: {policy: fail_open, local_share: 3}\n",
		[]string{
			`p.yaml:5:14: rules[0].failure: a failure policy applies to rules kept in Redis (store: redis), and this one is local (the default store)`,
			`p.yaml:10:47: rules[1].failure.local_share: local_share applies to the fallback policy, and the policy is fail_open`,
		}},
	{"never matches", "rules:\n  - name: p1\n    match: [{key: route, prefix: /api}]\n    rate: 1/s\n  - name: p2\n    match: [{key: route, prefix: /api/v1}]\n    rate: 1/s\n  - name: ex\n    match: [{key: route, value: /x}]\n    rate: 1/s\n    exempt: {route: [/x]}\n  - name: ip\n    match: [{key: addr, value: 10.1.2.3}]\n    rate: 1/s\n    exempt: {addr: [10.0.0.0/8]}\n",
		[]string{
			`p.yaml:6:12: rules[1].match: can never match: values starting with "/api/v1" are taken first by the prefix "/api" of rule "p1" (put the longer prefix first)`,
			`p.yaml:11:14: rules[2].exempt.route: the rule matches only route "/x", which is exempt: it can never apply`,
			`p.yaml:15:14: rules[3].exempt.addr: the rule matches only addr "10.1.2.3", which is exempt: it can never apply`,
		}},
	{"replaces", "rules:\n  - name: a\n    match: k\n    rate: 1/s\n    replaces: [nobody, a]\n",
		[]string{
			`p.yaml:5:16: rules[0].replaces[0]: no rule of domain "default" is named "nobody"`,
			`p.yaml:5:24: rules[0].replaces[1]: a rule cannot replace itself`,
		}},
	{"keys", "domain: api\nkeys: [remote_address, user]\nrules:\n  - name: a\n    match: tenant\n    rate: 1/s\n  - name: b\n    match: [remote_address, {key: route, value: /x}]\n    rate: 1/s\n    exempt: {tenant: [x], remote_address: []}\n",
		[]string{
			`p.yaml:5:12: rules[0].match: key "tenant" is not among the domain's keys (remote_address, user): no descriptor has it, so the rule can never match`,
			`p.yaml:8:29: rules[1].match[1]: key "route" is not among the domain's keys (remote_address, user): no descriptor has it, so the rule can never match`,
			`p.yaml:10:14: rules[1].exempt.tenant: no match entry has key "tenant": the exemption can never apply`,
			`p.yaml:10:27: rules[1].exempt.remote_address: no values`,
		}},
	{"tier tables", "tier_tables:\n  plans:\n    tiers:\n      free: {}\n      gold: {rate: 1/s, unlimited: true}\n    assign:\n      acme: platinum\n      x: {}\nrules:\n  - name: t\n    match: tenant\n    tiers: plans\n    rate: 1/s\n    algorithm: gcra\n    tier_key: user\n  - name: u\n    match: user\n    rate: 1/s\n    tier_key: user\n",
		[]string{
			`p.yaml:2:3: tier_tables.plans.default: missing default: the tier of values the table does not assign`,
			`p.yaml:4:7: tier_tables.plans.tiers.free: tier "free" limits nothing: give rate, quota, concurrency or unlimited`,
			`p.yaml:5:36: tier_tables.plans.tiers.gold.unlimited: unlimited contradicts the rate, quota or concurrency also given`,
			`p.yaml:7:13: tier_tables.plans.assign.acme: tier "platinum" is not defined (tiers: free, gold)`,
			`p.yaml:8:10: tier_tables.plans.assign.x: want a string, got a mapping`,
			`p.yaml:13:11: rules[0].rate: rate contradicts tiers: the tiers of the table give the rule's limits`,
			`p.yaml:14:16: rules[0].algorithm: algorithm applies to the rule's own rate; the tiers of a table set theirs`,
			`p.yaml:19:15: rules[1].tier_key: tier_key without tiers`,
		}},
	{"tier references", "tier_tables:\n  plans:\n    default: gold\n    tiers:\n      free: {rate: 1/s}\n      std: {extends: pro, rate: 2/s}\n      pro: {extends: std}\n      x: {extends: nothing, rate: 1/s}\n    assign:\n      acme: platinum\nrules:\n  - name: t\n    match: tenant\n    tiers: plan\n  - name: u\n    match: [tenant, route]\n    tiers: plans\n",
		[]string{
			`p.yaml:3:14: tier_tables.plans.default: default tier "gold" is not defined (tiers: free, pro, std, x)`,
			`p.yaml:7:22: tier_tables.plans.tiers.pro.extends: cyclic extends: std -> pro -> std`,
			`p.yaml:8:20: tier_tables.plans.tiers.x.extends: tier "nothing" is not defined in this table`,
			`p.yaml:10:13: tier_tables.plans.assign.acme: tier "platinum" is not defined (tiers: free, pro, std, x)`,
			`p.yaml:14:12: rules[0].tiers: unknown tier table "plan" (tier_tables: plans)`,
		}},
	{"domains", "domains:\n  - domain: x\n    rules:\n      - {name: a, match: k, rate: 1/s}\n  - domain: x\n    rules:\n      - {name: a, match: k, rate: 1/s}\n  - rules: []\n",
		[]string{
			`p.yaml:5:13: domains[1].domain: duplicate domain "x" (first at p.yaml:2:13)`,
			`p.yaml:7:16: domains[1].rules[0].name: duplicate rule name "a" (first at p.yaml:4:16)`,
			`p.yaml:8:5: domains[2]: missing domain`,
		}},
	{"both forms", "domain: api\ndomains:\n  - domain: x\n    rules: []\n",
		[]string{`p.yaml:1:9: domain: give either domains, or domain and rules, not both`}},
	{"wrong types", "shadow: yes\nrules:\n  - name: a\n    match: k\n    rate: 1/s\n    shadow: 1\n    shared: \"true\"\n  - name: [b]\n    match: {key: {x: 1}}\n    rate: 5\n",
		[]string{
			`p.yaml:1:9: shadow: want true or false, got the string "yes"`,
			`p.yaml:6:13: rules[0].shadow: want true or false, got a number (1)`,
			`p.yaml:7:13: rules[0].shared: want true or false, got the string "true"`,
			`p.yaml:8:11: rules[1].name: want a string, got a list`,
			`p.yaml:9:18: rules[1].match.key: want a string, got a mapping`,
			`p.yaml:10:11: rules[1].rate: invalid rate "5": want RATE/PERIOD, as in "100/s" or "100 per 5 minutes"`,
		}},
	{"duplicate key", "rules:\n  - name: a\n    name: b\n    match: k\n    rate: 1/s\n",
		[]string{`p.yaml:3:5: rules[0].name: duplicate key (first at line 2)`}},
	{"rules not a list", "rules:\n  name: a\n",
		[]string{`p.yaml:2:3: rules: want a list, got a mapping`}},
	{"merge keys", "rules:\n  - name: a\n    match: k\n    rate: 1/s\n  - <<: {name: c}\n    match: k\n    rate: 1/s\n",
		[]string{
			`p.yaml:5:5: rules[1]: merge keys (<<) are not supported: write the fields, or use an alias for a whole value`,
			`p.yaml:5:5: rules[1]: missing name`,
			`p.yaml:6:12: rules[1].match: can never match: rule "a" (at p.yaml:3:12) has the same match`,
		}},
	{"alias containing itself", "rules:\n  - &r\n    name: x\n    match: k\n    rate: 1/s\n    exempt: {k: [*r]}\n",
		[]string{`p.yaml:6:18: rules[0].exempt.k[0]: alias *r refers to a node that contains it`}},
}

func TestParseYAMLBad(t *testing.T) {
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseAdmit("p.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("loaded %+v", p)
			}
			if p != nil {
				t.Errorf("a policy with the error")
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("%v is not ErrInvalidPolicy", err)
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			var es Errors
			if !errors.As(err, &es) || len(es) != len(tc.want) {
				t.Fatalf("errors.As Errors: %v", es)
			}
			var e *Error
			if !errors.As(err, &e) || e != es[0] {
				t.Errorf("errors.As *Error: %v", e)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := parseAdmit("policy.yaml", []byte("rules:\n  - name: a\n    match: k\n    rate: 1/s\n  - name: b\n    match: j\n    rate: -1/s\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if e.File != "policy.yaml" || e.Line != 7 || e.Column != 11 || e.Field != "rules[1].rate" || !strings.HasPrefix(e.Msg, `invalid rate "-1/s"`) {
		t.Errorf("%+v", e)
	}
	if (&Error{Msg: "m"}).Error() != "m" || (&Error{Field: "f", Msg: "m"}).Error() != "f: m" || (&Error{File: "x", Msg: "m"}).Error() != "x: m" {
		t.Error("Error formats")
	}
}

// TestAliases: aliases are allowed (for a failure policy used by several
// rules), and expansion beyond the budget stops the walk at once.
func TestAliases(t *testing.T) {
	const ok = `
rules:
  - name: a
    match: k
    rate: 1/s
    store: redis
    failure: &f {policy: fallback, local_share: 2}
  - name: b
    match: j
    rate: 1/s
    store: redis
    failure: *f
`
	p, err := parseAdmit("a.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if p.Domains[0].Rules[1].Failure != (Failure{Policy: Fallback, LocalShare: 2}) {
		t.Errorf("%+v", p.Domains[0].Rules[1].Failure)
	}

	// The classic billion laughs: the walk never expands aliases the
	// schema does not descend into.
	var laughs strings.Builder
	laughs.WriteString("description: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	laughs.WriteString("tier_tables:\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&laughs, "  t%d: &%c [%s]\n", i, 'a'+i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*%c,", 'a'+i-1), 9), ","))
	}
	laughs.WriteString("rules:\n  - {name: x, match: k, rate: 1/s, exempt: {k: *i}}\n")
	_, err = parseAdmit("laughs.yaml", []byte(laughs.String()))
	if err == nil || !strings.Contains(err.Error(), `laughs.yaml:1:14: description: want a string, got a list`) {
		t.Fatalf("billion laughs: %v", err)
	}

	// Aliases where the schema descends: 3000 rules, each matching the
	// same 3000 entries. 9 million nodes: the budget refuses the file.
	var quad strings.Builder
	quad.WriteString("rules:\n  - &r {name: r, match: &m [")
	for i := range 3000 {
		if i > 0 {
			quad.WriteString(",")
		}
		fmt.Fprintf(&quad, "k%d", i)
	}
	quad.WriteString("], rate: 1/s}\n")
	for range 3000 {
		quad.WriteString("  - *r\n")
	}
	_, err = parseAdmit("quad.yaml", []byte(quad.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to too many nodes") {
		t.Fatalf("alias expansion: %v", err)
	}
}

func TestFileSize(t *testing.T) {
	big := []byte("description: \"" + strings.Repeat("x", maxFileSize) + "\"\n")
	_, err := parseAdmit("big.yaml", big)
	if err == nil || !strings.Contains(err.Error(), "larger than the maximum") {
		t.Errorf("%v", err)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFile(path); err == nil || !strings.Contains(err.Error(), "larger than the maximum") {
		t.Errorf("ParseFile: %v", err)
	}
	if _, err := parseFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseFormat(t *testing.T) {
	if _, err := Parse("x.yaml", []byte("x: 1\n")); !errors.Is(err, policyfmt.ErrUnknown) || !errors.Is(err, ErrInvalidPolicy) || !strings.HasPrefix(err.Error(), "x.yaml:1:1: unknown file format: ") {
		t.Errorf("Parse of neither format: %v", err)
	}
	if _, err := Parse("x.yaml", []byte("a: [\n")); !errors.Is(err, ErrInvalidPolicy) || !strings.HasPrefix(err.Error(), "x.yaml:1: malformed YAML") {
		t.Errorf("Parse of bad YAML: %v", err)
	}
}

// FuzzParseYAML checks that the loader never panics, that every error it
// (and Parse) reports names the file and a line, and that what it loads
// is valid and builds an engine.
func FuzzParseYAML(f *testing.F) {
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, tc := range badCases {
		f.Add([]byte(tc.src))
	}
	data, err = os.ReadFile("testdata/example-adaptive.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, tc := range adaptiveBad {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte("rules:\n  - {name: a, match: [k, p], lanes: {concurrency: 7, shares: {x: 33.33%, y: 66.67%}, lane_key: p, borrow: any, reserve: 0.25, default_lane: x}}\n  - {name: b, match: k, adaptive_rate: {min: 2/m, max: 9/m, step: 1/m, factor: 0.9}, adaptive_concurrency: {min: 1, max: 3, queue_size: 0, window_time: 0s}}\n"))
	f.Add([]byte("rules:\n  - {name: a, match: [k, {key: j, prefix: x}], rate: 1/s, exempt: {k: [10.0.0.0/8]}, replaces: b}\n  - {name: b, match: k, quota: 5/day}\n"))
	for _, tc := range positionCases {
		f.Add([]byte(tc.src))
	}
	for _, tc := range prefetchBad {
		f.Add([]byte(tc.src))
	}
	for _, tc := range ratesBad {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte("tier_tables:\n  p:\n    default: a\n    tiers:\n      a: {rate: [10/s burst 20, 300/min]}\n      b: {extends: a, rate: [1/s, 30/h]}\nrules:\n  - {name: t, match: k, tiers: p}\n  - {name: u, match: j, rate: [3/s, 5/min, 100/day], algorithm: sliding_window}\n"))
	f.Add([]byte("defaults: {store: redis, prefetch: 3}\ndomain: d\noverrides: {prefetch: auto}\nrules:\n  - {name: a, match: k, rate: 5/s, prefetch: auto}\n  - {name: b, match: j, rate: 2/s}\n  - {name: c, match: l, rate: 2/s, prefetch: \"off\"}\n"))
	f.Add([]byte(delayPolicy))
	f.Add([]byte("rules:\n  - {name: a, match: k, rate: 1/s burst 3, algorithm: leaky_bucket, delay: 2s}\n  - {name: b, match: j, quota: 5/day, delay: 1s}\n"))
	for _, c := range shareBad {
		f.Add([]byte(shareRule(c.body)))
	}
	f.Add([]byte(shareRule("    rate: 10/s burst 4\n    share: {key: route, weights: {a: 3, b: 1048576}, default: 2, idle: 10ms}\n    shared: true\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Parse("f.yaml", data); err != nil {
			checkPositions(t, err)
		}
		p, err := parseAdmit("f.yaml", data)
		if err != nil {
			checkPositions(t, err)
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("loaded an invalid policy: %v", err)
		}
		localOnly(p)
		e, err := newEngine(p, Config{})
		if err != nil {
			t.Fatalf("NewEngine: %v", err)
		}
		defer e.Close()
		// Each rule's own descriptor is checked, its grants finished as a
		// failure, then checked again: never a panic, never an error but
		// too many keys.
		for _, d := range p.Domains {
			for _, r := range d.Rules {
				var ds Descriptor
				for _, m := range r.Match {
					v := m.Value // MatchExact
					if m.Kind != MatchExact {
						v += "v"
					}
					ds.Entries = append(ds.Entries, Entry{Key: m.Key, Value: v})
				}
				req := &Request{Domain: d.Name, Hits: 1, Descriptors: []Descriptor{ds}}
				for range 2 {
					var h compose.Held
					var res Result
					if err := e.Check(context.Background(), req, &h, &res); err != nil && !(errors.Is(err, admit.ErrTooManyKeys) && strings.Contains(err.Error(), "policy: too many keys for an adaptive limit")) {
						t.Fatalf("Check %+v: %v", ds, err)
					}
					h.Finish(true)
				}
			}
		}
	})
}

// FuzzSplitLane: the key of a lanes layer splits into the lane and the
// budget's key it was made of.
func FuzzSplitLane(f *testing.F) {
	f.Add("critical", "4:acme")
	f.Add("", "")
	f.Add("5:x", "1:")
	f.Fuzz(func(t *testing.T, lane, budget string) {
		key := string(appendValue(nil, lane)) + budget
		if l, b := splitLane(key); l != lane || b != budget {
			t.Fatalf("splitLane(%q) = %q, %q; want %q, %q", key, l, b, lane, budget)
		}
		splitLane(budget) // any string: no panic
	})
}

// localOnly moves every rule of p to memory (where nothing prefetches).
func localOnly(p *Policy) *Policy {
	for _, d := range p.Domains {
		d.Override.Store, d.Override.Failure, d.Override.Prefetch = StoreLocal, Failure{}, 0
		for _, r := range d.Rules {
			r.Store, r.Failure, r.Prefetch = StoreLocal, Failure{}, 0
		}
	}
	return p
}
