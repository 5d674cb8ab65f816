package policy

// prefetch: in this package's format (a rule's, defaults', overrides'),
// what Validate and NewEngine refuse, and engines prefetching from a
// shared store kept in memory (the Redis tests are in redis_test.go).

import (
	"errors"
	"strings"
	"testing"

	"github.com/admit-go/admit"
)

func TestParsePrefetch(t *testing.T) {
	const src = `
defaults:
  store: redis
  prefetch: 30
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 10/s burst 20}
      pro: {rate: 100/s}
      vip: {unlimited: true}
domains:
  - domain: a
    rules:
      - {name: inherits, match: k, rate: 100/s}
      - {name: lowered, match: j, rate: 10/s}
      - {name: own, match: l, rate: 100/s, prefetch: 7}
      - {name: auto, match: m, rate: 100/s, algorithm: sliding_window, prefetch: AUTO}
      - {name: off, match: n, rate: 100/s, prefetch: off}
      - {name: quota, match: o, quota: 5/day}
      - {name: log, match: p, rate: 5/s, algorithm: sliding_log}
      - {name: local, match: q, rate: 5/s, store: local}
      - {name: tiers, match: r, tiers: plans}
      - {name: mixed, match: s, rate: 5/s, concurrency: 3}
  - domain: b
    overrides: {prefetch: auto}
    rules:
      - {name: b1, match: k, rate: 1/s, prefetch: 1}
  - domain: c
    overrides: {algorithm: sliding_log}
    rules:
      - {name: c1, match: k, rate: 1/s}
  - domain: d
    overrides: {store: redis, prefetch: "off"}
    rules:
      - {name: d1, match: k, rate: 1/s}
`
	p, err := parseAdmit("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range p.Domains {
		got["override of "+d.Name] = d.Override.Prefetch
		for _, r := range d.Rules {
			got[r.Name] = r.Prefetch
		}
	}
	want := map[string]int64{
		"inherits": 30, "lowered": 10, "own": 7, "auto": prefetchAuto, "off": 0,
		"quota": 0, "log": 0, "local": 0, "tiers": 20, "mixed": 0, "b1": 1, "c1": 1, "d1": 1,
		"override of a": 30, "override of b": prefetchAuto, "override of c": 0, "override of d": 0,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: prefetch %d, want %d", name, got[name], w)
		}
	}
	// An inherited prefetch is reported at defaults.prefetch.
	var inherits *Rule
	for _, r := range p.Domains[0].Rules {
		if r.Name == "inherits" {
			inherits = r
		}
	}
	if path, pos := inherits.src.at("prefetch"); path != "defaults.prefetch" || pos.Line != 4 {
		t.Errorf("inherited prefetch at %s %v", path, pos)
	}
}

// prefetchBad are files whose prefetch is wrong, with their errors.
var prefetchBad = []struct {
	name, src string
	want      []string
}{
	{"sliding log", "rules:\n  - {name: a, match: k, rate: 5/s, algorithm: sliding_log, store: redis, prefetch: auto}\n",
		[]string{`p.yaml:2:84: rules[0].prefetch: prefetch on a rule with a sliding log: each of its events expires on its own, which a block cannot carry (keep it strict, or use sliding_window)`}},
	{"quota", "rules:\n  - name: a\n    match: k\n    quota: 1000/day\n    store: redis\n    prefetch: 10\n",
		[]string{`p.yaml:6:15: rules[0].prefetch: prefetch on a rule with a quota: quotas stay strict (their counts must be durable), so every request would still go to the store; put the quota in a rule of its own`}},
	{"rate and quota", "rules:\n  - {name: a, match: k, rate: 5/s, quota: 9/day, store: redis, prefetch: auto}\n",
		[]string{`p.yaml:2:74: rules[0].prefetch: prefetch on a rule with a quota: quotas stay strict (their counts must be durable), so every request would still go to the store; put the quota in a rule of its own`}},
	{"concurrency", "rules:\n  - {name: a, match: k, concurrency: 5, store: redis, prefetch: auto}\n",
		[]string{`p.yaml:2:65: rules[0].prefetch: prefetch on a rule with a concurrency cap: its slots are leased, not prefetched, so every request would still go to the store; put the cap in a rule of its own`}},
	{"local store", "rules:\n  - {name: a, match: k, rate: 5/s, store: local, prefetch: 2}\n",
		[]string{`p.yaml:2:60: rules[0].prefetch: prefetch without a shared store: the rule is kept in memory (store: local), where every check is local already; prefetch takes blocks of a limit a fleet shares (store: redis)`}},
	{"default store", "rules:\n  - {name: a, match: k, rate: 5/s, prefetch: 2}\n",
		[]string{`p.yaml:2:46: rules[0].prefetch: prefetch without a shared store: the rule is kept in memory (store: local), where every check is local already; prefetch takes blocks of a limit a fleet shares (store: redis)`}},
	{"adaptive", "rules:\n  - {name: a, match: k, adaptive_rate: {min: 1/s, max: 9/s}, prefetch: 2}\n",
		[]string{`p.yaml:2:72: rules[0].prefetch: prefetch without a shared store: the rule is kept in memory (store: local), where every check is local already; prefetch takes blocks of a limit a fleet shares (store: redis)`}},
	{"larger than the burst", "rules:\n  - {name: a, match: k, rate: 100/s burst 10, store: redis, prefetch: 11}\n",
		[]string{`p.yaml:2:71: rules[0].prefetch: a block of 11 events is larger than the burst, 10: a block holds at most the burst (or write auto)`}},
	{"larger than a tier's burst", "tier_tables:\n  t:\n    default: a\n    tiers: {a: {rate: 5/s}, b: {rate: 50/s}}\nrules:\n  - {name: a, match: k, tiers: t, store: redis, prefetch: 6}\n",
		[]string{`p.yaml:6:59: rules[0].prefetch: a block of 6 events is larger than the burst, 5 of tier "a": a block holds at most the burst (or write auto)`}},
	{"a tier with a quota", "tier_tables:\n  t:\n    default: a\n    tiers: {a: {rate: 5/s}, b: {rate: 50/s, quota: 9/day}}\nrules:\n  - {name: a, match: k, tiers: t, store: redis, prefetch: auto}\n",
		[]string{`p.yaml:6:59: rules[0].prefetch: prefetch on a rule with tier "b" has a quota: quotas stay strict (their counts must be durable), so every request would still go to the store; put the quota in a rule of its own`}},
	{"unlimited", "rules:\n  - {name: a, match: k, unlimited: true, store: redis, prefetch: auto}\n",
		[]string{`p.yaml:2:66: rules[0].prefetch: prefetch on a rule with no limit (unlimited): there is nothing to take`}},
	{"zero, negative, fraction, words, boolean, too large, list", "defaults: {store: redis}\nrules:\n" +
		"  - {name: a, match: k, rate: 5/s, prefetch: 0}\n" +
		"  - {name: b, match: j, rate: 5/s, prefetch: -4}\n" +
		"  - {name: c, match: l, rate: 5/s, prefetch: 2.5}\n" +
		"  - {name: d, match: m, rate: 5/s, prefetch: lots}\n" +
		"  - {name: e, match: n, rate: 5/s, prefetch: true}\n" +
		"  - {name: f, match: o, rate: 5/s, prefetch: 99999999999999999999}\n" +
		"  - {name: g, match: p, rate: 5/s, prefetch: [auto]}\n",
		[]string{
			`p.yaml:3:46: rules[0].prefetch: a block of 0 events: want a block size of at least 1, auto or off`,
			`p.yaml:4:46: rules[1].prefetch: a block of -4 events: want a block size of at least 1, auto or off`,
			`p.yaml:5:46: rules[2].prefetch: want auto, off or a block size (a whole number of events), got a number (2.5)`,
			`p.yaml:6:46: rules[3].prefetch: want auto, off or a block size (a whole number of events), got the string "lots"`,
			`p.yaml:7:46: rules[4].prefetch: want auto, off or a block size (a whole number of events), got a boolean (true)`,
			`p.yaml:8:46: rules[5].prefetch: a block of 99999999999999999999 events is too large (the maximum is the burst)`,
			`p.yaml:9:46: rules[6].prefetch: want auto, off or a block size, got a list`,
		}},
	{"defaults of nothing", "defaults: {prefetch: auto}\nrules:\n  - {name: a, match: k, rate: 5/s}\n",
		[]string{`p.yaml:1:22: defaults.prefetch: prefetch applies to no rule: it takes blocks of rates kept in a shared store (store: redis), and no rule (nor inline limit) has one`}},
	{"defaults, bad", "defaults: {prefetch: 0}\nrules:\n  - {name: a, match: k, rate: 5/s}\n",
		[]string{`p.yaml:1:22: defaults.prefetch: a block of 0 events: want a block size of at least 1, auto or off`}},
	{"overrides", "domains:\n  - domain: a\n    overrides: {prefetch: auto}\n    rules: [{name: a, match: k, rate: 5/s}]\n" +
		"  - domain: b\n    overrides: {store: redis, algorithm: sliding_log, prefetch: 3}\n    rules: [{name: b, match: k, rate: 5/s}]\n" +
		"  - domain: c\n    overrides: {store: redis, prefetch: -1}\n    rules: [{name: c, match: k, rate: 5/s}]\n",
		[]string{
			`p.yaml:3:27: domains[0].overrides.prefetch: prefetch without a shared store: inline limits are kept in memory (store: local); prefetch takes blocks of a limit a fleet shares (store: redis)`,
			`p.yaml:6:65: domains[1].overrides.prefetch: prefetch of inline limits by a sliding log: each of its events expires on its own, which a block cannot carry (keep it strict, or use sliding_window)`,
			`p.yaml:9:41: domains[2].overrides.prefetch: a block of -1 events: want a block size of at least 1, auto or off`,
		}},
}

func TestParsePrefetchBad(t *testing.T) {
	for _, tc := range prefetchBad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseAdmit("p.yaml", []byte(tc.src))
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("%v is not ErrInvalidPolicy", err)
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestValidatePrefetch: a policy built in Go is checked as a file is.
func TestValidatePrefetch(t *testing.T) {
	rate := admit.PerSecond(10)
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{Store: StoreLocal, Limits: Limits{Rate: &rate}}, "rules[0].prefetch: prefetch without a shared store"},
		{Rule{Store: "redis", Limits: Limits{Rate: &rate, Algorithm: admit.AlgSlidingLog}}, "rules[0].prefetch: prefetch on a rule with a sliding log"},
		{Rule{Store: "redis", Limits: Limits{Quota: &Quota{Limit: 5}}}, "rules[0].prefetch: prefetch on a rule with a quota"},
		{Rule{Store: "", Limits: Limits{Rate: &rate}, Prefetch: 11}, "rules[0].prefetch: a block of 11 events is larger than the burst, 10"},
	} {
		r := tc.r
		r.Name, r.Match = "a", []Matcher{{Key: "k"}}
		if r.Prefetch == 0 {
			r.Prefetch = prefetchAuto
		}
		err := (&Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{&r}}}}).Validate()
		if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", r, err, tc.want)
		}
	}
	r := Rule{Name: "a", Match: []Matcher{{Key: "k"}}, Store: "", Limits: Limits{Rate: &rate}, Prefetch: 10}
	if err := (&Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{&r}}}}).Validate(); err != nil {
		t.Errorf("a block of the burst, in the default store: %v", err)
	}
	d := &Domain{Name: "d", Override: Override{Store: StoreLocal, Prefetch: 3}}
	if err := (&Policy{Domains: []*Domain{d}}).Validate(); err == nil || !strings.Contains(err.Error(), "overrides.prefetch: prefetch without a shared store") {
		t.Errorf("inline limits prefetched in memory: %v", err)
	}
}
