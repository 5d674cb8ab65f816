package policy

// Tests of building engines: NewEngine's errors, Config.Previous, policies built in Go, goroutines.

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
)

func TestPrevious(t *testing.T) {
	const v1 = `
domain: api
rules:
  - {name: users, match: user, rate: 3/min}
  - {name: tenants, match: tenant, rate: 3/min}
  - {name: slots, match: job, concurrency: 2}
`
	// v2 changes tenants' limit and adds a rule.
	const v2 = `
domain: api
rules:
  - {name: users, match: user, rate: 3/min}
  - {name: tenants, match: tenant, rate: 4/min}
  - {name: slots, match: job, concurrency: 2}
  - {name: routes, match: route, rate: 1/min}
`
	clock := admittest.NewManualClock(t0)
	load := func(src string, cfg Config) *Engine {
		p, err := parseAdmit("v.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clock = clock
		e, err := newEngine(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	old := load(v1, Config{})
	var h compose.Held
	req := request("api", desc("user", "u"), desc("tenant", "t"), desc("job", "j"))
	check(t, old, req, &h)
	check(t, old, req, &h)
	l := admit.PerMinute(9)
	ov := desc("x", "y")
	ov.Limit = &l
	check(t, old, request("api", ov), nil)

	next := load(v2, Config{Previous: old})
	res := check(t, next, request("api", desc("user", "u")), nil)
	want(t, "users kept its state", res.Decision, true, "users", 0)
	res = check(t, next, request("api", desc("tenant", "t")), nil)
	want(t, "tenants changed: fresh", res.Decision, true, "tenants", 3)
	res = check(t, next, request("api", desc("job", "j")), &h)
	want(t, "slots kept its two in flight", res.Decision, false, "slots", 0)
	res = check(t, next, request("api", ov), nil)
	want(t, "the inline limit kept its state", res.Decision, true, "api/override/9/min", 7)
	// The old engine still works, sharing the reused limiters.
	res = check(t, old, request("api", desc("user", "u")), nil)
	want(t, "old engine", res.Decision, false, "users", 0)
	h.Release()
	res = check(t, next, request("api", desc("job", "j")), &h)
	want(t, "slots released", res.Decision, true, "slots", 1)
	h.Release()
	old.Close()
	res = check(t, next, request("api", ov), nil)
	want(t, "after the old engine's Close", res.Decision, true, "api/override/9/min", 6)

	// A different Config: nothing is reused.
	other := load(v2, Config{Previous: next, KeyPrefix: "x"})
	res = check(t, other, request("api", desc("user", "u")), nil)
	want(t, "another prefix: fresh", res.Decision, true, "users", 2)
	// A nil previous is no previous.
	if _, err := newEngine(&Policy{}, Config{Previous: nil}); err != nil {
		t.Error(err)
	}
}

func TestNewEngineErrors(t *testing.T) {
	p, err := parseFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = newEngine(p, Config{})
	if !errors.Is(err, ErrNoStore) || !errors.Is(err, ErrInvalidPolicy) ||
		!strings.HasPrefix(err.Error(), `testdata/example.yaml:65:12: rules[2].store: policy: no such store: the rule is kept in store "redis", which the engine was not given (it has local; see Config.Backends)`) {
		t.Errorf("redis rules without a store: %v", err)
	}
	// Any name is a store; one the engine was not given is an error at
	// the rule's store field, whatever the stores it has.
	disk, err := Parse("p.yaml", []byte("rules:\n  - name: a\n    match: k\n    rate: 1/s\n    store: disk\n  - name: b\n    match: j\n    rate: 1/s\n    store: redis\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newEngine(disk, withRedis(nil, nil))
	if !errors.Is(err, ErrNoStore) || err.Error() != `p.yaml:5:12: rules[0].store: policy: no such store: the rule is kept in store "disk", which the engine was not given (it has local, redis; see Config.Backends)` {
		t.Errorf("a store the engine lacks: %v", err)
	}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxKeys: -1}, "MaxKeys -1"},
		{Config{KeyPrefix: strings.Repeat("x", 300)}, "KeyPrefix: 300 bytes"},
		{Config{DefaultStore: "Redis"}, `DefaultStore "Redis"`},
		{Config{Backends: map[string]Backend{"a b": testMemory{}}}, `Backends["a b"]`},
		{Config{Backends: map[string]Backend{"redis": nil}}, `Backends["redis"] is nil`},
	} {
		_, err := newEngine(&Policy{}, c.cfg)
		if !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "policy: "+c.field) {
			t.Errorf("bad Config %+v: %v, want ErrInvalidConfig naming %s", c.cfg, err, c.field)
		}
	}
	bad := &Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{{Name: "r", Match: []Matcher{{Key: "k"}}, Limits: Limits{Rate: &admit.Limit{Rate: -1}}}}}}}
	if _, err := newEngine(bad, Config{}); !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "domains[0].rules[0].rate: invalid rate") {
		t.Errorf("invalid policy: %v", err)
	}
	if e, err := newEngine(nil, Config{}); err != nil || e.HasDomain("") {
		t.Errorf("nil policy: %v", err)
	}
}

// TestEngineGoroutines: an engine starts no goroutine, so closing it
// leaves none behind.
func TestEngineGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 10 {
		e, _ := engine(t, fileText(t, "testdata/example.yaml"))
		var h compose.Held
		check(t, e, request("api", desc("generic_key", "global")), &h)
		h.Release()
		e.Close()
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
}

// TestPolicyBuiltInGo: a Policy built in Go is checked like a loaded one,
// with paths for positions.
func TestPolicyBuiltInGo(t *testing.T) {
	rate := admit.PerSecond(5)
	table := &TierTable{Name: "plans", Default: "gold", Tiers: map[string]*Tier{"free": {Name: "free", Limits: Limits{Rate: &rate}}}, Assign: map[string]string{"a": "free"}}
	p := &Policy{Domains: []*Domain{
		{Name: "d", Keys: []string{"k", "k", ""}, Rules: []*Rule{
			{Name: "r1", Match: []Matcher{{Key: "k"}}, Limits: Limits{Rate: &rate}},
			{Name: "r1", Match: []Matcher{{Key: "k", Kind: MatchExact, Value: "v"}}, Limits: Limits{Rate: &rate}, Store: StoreLocal, Failure: Failure{Policy: FailClosed}},
			{Name: "r3", Match: []Matcher{{Key: "k"}}, Tiers: table},
			nil,
		}},
		nil,
		{Name: "d", Override: Override{Algorithm: 99}},
	}}
	err := p.Validate()
	wantErrs := []string{
		`domains[0].keys[1]: duplicate key "k"`,
		`domains[0].keys[2]: empty key`,
		`domains[0].rules[1].name: duplicate rule name "r1" (first at )`,
		`domains[0].rules[1].failure: a failure policy applies to rules kept in Redis (store: redis), and this one is local`,
		`tier_tables.plans.default: default tier "gold" is not defined (tiers: free)`,
		`domains[0].rules[3]: nil rule`,
		`domains[0].rules[2].match: can never match: rule "r1" (at ) has the same match`,
		`domains[1]: nil domain`,
		`domains[2].domain: duplicate domain "d" (first at )`,
		`domains[2].overrides.algorithm: unknown algorithm Algorithm(99)`,
	}
	if err == nil || err.Error() != strings.Join(wantErrs, "\n") {
		t.Errorf("got:\n%v\nwant:\n%s", err, strings.Join(wantErrs, "\n"))
	}
}
