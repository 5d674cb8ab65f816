package prefetch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/prefetch"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// redisFleet is three instances, each with a Store of its own (its own
// client, pipelines and deny cache), prefetching one limit from one Redis.
func redisFleet(t *testing.T, newClient func() redis.UniversalClient, alg admit.Algorithm, l admit.Limit) []*prefetch.Limiter {
	t.Helper()
	prefix := redistest.Prefix(t)
	var lims []*prefetch.Limiter
	for range 3 {
		client := newClient()
		st, err := redisstore.New(client, redisstore.Config{Prefix: prefix, MinTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rl, err := st.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "hot"}, Algorithm: alg, Limit: l})
		if err != nil {
			t.Fatal(err)
		}
		lim, err := prefetch.New(prefetch.Config{Store: rl, Instances: 3, Interval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		lims = append(lims, lim)
	}
	return lims
}

// TestRedisFleetKeepsTheBound: the fleet test of fleet_test.go against a
// real Redis and a real 3-node Redis Cluster: three processes' worth of
// Stores on one hot key at ten times its limit keep the algorithm's bound.
func TestRedisFleetKeepsTheBound(t *testing.T) {
	l := admit.Limit{Rate: 100, Period: time.Second, Burst: 20}
	ctx := context.Background()
	targets := map[string]func(t *testing.T) func() redis.UniversalClient{
		"standalone": func(t *testing.T) func() redis.UniversalClient {
			s := redistest.Standalone(t)
			return func() redis.UniversalClient { return s.Client(t) }
		},
		"cluster": func(t *testing.T) func() redis.UniversalClient {
			c := redistest.SharedCluster(t)
			return func() redis.UniversalClient { return c.Client(t) }
		},
	}
	for name, target := range targets {
		for _, alg := range prefetched {
			t.Run(name+"/"+alg.String(), func(t *testing.T) {
				lims := redisFleet(t, target(t), alg, l)
				reqs := traffic(uint64(alg), false)[:2000]
				admitted := run(t, reqs, func(r request) (admit.Decision, error) {
					return lims[r.inst].Allow(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				}, func(r request) error {
					return lims[r.inst].Refund(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				})
				var local int64
				for _, lim := range lims {
					if err := lim.Close(ctx); err != nil {
						t.Error(err)
					}
					local += lim.Stats().Local
				}
				if err := admittest.CheckBound(alg, admitted, l); err != nil {
					t.Fatalf("the fleet broke the bound: %v", err)
				}
				if local == 0 {
					t.Error("nothing was admitted from blocks")
				}
			})
		}
	}
}

// TestRedisKilledWhileBlocksAreHeld: when Redis dies, an instance spends
// what its blocks hold, and then the failure policy decides (here fail
// closed): nothing beyond the blocks is admitted.
func TestRedisKilledWhileBlocksAreHeld(t *testing.T) {
	srv := redistest.NewStandalone(t)
	opts := srv.Options()
	opts.MaxRetries, opts.DialTimeout, opts.ReadTimeout = -1, 100*time.Millisecond, 100*time.Millisecond
	st, err := redisstore.New(redis.NewClient(opts), redisstore.Config{Timeout: 200 * time.Millisecond, MinTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// 1000 a minute: a slot lasts 60ms, so the blocks outlive the test's
	// requests on the system clock (Redis's TIME, this process's clock).
	rl, err := st.Limiter(redisstore.LimiterConfig{Limit: admit.Limit{Rate: 1000, Period: time.Minute, Burst: 100}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := prefetch.New(prefetch.Config{Store: rl, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	guard, err := compose.NewGuard(lim, compose.GuardConfig{Policy: compose.FailClosed, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 20 { // warm: the key gets a block
		if _, err := guard.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	before := lim.Stats()
	if before.Held == 0 {
		t.Fatalf("no block held after warming: %+v", before)
	}
	srv.Kill()
	var admitted int64
	for range 200 {
		d, err := guard.Allow(ctx, admit.Request{Key: "k", N: 1})
		if err != nil && !errors.Is(err, redisstore.ErrStore) {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	// A background fetch that reached Redis before it died may have
	// landed meanwhile: what it took may be spent too, and nothing else.
	after := lim.Stats()
	if late := after.Taken - before.Taken; admitted < before.Held || admitted > before.Held+late {
		t.Errorf("admitted %d with Redis down; the blocks held %d (and %d landed late)", admitted, before.Held, late)
	}
	if after.Local-before.Local != admitted {
		t.Errorf("admitted %d, of which %d from blocks", admitted, after.Local-before.Local)
	}
}
