package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/sharetest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// sharePolicy shares 100/s (sharetest.Budget) among the tenants a, b
// and c of weights 1, 2 and 3 (sharetest.Weights), per route.
const sharePolicy = `
domain: api
rules:
  - name: shared-backend
    match: [route, tenant]
    rate: 100/s
    share: {key: tenant, weights: {b: 2, c: 3}, default: 1}
    store: %s
`

// runShare runs sharetest's scenario through e on clock, in the budget of
// one route, and checks that another route has a budget of its own.
func runShare(t *testing.T, e *Engine, clock *admittest.ManualClock) {
	var res Result
	ask := func(ctx context.Context, route, tenant string, at time.Duration) (bool, error) {
		clock.Set(admittest.At(at))
		err := e.Check(ctx, request("api", desc("route", route, "tenant", tenant)), nil, &res)
		if err == nil && res.Decision.Rule != "shared-backend" {
			t.Fatalf("decided by %q", res.Decision.Rule)
		}
		return res.Decision.Allowed, err
	}
	sharetest.Run(t, func(ctx context.Context, tenant string, at time.Duration) (bool, error) {
		return ask(ctx, "/a", tenant, at)
	})
	if ok, err := ask(context.Background(), "/b", "a", 22*time.Second); !ok || err != nil {
		t.Errorf("another route's budget: %v, %v", ok, err)
	}
	if res.Decision.Limit != admit.PerSecond(100) || res.Decision.Remaining != 99 {
		t.Errorf("another route's budget: %+v", res.Decision)
	}
}

// TestShareRule: a rule whose rate its tenants share by weights (share:)
// gives tenants of weights 1, 2 and 3 at ten times the rate 1:2:3 of it,
// and the share of one that goes idle to the others within a second, in
// memory and in Redis (standalone and a 3-node cluster), as admit serve
// enforces it.
func TestShareRule(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		p, err := Parse("share.yaml", []byte(strings.Replace(sharePolicy, "%s", "local", 1)))
		if err != nil {
			t.Fatal(err)
		}
		clock := admittest.NewManualClock(admittest.Epoch)
		e, err := newEngine(p, clocked(clock))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		runShare(t, e, clock)
	})
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{
		"standalone": func(t testing.TB) redis.UniversalClient { return redistest.Standalone(t).Client(t) },
		"cluster":    func(t testing.TB) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("share.yaml", []byte(strings.Replace(sharePolicy, "%s", "redis", 1)))
			if err != nil {
				t.Fatal(err)
			}
			slowMachine(p)
			clock := admittest.NewManualClock(admittest.Epoch)
			e, err := newEngine(p, withRedis(redisStore(t, client(t), redisstore.Config{}), clock))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			runShare(t, e, clock)
		})
	}
}

// TestShareFallback: a shared rule kept in a Redis that is down falls
// back to this instance's part of the budget, shared in memory.
func TestShareFallback(t *testing.T) {
	srv := redistest.NewStandalone(t)
	client := faultClient(t, srv)
	src := strings.Replace(sharePolicy, "%s", "redis\n    failure: {policy: fallback, local_share: 2, timeout: 1s}", 1)
	p, err := Parse("share.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(admittest.Epoch)
	e, err := newEngine(p, withRedis(redisStore(t, client, redisstore.Config{}), clock))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv.Stop()
	var res Result
	admitted := 0
	for range 100 {
		if err := e.Check(context.Background(), request("api", desc("route", "/", "tenant", "c")), nil, &res); err != nil {
			t.Fatal(err)
		}
		if res.Decision.Allowed {
			admitted++
		}
	}
	if admitted != 50 || !errors.Is(res.Statuses[0].Err, ErrStoreFailed) {
		t.Errorf("Redis down: %d admitted of 100 at once, last status %+v; want the fallback's 50", admitted, res.Statuses[0])
	}
}

// shareRule is a policy of one rule of match [route, tenant] and body.
func shareRule(body string) string {
	return "domain: api\ntier_tables:\n  plans: {default: free, tiers: {free: {rate: 1/s}}}\nrules:\n  - name: r\n    match: [route, tenant]\n" + body
}

// shareBad are share: rules check-config refuses, and the error of each.
var shareBad = []struct{ body, want string }{
	{"    rate: 10/s\n    share: {weights: {acme: -1}}\n", "share.yaml:8:29: rules[0].share.weights.acme: -1 is negative"},
	{"    rate: 10/s\n    share: {weights: {acme: 0}}\n", "share.yaml:8:29: rules[0].share.weights.acme: 0 is too small (the minimum is 1)"},
	{"    rate: 10/s\n    share: {weights: {acme: 2000000}}\n", "share.yaml:8:29: rules[0].share.weights.acme: 2000000 is too large (the maximum is 1048576)"},
	{"    rate: 10/s\n    share: {default: 0}\n", "share.yaml:8:22: rules[0].share.default: 0 is too small (the minimum is 1)"},
	{"    rate: 10/s\n    share: {idle: 2h}\n", "share.yaml:8:19: rules[0].share.idle: idle 2h0m0s is too long (the maximum is 1h)"},
	{"    rate: 10/s\n    share: {color: red}\n", "share.yaml:8:13: rules[0].share.color: unknown field"},
	{"    rate: 10/s\n    share: {key: user}\n", "share.yaml:8:18: rules[0].share.key: no match entry has key \"user\", whose value would be the tenant"},
	{"    quota: 10/day\n    share: {}\n", "share.yaml:8:12: rules[0].share: share divides a rate among tenants and limits by nothing else: a quota is not shared by weights; put the quota in a rule of its own"},
	{"    concurrency: 10\n    share: {}\n", "share.yaml:8:12: rules[0].share: share divides a rate among tenants and limits by nothing else: a concurrency cap is not shared by weights"},
	{"    rate: 10/s\n    quota: 10/day\n    share: {}\n", "rules[0].share: share divides a rate among tenants and limits by nothing else: a quota"},
	{"    tiers: plans\n    share: {}\n", "share.yaml:8:12: rules[0].share: share divides the rule's own rate among tenants, and a rule with tiers has none"},
	{"    rate: 10/s\n    algorithm: fixed_window\n    share: {}\n", "share.yaml:8:16: rules[0].algorithm: a shared rate is decided by gcra, not fixed_window"},
	{"    rate: 10/s\n    store: redis\n    prefetch: auto\n    share: {}\n", "rules[0].prefetch: prefetch on a rule with share"},
	{"    rate: [10/s burst 20, 300/min]\n    share: {}\n", "share.yaml:8:12: rules[0].share: share divides one rate among tenants, and the rule has 2"},
}

// TestShareErrors: check-config's errors for share:, each at its file,
// line and field.
func TestShareErrors(t *testing.T) {
	cases := shareBad
	for _, c := range cases {
		_, err := Parse("share.yaml", []byte(shareRule(c.body)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\ngot  %v\nwant %s", c.body, err, c.want)
		}
	}
	// A Policy built in Go is checked alike.
	p, err := Parse("share.yaml", []byte(shareRule("    rate: 10/s\n    share: {}\n")))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Domains[0].Rules[0]
	r.Share = &Share{Key: "user", Weights: map[string]int64{"x": 0}, Default: -1, Idle: 3 * time.Hour}
	err = p.Validate()
	for _, want := range []string{`share.key: no match entry has key "user"`, `share.weights.x: weight 0 of "x"`, "share.default: default weight -1", "share.idle: idle 3h0m0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want %s", err, want)
		}
	}
}
