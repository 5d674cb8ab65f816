package promlimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/promlimit"
	"github.com/admit-go/admit/quota"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The tests of this file wire the Observer to the module's limiters and
// check the series their events produce.

func TestKeyedLimiter(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.PerSecond(2), Shards: 1, MaxKeys: 2, ForgetAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := admittest.Epoch
	for _, key := range []string{"alice", "alice", "alice", "bob"} {
		if _, err := lim.Allow(ctx, admit.Request{Key: key, N: 1, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	// A third key at the cap of 2, none idle: one is evicted under pressure.
	if _, err := lim.Allow(ctx, admit.Request{Key: "carol", N: 1, At: t0}); err != nil {
		t.Fatal(err)
	}
	// A second later every key is full again, so idle: a new key makes
	// the limiter forget them.
	if _, err := lim.Allow(ctx, admit.Request{Key: "dave", N: 1, At: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="allowed",kind="rate",limiter="api",rule="api"} 5
admit_decisions_total{decision="denied",kind="rate",limiter="api",rule="api"} 1
`, "admit_decisions_total")
	if got := value(t, reg, "admit_evictions_total", "limiter", "api", "reason", "pressure"); got != 1 {
		t.Errorf("evictions under pressure = %v, want 1", got)
	}
	if got := value(t, reg, "admit_evictions_total", "limiter", "api", "reason", "idle"); got < 1 {
		t.Errorf("evictions of idle keys = %v, want at least 1", got)
	}
	if got, want := value(t, reg, "admit_keys_tracked", "limiter", "api"), float64(lim.Len()); got != want {
		t.Errorf("keys_tracked = %v, want Len() = %v", got, want)
	}
}

func TestConcurrencyLimiter(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	lim, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "jobs", Observer: obs}, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, d, err := lim.TryAcquire(ctx, admit.Request{Key: "report", N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("first TryAcquire: %+v, %v", d, err)
	}
	if _, d, err := lim.TryAcquire(ctx, admit.Request{Key: "report", N: 1}); err != nil || d.Allowed {
		t.Fatalf("second TryAcquire: %+v, %v; want a denial", d, err)
	}
	p.Release()
	p, d, err = lim.TryAcquire(ctx, admit.Request{Key: "report", N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("TryAcquire after Release: %+v, %v", d, err)
	}
	p.Release()
	// The limiter reports the keys it holds when their number has moved
	// by 16.
	for i := range 20 {
		if _, d, err := lim.TryAcquire(ctx, admit.Request{Key: fmt.Sprint("job-", i), N: 1}); err != nil || !d.Allowed {
			t.Fatalf("TryAcquire of a new key: %+v, %v", d, err)
		}
	}
	if got := value(t, reg, "admit_keys_tracked", "limiter", "jobs"); got < 16 || got > 20 {
		t.Errorf("keys_tracked with 20 keys held = %v, want 16 to 20", got)
	}
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="allowed",kind="concurrency",limiter="jobs",rule="jobs"} 22
admit_decisions_total{decision="denied",kind="concurrency",limiter="jobs",rule="jobs"} 1
`, "admit_decisions_total")
}

func TestQuota(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	q, err := quota.New(quota.Config{Options: admit.Options{Name: "daily", Observer: obs}, Limit: 2, Period: quota.Day, Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t0 := admittest.Epoch
	for range 3 {
		if _, err := q.Allow(ctx, admit.Request{Key: "tenant", N: 1, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="allowed",kind="quota",limiter="daily",rule="daily"} 2
admit_decisions_total{decision="denied",kind="quota",limiter="daily",rule="daily"} 1
`, "admit_decisions_total")
}

// TestKeysTrackedFromStart: admit_keys_tracked has a series for each
// limiter from its creation, at 0, and follows the keys as they are added,
// before any eviction, so that their growth can be watched before the cap.
func TestKeysTrackedFromStart(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.PerHour(10), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	q, err := quota.New(quota.Config{Options: admit.Options{Name: "daily", Observer: obs}, Limit: 10, Period: quota.Day})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "jobs", Observer: obs}, Max: 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"api", "daily", "jobs"} {
		if got := value(t, reg, "admit_keys_tracked", "limiter", name); got != 0 {
			t.Errorf("keys_tracked of %s before any decision = %v, want 0", name, got)
		}
	}
	for i := 1; i <= 100; i++ {
		key := fmt.Sprint("client-", i)
		if _, err := lim.Allow(ctx, admit.Request{Key: key, N: 1, At: admittest.Epoch}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Allow(ctx, admit.Request{Key: key, N: 1, At: admittest.Epoch}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"api", "daily"} {
			if got := value(t, reg, "admit_keys_tracked", "limiter", name); got > float64(i) || got < float64(i-i/8) {
				t.Fatalf("keys_tracked of %s with %d keys = %v", name, i, got)
			}
		}
	}
	if n := testutil.CollectAndCount(obs, "admit_evictions_total"); n != 0 {
		t.Errorf("%d admit_evictions_total series: the keys grew without evictions", n)
	}
}

// flaky stands for a shared store that is up or down.
type flaky struct{ down atomic.Bool }

func (f *flaky) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	if f.down.Load() {
		return admit.Decision{}, errors.New("dial tcp: connection refused")
	}
	return admit.Decision{Allowed: true, Limit: admit.PerSecond(100), Remaining: 99, Rule: "shared"}, nil
}

func TestGuard(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	ctx := context.Background()
	primary := &flaky{}
	g, err := compose.NewGuard(primary, compose.GuardConfig{Options: admit.Options{Name: "redis", Observer: obs}, Policy: compose.FailClosed, Threshold: 2, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	allow := func() {
		t.Helper()
		if _, err := g.Allow(ctx, admit.Request{Key: "client", N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	allow() // the primary decides: its decisions are its own to report
	if n := testutil.CollectAndCount(obs, "admit_fallback_active"); n != 0 {
		t.Errorf("%d fallback_active series before any switch, want none", n)
	}
	primary.down.Store(true)
	allow() // one failure: decided by the policy, no switch yet
	if n := testutil.CollectAndCount(obs, "admit_fallback_active"); n != 0 {
		t.Errorf("%d fallback_active series before the threshold, want none", n)
	}
	allow() // two: the Guard switches
	if got := value(t, reg, "admit_fallback_active", "limiter", "redis"); got != 1 {
		t.Errorf("fallback_active while the primary fails = %v, want 1", got)
	}
	allow()
	primary.down.Store(false)
	allow() // back
	if got := value(t, reg, "admit_fallback_active", "limiter", "redis"); got != 0 {
		t.Errorf("fallback_active once the primary is back = %v, want 0", got)
	}
	if got := value(t, reg, "admit_fallback_changes_total", "limiter", "redis"); got != 2 {
		t.Errorf("fallback_changes_total = %v, want 2", got)
	}
	// The policy's three denials, named after the Guard.
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="denied",kind="rate",limiter="redis",rule="redis/fail-closed"} 3
`, "admit_decisions_total")
}
