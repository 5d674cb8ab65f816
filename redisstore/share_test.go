package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/sharetest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

var shareClients = map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster}

// TestShareWeighted: three tenants of weights 1, 2 and 3 at ten times a
// budget kept in Redis get it 1:2:3, and when one goes idle the other two
// take its share within a second (sharetest.Run), on a standalone Redis
// and a 3-node cluster.
func TestShareWeighted(t *testing.T) {
	for name, client := range shareClients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, client(t), redisstore.Config{})
			lim, err := s.Share(fair.ShareConfig{Options: admit.Options{Name: "api"}, Budget: sharetest.Budget, Weight: sharetest.Weight})
			if err != nil {
				t.Fatal(err)
			}
			sharetest.Run(t, func(ctx context.Context, tenant string, at time.Duration) (bool, error) {
				d, err := lim.Allow(ctx, admit.Request{Key: tenant, N: 1, At: admittest.At(at)})
				return d.Allowed, err
			})
		})
	}
}

// TestShareMatchesFair: on random timelines of five tenants of different
// weights (instants forwards and backwards, peeks, requests beyond the
// burst, refunds), the share kept in Redis decides every request as a
// fair.Share does, field for field, on a standalone Redis and a cluster.
func TestShareMatchesFair(t *testing.T) {
	budgets := []admit.Limit{
		{Rate: 10, Period: time.Second, Burst: 6},
		{Rate: 7, Period: 3 * time.Second, Burst: 9},
		{Rate: 3, Period: time.Second, Burst: 1},
	}
	weights := map[string]int64{"a": 1, "b": 2, "c": 5, "d": 1 << 20, "{e}": 3}
	weight := func(tenant string) int64 { return weights[tenant] }
	tenants := []string{"a", "b", "c", "d", "{e}"}
	for name, client := range shareClients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, client(t), redisstore.Config{})
			for bi, budget := range budgets {
				cfg := fair.ShareConfig{Options: admit.Options{Name: fmt.Sprintf("twin%d", bi)}, Budget: budget, Weight: weight, Idle: 700 * time.Millisecond}
				lim, err := s.Share(cfg)
				if err != nil {
					t.Fatal(err)
				}
				twin, err := fair.NewShare(cfg)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(bi), 7))
				at := admittest.Epoch
				for i := range 400 {
					at = at.Add(time.Duration(rng.IntN(300)-30) * time.Millisecond)
					r := admit.Request{Key: tenants[rng.IntN(len(tenants))], N: int64(rng.IntN(4)), At: at}
					if rng.IntN(20) == 0 {
						r.N = 1 << 40
					}
					if rng.IntN(8) == 0 {
						r.N = min(r.N, 3)
						err, terr := lim.(admit.Refunder).Refund(t.Context(), r), twin.Refund(t.Context(), r)
						if err != nil || terr != nil {
							t.Fatalf("step %d: refund %+v: %v, fair %v", i, r, err, terr)
						}
						continue
					}
					d, err := lim.Allow(t.Context(), r)
					td, terr := twin.Allow(t.Context(), r)
					if err != nil || terr != nil || d != td {
						t.Fatalf("budget %v step %d: %+v:\nredis %+v (%v)\nfair  %+v (%v)", budget, i, r, d, err, td, terr)
					}
				}
			}
		})
	}
}

// TestShareKeys: the budget's and tenants' states are kept in one slot
// whatever the tenant holds, and expire.
func TestShareKeys(t *testing.T) {
	rs := redistest.Standalone(t)
	client := rs.Client(t)
	prefix := redistest.Prefix(t)
	s, err := redisstore.New(client, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim, err := s.Share(fair.ShareConfig{Options: admit.Options{Name: "k"}, Budget: admit.PerSecond(10)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tenant := range []string{"x", "}{", ""} {
		if d, err := lim.Allow(ctx, admit.Request{Key: tenant, N: 1}); err != nil || !d.Allowed {
			t.Fatalf("%q: %+v, %v", tenant, d, err)
		}
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slot := -1
	for _, k := range keys {
		if slot >= 0 && redistest.Slot(k) != slot {
			t.Errorf("key %q in slot %d, want %d", k, redistest.Slot(k), slot)
		}
		slot = redistest.Slot(k)
		ttl, err := client.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 2*time.Second {
			t.Errorf("key %q expires in %v (%v), want within the second", k, ttl, err)
		}
	}
	if len(keys) != 4 {
		t.Errorf("keys %q, want the budget's and three tenants'", keys)
	}
}

// TestShareBadInput: bad configurations and requests are errors, never
// panics, and send nothing.
func TestShareBadInput(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	for _, cfg := range []fair.ShareConfig{
		{Budget: admit.Limit{}},
		{Budget: admit.Unlimited},
		{Budget: admit.PerSecond(1), Idle: -time.Second},
		{Options: admit.Options{Name: "a:b"}, Budget: admit.PerSecond(1)},
	} {
		if _, err := s.Share(cfg); err == nil {
			t.Errorf("Share(%+v) did not fail", cfg)
		}
	}
	lim, err := s.Share(fair.ShareConfig{Budget: admit.PerSecond(1), Weight: func(t string) int64 { return int64(len(t)) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lim.Allow(ctx, admit.Request{Key: "", N: 1}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "invalid weight") {
		t.Errorf("weight 0: %v", err)
	}
	if _, err := lim.Allow(ctx, admit.Request{Key: "a", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n = -1: %v", err)
	}
	if _, err := lim.Allow(ctx, admit.Request{Key: strings.Repeat("a", 5000), N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("a long key: %v", err)
	}
}
