package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
)

const resetPolicy = `domain: api
rules:
  - name: per-user
    match: user
    rate: 2/min
  - name: daily
    match: tenant
    quota: 3/day
  - name: jobs
    match: job
    concurrency: 1
  - name: shared
    match: route
    rate: 1/hour
    store: redis
    failure: fail_closed
`

// TestEngineReset: Reset gives a key its whole rate and quota back, for
// the key asked only; concurrency caps are left alone; bad requests and
// a closed engine are errors.
func TestEngineReset(t *testing.T) {
	srv := redistest.Standalone(t)
	store := redisStore(t, srv.Client(t), redisstore.Config{})
	p, err := Parse("p.yaml", []byte(resetPolicy))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0)
	mkEngine := func() *Engine {
		e, err := newEngine(p, withRedis(store, clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := mkEngine(), mkEngine()
	ctx := context.Background()
	allowed := func(e *Engine, d Descriptor) bool {
		t.Helper()
		var h compose.Held
		defer h.Release()
		return check(t, e, request("api", d), &h).Decision.Allowed
	}
	exhaust := func(e *Engine, d Descriptor) {
		t.Helper()
		for range 5 {
			allowed(e, d)
		}
		if allowed(e, d) {
			t.Fatalf("%v: still admitted", d)
		}
	}
	alice, bob := desc("user", "alice"), desc("user", "bob")
	tenant, route := desc("tenant", "acme"), desc("route", "/export")
	for _, d := range []Descriptor{alice, bob, tenant} {
		exhaust(a, d)
	}
	exhaust(a, route)
	if allowed(b, route) {
		t.Fatal("the other instance admitted a route exhausted in Redis")
	}

	n, err := a.Reset(ctx, request("api", alice, tenant, route, desc("job", "etl"), desc("nothing", "here")))
	if err != nil || n != 3 {
		t.Fatalf("Reset: %d limits, %v; want 3 (rate, quota, the Redis rate)", n, err)
	}
	got := []bool{allowed(a, alice), allowed(a, alice), allowed(a, alice)}
	if !got[0] || !got[1] || got[2] {
		t.Errorf("alice after the reset: %v, want her 2 per minute again", got)
	}
	if allowed(a, bob) {
		t.Error("bob, not reset, was admitted")
	}
	for i := range 3 {
		if !allowed(a, tenant) {
			t.Errorf("the quota after the reset: event %d refused", i+1)
		}
	}
	// The limit kept in Redis is reset for every instance.
	if !allowed(b, route) {
		t.Error("the other instance did not see the route reset in Redis")
	}

	if n, err := a.Reset(ctx, request("elsewhere", alice)); n != 0 || err != nil {
		t.Errorf("an unknown domain: %d, %v", n, err)
	}
	if _, err := a.Reset(ctx, request("api", Descriptor{})); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("an empty descriptor: %v", err)
	}
	c := mkEngine()
	c.Close()
	if _, err := c.Reset(ctx, request("api", alice)); !errors.Is(err, admit.ErrClosed) || !strings.Contains(err.Error(), "policy: engine closed") {
		t.Errorf("closed: %v", err)
	}

	// Redis down: the limit kept there is not reset, and the error says so.
	down := redistest.NewStandalone(t)
	dstore := redisStore(t, faultClient(t, down), redisstore.Config{})
	d, err := newEngine(p, withRedis(dstore, clock))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	down.Kill()
	if n, err := d.Reset(ctx, request("api", alice, route)); n != 1 || err == nil {
		t.Errorf("with Redis down: %d limits, %v; want 1 and an error", n, err)
	}
}
