package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
)

// A policy in this package's format: per-address limits, a tenant's plan
// from a tier table, and a cap on requests in flight, checked at explicit
// instants of a manual clock.
func ExampleParse() {
	p, err := policy.Parse("policy.yaml", []byte(`
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 2/min, concurrency: 1}
      pro:  {rate: 100/min}
    assign: {acme: pro}
domain: api
rules:
  - {name: per-ip, match: remote_address, rate: 10/s}
  - {name: per-tenant, match: tenant, tiers: plans}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := admittest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := policy.NewEngine(p, policy.Config{
		Options:  admit.Options{Clock: clock},
		Backends: map[string]policy.Backend{policy.StoreLocal: backends.Memory()},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()

	check := func(tenant string) {
		req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{
			{Entries: []policy.Entry{{Key: "remote_address", Value: "203.0.113.7"}}},
			{Entries: []policy.Entry{{Key: "tenant", Value: tenant}}},
		}}
		var h compose.Held // the slots of concurrency caps, until the request is done
		defer h.Release()
		var res policy.Result
		if err := e.Check(context.Background(), req, &h, &res); err != nil {
			fmt.Println(err)
			return
		}
		st := res.Statuses[1]
		fmt.Printf("%s (%s): allowed %v by %s, retry after %v\n", tenant, st.Tier, res.Decision.Allowed, res.Decision.Rule, res.Decision.RetryAfter)
	}
	check("newco")
	check("newco")
	check("newco")
	check("acme")
	clock.Advance(30 * time.Second)
	check("newco")
	// Output:
	// newco (free): allowed true by per-tenant/free/concurrency, retry after 0s
	// newco (free): allowed true by per-tenant/free/rate, retry after 0s
	// newco (free): allowed false by per-tenant/free/rate, retry after 30s
	// acme (pro): allowed true by per-ip, retry after 0s
	// newco (free): allowed true by per-tenant/free/rate, retry after 0s
}

// A configuration of envoyproxy/ratelimit loads unchanged, with its
// meaning: fixed windows per unit, the most specific match first, and one
// status per descriptor, as Envoy's rate-limit service answers.
func ExampleParse_envoy() {
	p, err := policy.Parse("config.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: remote_address
    value: 198.51.100.9
    rate_limit: {unit: second, requests_per_unit: 0}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := admittest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC))
	e, err := policy.NewEngine(p, policy.Config{
		Options:  admit.Options{Clock: clock},
		Backends: map[string]policy.Backend{policy.StoreLocal: backends.Memory()},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	for _, addr := range []string{"203.0.113.7", "203.0.113.7", "203.0.113.7", "198.51.100.9"} {
		req := &policy.Request{Domain: "edge", Hits: 1, Descriptors: []policy.Descriptor{
			{Entries: []policy.Entry{{Key: "remote_address", Value: addr}}},
		}}
		var res policy.Result
		if err := e.Check(context.Background(), req, nil, &res); err != nil {
			fmt.Println(err)
			return
		}
		st := res.Statuses[0]
		fmt.Printf("%s: %v, %v, %d remaining, reset in %v (%s)\n", addr, st.Code, st.Decision.Limit, st.Decision.Remaining, st.Decision.ResetAfter, st.Rule)
	}
	// Output:
	// 203.0.113.7: OK, 2/min, 1 remaining, reset in 30s (edge.remote_address)
	// 203.0.113.7: OK, 2/min, 0 remaining, reset in 30s (edge.remote_address)
	// 203.0.113.7: OVER_LIMIT, 2/min, 0 remaining, reset in 30s (edge.remote_address)
	// 198.51.100.9: OVER_LIMIT, 0/s, 0 remaining, reset in 0s (edge.remote_address_198.51.100.9)
}

// Two teams keep their descriptors of one domain in files of their own,
// merged as envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG merges them.
func ExampleMergeDomains() {
	search, err := policy.Parse("search.yaml", []byte(`
domain: edge
descriptors:
  - key: path
    value: /search
    rate_limit: {unit: second, requests_per_unit: 10}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	login, err := policy.Parse("login.yaml", []byte(`
domain: edge
descriptors:
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 5}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := policy.Merge(search, login); err != nil {
		fmt.Println("Merge:", err)
	}
	p, err := policy.MergeDomains(search, login)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range p.Domains {
		for _, r := range d.Rules {
			fmt.Printf("%s: %s\n", d.Name, r.Name)
		}
	}
	// Output:
	// Merge: login.yaml:2:9: domain: duplicate domain "edge" (first at search.yaml:2:9)
	// edge: edge.path_/search
	// edge: edge.path_/login
}

// Errors name the file, line, column and field of every problem.
func ExampleErrors() {
	_, err := policy.Parse("policy.yaml", []byte(`
rules:
  - name: per-ip
    match: remote_address
    rate: 10/s
    burst: -5
  - name: per-ip
    match: user
    rate: 5 per fortnight
`))
	fmt.Println(err)
	// Output:
	// policy.yaml:6:12: rules[0].burst: -5 is negative
	// policy.yaml:7:11: rules[1].name: duplicate rule name "per-ip" (first at policy.yaml:3:11)
	// policy.yaml:9:11: rules[1].rate: invalid rate "5 per fortnight": period "fortnight": want a unit (s, min, h, d, week) or a duration (500ms, 5m, 1h30m)
}

// A reload keeps the state of the rules that did not change.
func ExampleConfig_previous() {
	load := func(rate string, old *policy.Engine, clock *admittest.ManualClock) *policy.Engine {
		p, err := policy.Parse("policy.yaml", []byte("rules:\n  - {name: users, match: user, rate: 3/min}\n  - {name: ips, match: ip, rate: "+rate+"}\n"))
		if err != nil {
			panic(err)
		}
		e, err := policy.NewEngine(p, policy.Config{Options: admit.Options{Clock: clock}, Backends: map[string]policy.Backend{policy.StoreLocal: backends.Memory()}, Previous: old})
		if err != nil {
			panic(err)
		}
		return e
	}
	clock := admittest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	remaining := func(e *policy.Engine, key string) int64 {
		req := &policy.Request{Domain: policy.DefaultDomain, Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: key, Value: "x"}}}}}
		var res policy.Result
		if err := e.Check(context.Background(), req, nil, &res); err != nil {
			panic(err)
		}
		return res.Decision.Remaining
	}
	v1 := load("3/min", nil, clock)
	fmt.Println("v1:", remaining(v1, "user"), remaining(v1, "ip"))
	v2 := load("5/min", v1, clock) // ips changed, users did not
	v1.Close()
	fmt.Println("v2:", remaining(v2, "user"), remaining(v2, "ip"))
	// Output:
	// v1: 2 2
	// v2: 1 4
}
