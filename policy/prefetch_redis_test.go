package policy

// Rules that prefetch from a real Redis and a real Redis Cluster: two
// engines, each with a Store of its own (two instances), within the
// algorithm's bound; Redis killed while blocks are held.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
)

const prefetchPolicy = `domain: d
defaults: {store: redis}
rules:
  - {name: gcra, match: [{key: r, value: gcra}, k], rate: 100/s burst 20, prefetch: auto}
  - {name: window, match: [{key: r, value: window}, k], rate: 100/s burst 20, algorithm: fixed_window, prefetch: 5}
  - {name: sliding, match: [{key: r, value: sliding}, k], rate: 100/s burst 20, algorithm: sliding_window, prefetch: 5}
  - {name: bucket, match: [{key: r, value: bucket}, k], rate: 100/s burst 20, algorithm: token_bucket, prefetch: 8}
`

func TestRedisPrefetch(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		testRedisPrefetch(t, redistest.Standalone(t).Client(t))
	})
	t.Run("cluster", func(t *testing.T) {
		testRedisPrefetch(t, redistest.SharedCluster(t).Client(t))
	})
}

// testRedisPrefetch runs a hot key at ten times its limit through two
// engines prefetching from the Redis of client, each on a Store of its
// own: what they admit together stays within the algorithm's bound, most
// of it from blocks.
func testRedisPrefetch(t *testing.T, client redis.UniversalClient) {
	p, err := parseAdmit("p.yaml", []byte(prefetchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	slowMachine(p)
	prefix := redistest.Prefix(t)
	clock := admittest.NewManualClock(t0)
	var es []*Engine
	for range 2 {
		s, err := redisstore.New(client, redisstore.Config{Prefix: prefix, MinTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(p, withRedis(s, clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(); s.Close() }) // the engine first: it gives blocks back
		es = append(es, e)
	}
	limit := admit.PerSecond(100).WithBurst(20)
	for _, rule := range []struct {
		name string
		alg  admit.Algorithm
	}{{"gcra", admit.AlgGCRA}, {"window", admit.AlgFixedWindow}, {"sliding", admit.AlgSlidingWindow}, {"bucket", admit.AlgTokenBucket}} {
		var events []admittest.Event
		req := request("d", desc("r", rule.name, "k", "hot"))
		var res Result
		for step := range 2000 {
			clock.Advance(time.Millisecond / 2)
			if err := es[step%2].Check(context.Background(), req, nil, &res); err != nil {
				t.Fatal(err)
			}
			if d := res.Decision; d.Allowed {
				if d.Rule != rule.name {
					t.Fatalf("%s: admitted by %q (%v)", rule.name, d.Rule, res.Statuses[0].Err)
				}
				events = append(events, admittest.Event{At: clock.Now(), N: 1})
			}
		}
		if err := admittest.CheckBound(rule.alg, events, limit); err != nil {
			t.Errorf("%s: %v", rule.name, err)
		}
		var blocks, local int64
		for _, e := range es {
			s := statsOf(e)[rule.name]
			blocks, local = blocks+s.Blocks, local+s.Local
		}
		// 1s at 100/s and a burst of 20: at most 120.
		if len(events) < 60 || blocks == 0 || local < int64(len(events))/2 {
			t.Errorf("%s: %d admitted, %d of them from %d blocks", rule.name, len(events), local, blocks)
		}
	}
}

// TestRedisPrefetchKilled: Redis killed while an engine holds blocks: the
// blocks are spent, then the rule's failure policy decides; once Redis is
// back, blocks are taken again.
func TestRedisPrefetchKilled(t *testing.T) {
	srv := redistest.NewStandalone(t)
	store := redisStore(t, faultClient(t, srv), redisstore.Config{Timeout: 5 * time.Second})
	p, err := parseAdmit("p.yaml", []byte(`domain: d
rules:
  - {name: a, match: k, rate: 100/s burst 40, store: redis, prefetch: 10, failure: {policy: fail_closed, timeout: 5s}}
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
	req := request("d", desc("k", "hot"))
	spentThenFailed(t, e, clock, req, srv.Kill)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var res Result
	for i := 0; ; i++ {
		clock.Advance(time.Second)
		if err := e.Check(context.Background(), req, nil, &res); err != nil {
			t.Fatal(err)
		}
		if res.Decision.Allowed && res.Decision.Rule == "a" {
			break
		}
		if i == 50 {
			t.Fatalf("Redis back: %+v", res.Decision)
		}
		time.Sleep(20 * time.Millisecond) // the client reconnecting
	}
}
