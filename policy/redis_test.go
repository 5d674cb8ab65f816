package policy

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/quota"
	"github.com/admit-go/admit/redisstore"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // the tests that kill Redis would fill the log with refused dials
	redistest.Main(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// redisStore returns a Store on client with a key prefix of its own,
// closed by t.Cleanup. Keys live an hour at least, since the tests decide
// at instants of a manual clock (withRedis with the clock).
func redisStore(t testing.TB, client redis.UniversalClient, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	cfg.Prefix, cfg.MinTTL = redistest.Prefix(t), time.Hour
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRedisExample runs the reference design's multi-tenant API (the
// policy of testdata/example.yaml) with its tenant and route layers in a
// real Redis, shared by two engines: two instances of a service.
func TestRedisExample(t *testing.T) {
	srv := redistest.Standalone(t)
	store := redisStore(t, srv.Client(t), redisstore.Config{})
	p, err := parseFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	slowMachine(p)
	clock := admittest.NewManualClock(t0)
	newEngine := func() *Engine {
		e, err := newEngine(p, withRedis(store, clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := newEngine(), newEngine()
	ctx := context.Background()
	// Each request from another address and user, so that only the
	// tenant's plan (free: 10/s, burst 20) can refuse them.
	req := func(i int, tenant, route string) *Request {
		return request("api",
			desc("remote_address", fmt.Sprintf("203.0.113.%d", i)),
			desc("user", fmt.Sprint("user-", i)),
			desc("tenant", tenant),
			desc("route", route),
			desc("generic_key", "global"))
	}
	var h compose.Held
	for i := range 20 {
		e := a
		if i%2 == 1 {
			e = b // the other instance: the plan is shared through Redis
		}
		var res Result
		if err := e.Check(ctx, req(i, "newco", "/orders"), &h, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Decision.Allowed {
			t.Fatalf("request %d: %+v", i, res.Decision)
		}
		h.Release()
		// The most restrictive of the plan's limits: 4 slots of 5 left
		// (each request releases its own), or the rate's burst.
		if st := res.Statuses[2]; st.Tier != "free" || st.Rule != "per-tenant" || st.Decision.Remaining != min(4, int64(19-i)) {
			t.Fatalf("request %d, tenant status %+v", i, st)
		}
	}
	var res Result
	if err := b.Check(ctx, req(20, "newco", "/orders"), &h, &res); err != nil {
		t.Fatal(err)
	}
	want(t, "21st of the free plan", res.Decision, false, "per-tenant/free/rate", 0)
	if res.Decision.RetryAfter != 100*time.Millisecond || res.Statuses[2].Code != CodeOverLimit || res.Statuses[0].Decision.Remaining != 50 {
		t.Errorf("refusal %+v, statuses %+v", res.Decision, res.Statuses)
	}
	// The enterprise tenant: its own plan, and its concurrency cap in
	// Redis holds slots until released.
	for i := range 3 {
		if err := a.Check(ctx, req(100+i, "acme", "/orders"), &h, &res); err != nil || !res.Decision.Allowed {
			t.Fatalf("acme %d: %v %+v", i, err, res.Decision)
		}
		if st := res.Statuses[2]; st.Tier != "enterprise" {
			t.Fatalf("acme tier %+v", st)
		}
	}
	if h.Len() != 6 {
		t.Errorf("held %d, want 3 requests x (tenant + global)", h.Len())
	}
	// The quota is counted in Redis: 20 requests of newco today (the
	// refused one gave its event back).
	l, err := store.Quota(redisstore.QuotaConfig{Options: admit.Options{Name: "per-tenant/free/quota"}, Limit: 1000, Period: quota.Day})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, admit.Request{Key: "5:newco", N: 0, At: clock.Now()}); err != nil || d.Remaining != 980 {
		t.Errorf("newco's quota in Redis: %+v, %v", d, err)
	}
	h.Release()
	// /login: 500/s in Redis, shared by both instances.
	for i := range 500 {
		e := a
		if i%3 == 0 {
			e = b
		}
		if err := e.Check(ctx, req(1000+i, "acme", "/login"), &h, &res); err != nil || !res.Decision.Allowed {
			t.Fatalf("login %d: %v %+v", i, err, res.Decision)
		}
		h.Release()
	}
	if err := b.Check(ctx, req(2000, "acme", "/login"), &h, &res); err != nil {
		t.Fatal(err)
	}
	want(t, "501st login", res.Decision, false, "login", 0)
	clock.Advance(2 * time.Millisecond)
	if err := a.Check(ctx, req(2001, "acme", "/login"), &h, &res); err != nil || !res.Decision.Allowed {
		t.Errorf("login after 2ms: %v %+v", err, res.Decision)
	}
	h.Release()
}

// slowMachine gives p's rules a failure timeout of 5s instead of the
// default 50ms: on a loaded machine (CI runs packages in parallel, under
// the race detector) a slow answer of Redis must not be taken for a
// failure and decided by the failure policy.
func slowMachine(p *Policy) {
	for _, d := range p.Domains {
		if d.Override.Store == "redis" || d.envoy {
			d.Override.Failure.Timeout = 5 * time.Second
		}
		for _, r := range d.Rules {
			if r.Store == "redis" || d.envoy {
				r.Failure.Timeout = 5 * time.Second
			}
		}
	}
}

// faultClient returns a client of srv that fails fast once srv is down.
func faultClient(t testing.TB, srv *redistest.Server) *redis.Client {
	o := srv.Options()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, 2*time.Second, 2*time.Second
	o.MaxRetries = -1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisFailurePolicies kills Redis under rules of each failure policy
// and checks that each decides as its policy says, then that they use
// Redis again once it is back.
func TestRedisFailurePolicies(t *testing.T) {
	srv := redistest.NewStandalone(t)
	// Generous timeouts: a loaded machine (CI runs packages in parallel)
	// must not turn a slow answer into a failure. A dead Redis still fails
	// at once (connection refused).
	store := redisStore(t, faultClient(t, srv), redisstore.Config{Timeout: 5 * time.Second})
	p, err := parseAdmit("faults.yaml", []byte(`
domain: api
defaults:
  store: redis
rules:
  - {name: open, match: open, rate: 4/min, failure: {policy: fail_open, timeout: 5s}}
  - {name: closed, match: closed, rate: 4/min, failure: {policy: fail_closed, retry_after: 2s, timeout: 5s}}
  - {name: fallback, match: fallback, rate: 4/min, failure: {policy: fallback, local_share: 2, timeout: 5s}}
  - {name: breaker, match: breaker, rate: 4/min, failure: {policy: fallback, local_share: 2, breaker: true, threshold: 1, probe_interval: 1s, timeout: 5s}}
  - {name: quota, match: quota, quota: 4/day, failure: {policy: fallback, local_share: 2, timeout: 5s}}
  - {name: slots, match: slots, concurrency: 4, failure: {policy: fallback, local_share: 2, timeout: 5s}}
  - {name: slots-closed, match: slots-closed, concurrency: 4, failure: {policy: fail_closed, timeout: 5s}}
  - {name: local, match: local, rate: 1/min, store: local}
`))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0)
	e, err := newEngine(p, withRedis(store, clock))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var h compose.Held
	defer h.Release()
	// Each status says whether the failure policy decided it.
	var failed []string
	decide := func(key string) admit.Decision {
		t.Helper()
		var res Result
		if err := e.Check(ctx, request("api", desc(key, "k")), &h, &res); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		switch err := res.Statuses[0].Err; {
		case errors.Is(err, ErrStoreFailed):
			failed = append(failed, key)
		case err != nil:
			t.Fatalf("%s: status error %v", key, err)
		}
		return res.Decision
	}
	wantFailed := func(what string, keys ...string) {
		t.Helper()
		if fmt.Sprint(failed) != fmt.Sprint(keys) {
			t.Errorf("%s: statuses decided by a failure policy (ErrStoreFailed): %q, want %q", what, failed, keys)
		}
		failed = nil
	}
	// Redis up: every rule decides in Redis.
	for _, key := range []string{"open", "closed", "fallback", "breaker", "quota"} {
		want(t, key+" with Redis", decide(key), true, key, 3)
	}
	want(t, "slots with Redis", decide("slots"), true, "slots", 3)
	wantFailed("Redis up")

	srv.Kill()
	want(t, "open", decide("open"), true, "open/fail-open", admit.Unlimited.Rate)
	d := decide("closed")
	want(t, "closed", d, false, "closed/fail-closed", 0)
	if d.RetryAfter != 2*time.Second {
		t.Errorf("fail_closed RetryAfter %v", d.RetryAfter)
	}
	// Fallback: a local share of half the limit, 2 per minute.
	want(t, "fallback 1", decide("fallback"), true, "fallback/fallback", 1)
	want(t, "fallback 2", decide("fallback"), true, "fallback/fallback", 0)
	want(t, "fallback 3", decide("fallback"), false, "fallback/fallback", 0)
	want(t, "quota", decide("quota"), true, "quota/fallback", 1)
	want(t, "slots", decide("slots"), true, "slots/fallback", 1)
	want(t, "slots 2", decide("slots"), true, "slots/fallback", 0)
	want(t, "slots 3", decide("slots"), false, "slots/fallback", 0)
	want(t, "slots-closed", decide("slots-closed"), false, "slots-closed/fail-closed", 0)
	// The breaker opens at the first failure, and then decides without
	// calling Redis until its probe.
	want(t, "breaker 1", decide("breaker"), true, "breaker/fallback", 1)
	want(t, "breaker 2", decide("breaker"), true, "breaker/fallback", 0)
	want(t, "breaker 3", decide("breaker"), false, "breaker/fallback", 0)
	// Rules in memory do not care.
	want(t, "local", decide("local"), true, "local", 0)
	wantFailed("Redis down", "open", "closed", "fallback", "fallback", "fallback", "quota", "slots", "slots", "slots",
		"slots-closed", "breaker", "breaker", "breaker")

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Redis is back, empty (a restarted server keeps nothing): the rules
	// decide in Redis again.
	var back admit.Decision
	for range 50 {
		if back = decide("open"); back.Rule == "open" {
			break
		}
		time.Sleep(20 * time.Millisecond) // the client reconnecting, not a refill
	}
	want(t, "open, Redis back", back, true, "open", 3)
	failed = nil // the failures of the client reconnecting
	want(t, "closed, Redis back", decide("closed"), true, "closed", 3)
	clock.Advance(time.Second) // the breaker's probe interval
	want(t, "breaker, Redis back", decide("breaker"), true, "breaker", 3)
	decide("quota")
	decide("slots")
	wantFailed("Redis back")
}

// TestRedisNeedsStore: a policy of storeDefault rules (Envoy's) is kept in
// Redis when the engine has a store.
func TestRedisDefaultStore(t *testing.T) {
	srv := redistest.Standalone(t)
	store := redisStore(t, srv.Client(t), redisstore.Config{})
	p, err := parseEnvoy("e.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	slowMachine(p)
	clock := admittest.NewManualClock(t0)
	var engines []*Engine
	for range 2 {
		e, err := newEngine(p, func() Config { c := withRedis(store, clock); c.KeyPrefix = "envoy:"; return c }())
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		engines = append(engines, e)
	}
	res := check(t, engines[0], request("d", desc("k", "v")), nil)
	want(t, "first", res.Decision, true, "d.k", 1)
	res = check(t, engines[1], request("d", desc("k", "v")), nil)
	want(t, "second, other engine", res.Decision, true, "d.k", 0)
	res = check(t, engines[0], request("d", desc("k", "v")), nil)
	want(t, "third", res.Decision, false, "d.k", 0)
}
