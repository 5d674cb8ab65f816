package promlimit_test

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/promlimit"
	"github.com/admit-go/admit/redisstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// TestRedisGuard wires the Observer to a Store, a Limiter and a Guard on a
// real Redis, kills Redis and restarts it: the store's calls, its errors,
// the decisions of the store and of the policy, and the switches all show.
func TestRedisGuard(t *testing.T) {
	srv := redistest.NewStandalone(t)
	// Fail fast on a dead server (the settings redisstore recommends).
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	t.Cleanup(func() { client.Close() })
	obs, reg := newObserver(t, promlimit.Config{})
	store, err := redisstore.New(client, redisstore.Config{Options: admit.Options{Name: "redis", Observer: obs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	lim, err := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.PerSecond(100)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := compose.NewGuard(lim, compose.GuardConfig{Options: admit.Options{Name: "guard", Observer: obs}, Policy: compose.FailOpen, Threshold: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	key := redistest.Prefix(t) + "client"
	allow := func() {
		t.Helper()
		d, err := g.Allow(t.Context(), admit.Request{Key: key, N: 1})
		if err != nil || !d.Allowed {
			t.Fatalf("Allow = %+v, %v; want an admission", d, err)
		}
	}

	for range 3 {
		allow()
	}
	if got := value(t, reg, "admit_decisions_total", "limiter", "api", "rule", "api", "decision", "allowed"); got != 3 {
		t.Errorf("decisions of the store = %v, want 3", got)
	}
	if got := value(t, reg, "admit_store_keys_total", "limiter", "redis", "op", "decide"); got != 3 {
		t.Errorf("store keys = %v, want 3", got)
	}
	if got := value(t, reg, "admit_store_errors_total", "limiter", "redis", "op", "decide"); got != 0 {
		t.Errorf("store errors while Redis is up = %v, want 0", got)
	}
	calls := histogramCount(t, reg, "admit_store_duration_seconds", "redis", "decide")
	if calls != 3 {
		t.Errorf("store calls timed = %d, want 3", calls)
	}

	srv.Kill()
	allow() // fails: the Guard switches to FailOpen at once (threshold 1)
	if got := value(t, reg, "admit_fallback_active", "limiter", "guard"); got != 1 {
		t.Errorf("fallback_active with Redis down = %v, want 1", got)
	}
	if got := value(t, reg, "admit_store_errors_total", "limiter", "redis", "op", "decide"); got < 1 {
		t.Errorf("store errors with Redis down = %v, want at least 1", got)
	}
	if got := value(t, reg, "admit_decisions_total", "limiter", "guard", "rule", "guard/fail-open", "decision", "allowed"); got != 1 {
		t.Errorf("decisions of the policy = %v, want 1", got)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The client reconnects on one of the next calls.
	for i := 0; value(t, reg, "admit_fallback_active", "limiter", "guard") != 0; i++ {
		if i == 100 {
			t.Fatal("fallback_active still 1 after 100 calls with Redis back")
		}
		time.Sleep(20 * time.Millisecond)
		allow()
	}
	if got := value(t, reg, "admit_fallback_changes_total", "limiter", "guard"); got != 2 {
		t.Errorf("fallback_changes_total = %v, want 2", got)
	}
}

// histogramCount returns the sample count of the histogram series of the
// named metric for limiter and op.
func histogramCount(t *testing.T, reg prometheus.Gatherer, name, limiter, op string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var l, o string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "limiter":
					l = lp.GetValue()
				case "op":
					o = lp.GetValue()
				}
			}
			if l == limiter && o == op {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	t.Fatalf("no series %s{limiter=%q,op=%q}", name, limiter, op)
	return 0
}
