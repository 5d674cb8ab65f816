package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/redisstore"
)

func mustLimiter(t testing.TB, s *redisstore.Store, cfg redisstore.LimiterConfig) *redisstore.Limiter {
	t.Helper()
	lim, err := s.Limiter(cfg)
	if err != nil {
		t.Fatalf("Limiter(%+v): %v", cfg, err)
	}
	return lim
}

func TestRefund(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			s := newStore(t, client, redisstore.Config{})
			ctx := t.Context()
			t0 := admittest.Epoch
			for _, alg := range admit.Algorithms() {
				lim := mustLimiter(t, s, redisstore.LimiterConfig{Algorithm: alg, Limit: admit.PerSecond(5)})
				peek := func(key string) admit.Decision {
					t.Helper()
					d, err := lim.Allow(ctx, admit.Request{Key: key, N: 0, At: t0})
					if err != nil {
						t.Fatal(err)
					}
					return d
				}
				// A key Redis does not hold is full: nothing is written.
				if err := lim.Refund(ctx, admit.Request{Key: "a", N: 3, At: t0}); err != nil {
					t.Fatal(err)
				}
				if n := client.Exists(ctx, redisstore.RedisKey(lim, "a")).Val(); n != 0 {
					t.Fatalf("%v: a refund of a missing key wrote it", alg)
				}
				if d, err := lim.Allow(ctx, admit.Request{Key: "a", N: 3, At: t0}); err != nil || d.Remaining != 2 {
					t.Fatalf("%v: AllowAt: %+v, %v", alg, d, err)
				}
				if err := lim.Refund(ctx, admit.Request{Key: "a", N: 2, At: t0}); err != nil {
					t.Fatal(err)
				}
				if d := peek("a"); d.Remaining != 4 {
					t.Fatalf("%v: after giving back 2 of 3: %+v", alg, d)
				}
				if err := lim.Refund(ctx, admit.Request{Key: "a", N: 100, At: t0}); err != nil {
					t.Fatal(err)
				}
				if d := peek("a"); d.Remaining != 5 || d.ResetAfter != 0 {
					t.Fatalf("%v: after giving back 100: %+v", alg, d)
				}
				if err := lim.Refund(ctx, admit.Request{Key: "a", N: 0, At: t0}); err != nil {
					t.Fatal(err)
				}
				// Per-call limits.
				pro := admit.PerSecond(50)
				if d, err := lim.Allow(ctx, admit.Request{Key: "b", N: 40, Limit: pro, At: t0}); err != nil || d.Remaining != 10 {
					t.Fatalf("%v: Allow(Limit, At): %+v, %v", alg, d, err)
				}
				if err := lim.Refund(ctx, admit.Request{Key: "b", N: 30, Limit: pro, At: t0}); err != nil {
					t.Fatal(err)
				}
				if d, err := lim.Allow(ctx, admit.Request{Key: "b", N: 0, Limit: pro, At: t0}); err != nil || d.Remaining != 40 {
					t.Fatalf("%v: after Refund(Limit, At): %+v, %v", alg, d, err)
				}
			}
		})
	}
}

// TestRefundRedisClock: Refund and Refund(Limit) give back at Redis's TIME.
func TestRefundRedisClock(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	ctx := t.Context()
	for _, alg := range []admit.Algorithm{admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgSlidingLog} {
		lim := mustLimiter(t, s, redisstore.LimiterConfig{Algorithm: alg, Limit: admit.PerHour(5)})
		if d, err := lim.Allow(ctx, admit.Request{Key: "k", N: 5}); err != nil || !d.Allowed {
			t.Fatalf("%v: %+v, %v", alg, d, err)
		}
		if err := lim.Refund(ctx, admit.Request{Key: "k", N: 3}); err != nil {
			t.Fatal(err)
		}
		if d, err := lim.Allow(ctx, admit.Request{Key: "k", N: 0}); err != nil || d.Remaining != 3 {
			t.Fatalf("%v: after Refund: %+v, %v", alg, d, err)
		}
		before, err := lim.Allow(ctx, admit.Request{Key: "k", N: 0, Limit: admit.PerHour(10)})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := lim.Allow(ctx, admit.Request{Key: "k", N: 4, Limit: admit.PerHour(10)}); err != nil || !d.Allowed {
			t.Fatalf("%v: Allow(Limit): %+v, %v", alg, d, err)
		}
		if err := lim.Refund(ctx, admit.Request{Key: "k", N: 4, Limit: admit.PerHour(10)}); err != nil {
			t.Fatal(err)
		}
		if d, err := lim.Allow(ctx, admit.Request{Key: "k", N: 0, Limit: admit.PerHour(10)}); err != nil || d.Remaining != before.Remaining {
			t.Fatalf("%v: after Refund(Limit): %+v, %v; before Allow(Limit): %+v", alg, d, err, before)
		}
	}
}

// TestRefundForgetsDenial: a refund makes the Store's deny cache forget
// the key, so the capacity it gives back is used at once. Another Store's
// cached denial stands until it ends (documented: it errs on the side of
// the limit).
func TestRefundForgetsDenial(t *testing.T) {
	client := standalone(t)
	prefix := redistest.Prefix(t)
	open := func() *redisstore.Store {
		s, err := redisstore.New(client, redisstore.Config{Prefix: prefix, MinTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := t.Context()
	a, b := mustLimiter(t, open(), redisstore.LimiterConfig{Limit: admit.PerMinute(2)}), mustLimiter(t, open(), redisstore.LimiterConfig{Limit: admit.PerMinute(2)})
	t0 := admittest.Epoch
	if d, _ := a.Allow(ctx, admit.Request{Key: "k", N: 2, At: t0}); !d.Allowed {
		t.Fatalf("admission: %+v", d)
	}
	for _, lim := range []*redisstore.Limiter{a, b} {
		if d, _ := lim.Allow(ctx, admit.Request{Key: "k", N: 1, At: t0}); d.Allowed {
			t.Fatalf("over the burst: %+v", d)
		}
	}
	if err := a.Refund(ctx, admit.Request{Key: "k", N: 1, At: t0}); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.Allow(ctx, admit.Request{Key: "k", N: 1, At: t0}); !d.Allowed {
		t.Fatalf("after the refund, through the same Store: %+v", d)
	}
	// Give one back again: Redis would admit one at t0+10s, but b cached
	// its denial until t0+30s, and still denies.
	if err := a.Refund(ctx, admit.Request{Key: "k", N: 1, At: t0}); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(10 * time.Second)
	if d, _ := b.Allow(ctx, admit.Request{Key: "k", N: 1, At: at}); d.Allowed {
		t.Fatalf("another Store's cached denial: %+v", d)
	}
	if d, _ := a.Allow(ctx, admit.Request{Key: "k", N: 1, At: at}); !d.Allowed {
		t.Fatalf("Redis itself: %+v", d)
	}
}

func TestRefundBadInput(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{MaxKeyLength: 8})
	lim := mustLimiter(t, s, redisstore.LimiterConfig{Limit: admit.PerSecond(2)})
	ctx := t.Context()
	for name, err := range map[string]error{
		"negative n":      lim.Refund(ctx, admit.Request{Key: "a", N: -1, At: admittest.Epoch}),
		"negative n, now": lim.Refund(ctx, admit.Request{Key: "a", N: -1}),
		"per-call":        lim.Refund(ctx, admit.Request{Key: "a", N: -1, Limit: admit.PerSecond(2), At: admittest.Epoch}),
		"per-call, now":   lim.Refund(ctx, admit.Request{Key: "a", N: -1, Limit: admit.PerSecond(2)}),
	} {
		if !errors.Is(err, admit.ErrInvalidCost) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := lim.Refund(ctx, admit.Request{Key: "123456789", N: 1, At: admittest.Epoch}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("long key: %v", err)
	}
	if err := lim.Refund(ctx, admit.Request{Key: "a", N: 1, Limit: admit.Limit{Rate: 3}, At: admittest.Epoch}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Errorf("bad limit: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := lim.Refund(cctx, admit.Request{Key: "a", N: 1, At: admittest.Epoch}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: %v", err)
	}
	s.Close()
	if err := lim.Refund(ctx, admit.Request{Key: "a", N: 1, At: admittest.Epoch}); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("closed store: %v", err)
	}
}

// TestRefundWrongType: a key holding another Redis type is an ErrStore,
// and nothing is written.
func TestRefundWrongType(t *testing.T) {
	client := standalone(t)
	s := newStore(t, client, redisstore.Config{})
	lim := mustLimiter(t, s, redisstore.LimiterConfig{Limit: admit.PerSecond(2)})
	ctx := t.Context()
	rkey := redisstore.RedisKey(lim, "h")
	if err := client.HSet(ctx, rkey, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := lim.Refund(ctx, admit.Request{Key: "h", N: 1, At: admittest.Epoch}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("refund of a hash: %v", err)
	}
	if typ := client.Type(ctx, rkey).Val(); typ != "hash" {
		t.Errorf("the key is now a %s", typ)
	}
}

// TestRefundConcurrent: goroutines admitting and giving back on a few keys
// at one instant, their calls merged into shared pipelines (refunds and
// decisions in separate script calls), leave every key full.
func TestRefundConcurrent(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.client(t), redisstore.Config{})
			ctx := t.Context()
			for _, alg := range []admit.Algorithm{admit.AlgGCRA, admit.AlgFixedWindow, admit.AlgSlidingLog} {
				lim := mustLimiter(t, s, redisstore.LimiterConfig{Algorithm: alg, Limit: admit.PerHour(10)})
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 25 {
							key := fmt.Sprint("key", (g+i)%3)
							n := int64(1 + i%3)
							d, err := lim.Allow(ctx, admit.Request{Key: key, N: n, At: admittest.Epoch})
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								if err := lim.Refund(ctx, admit.Request{Key: key, N: n, At: admittest.Epoch}); err != nil {
									t.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
				for k := range 3 {
					if d, err := lim.Allow(ctx, admit.Request{Key: fmt.Sprint("key", k), N: 0, At: admittest.Epoch}); err != nil || d.Remaining != 10 {
						t.Errorf("%v key%d: %+v, %v; want full", alg, k, d, err)
					}
				}
			}
		})
	}
}

// TestRefundMatchesKeyed: keyed.Limiter and redisstore.Limiter, given the
// same random sequence of admissions, peeks and refunds (own and per-call
// limits) at explicit instants that mostly move forward, decide alike, on
// a standalone Redis and a cluster, with and without the deny cache.
func TestRefundMatchesKeyed(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADMIT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (set ADMIT_SEED to run it again)", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	limits := []admit.Limit{admit.PerSecond(5), {Rate: 3, Period: time.Second, Burst: 7}, admit.PerMinute(10), {Rate: 7, Period: 13 * time.Millisecond}}
	for _, c := range clients {
		for _, deny := range []int{0, -1} { // the default cache, and none
			t.Run(fmt.Sprintf("%s/deny-cache-%d", c.name, deny), func(t *testing.T) {
				s := newStore(t, c.client(t), redisstore.Config{DenyCacheKeys: deny})
				ctx := t.Context()
				for _, alg := range admit.Algorithms() {
					own := limits[rng.IntN(len(limits))]
					red := mustLimiter(t, s, redisstore.LimiterConfig{Options: admit.Options{Name: fmt.Sprint("t", rng.Uint32())}, Algorithm: alg, Limit: own})
					mem, err := keyed.New(keyed.Config{Algorithm: alg, Limit: own})
					if err != nil {
						t.Fatal(err)
					}
					now := admittest.Epoch
					var history []string
					for i := range 120 {
						l := own
						perCall := rng.IntN(3) == 0
						if perCall {
							l = limits[rng.IntN(len(limits))]
						}
						switch rng.IntN(8) {
						case 0: // the same instant
						case 1: // a little back (decisions still agree)
							now = now.Add(-time.Duration(rng.Int64N(int64(l.Period) / int64(l.Rate) / 4)))
						default:
							now = now.Add(time.Duration(rng.Int64N(int64(l.Period) / int64(l.Rate) * 2)))
						}
						key := fmt.Sprint("k", rng.IntN(3))
						n := int64(rng.IntN(5))
						var dm, dr admit.Decision
						var em, er error
						op := "allow"
						switch {
						case rng.IntN(3) == 0 && perCall:
							op = "refund-limit"
							em, er = mem.Refund(ctx, admit.Request{Key: key, N: n, Limit: l, At: now}), red.Refund(ctx, admit.Request{Key: key, N: n, Limit: l, At: now})
						case rng.IntN(3) == 0:
							op = "refund"
							em, er = mem.Refund(ctx, admit.Request{Key: key, N: n, At: now}), red.Refund(ctx, admit.Request{Key: key, N: n, At: now})
						case perCall:
							op = "allow-limit"
							dm, em = mem.Allow(ctx, admit.Request{Key: key, N: n, Limit: l, At: now})
							dr, er = red.Allow(ctx, admit.Request{Key: key, N: n, Limit: l, At: now})
						default:
							dm, em = mem.Allow(ctx, admit.Request{Key: key, N: n, At: now})
							dr, er = red.Allow(ctx, admit.Request{Key: key, N: n, At: now})
						}
						history = append(history, fmt.Sprintf("%d: %s %s n=%d %v at +%v: %+v", i, op, key, n, l, now.Sub(admittest.Epoch), dm))
						if em != nil || er != nil {
							t.Fatalf("%v: %v / %v", alg, em, er)
						}
						dr.Rule = dm.Rule // the names differ
						if dm != dr {
							t.Fatalf("%v step %d: keyed %+v, redis %+v\n%s", alg, i, dm, dr, joinLines(history))
						}
					}
				}
			})
		}
	}
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// TestSlots: ConcurrencyLimiter.Slots is a admit.Slots whose releaser
// gives the lease back once.
func TestSlots(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.client(t), redisstore.Config{})
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 3})
			slots := l.Slots()
			ctx := t.Context()
			rel, d, err := slots.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
			if err != nil || !d.Allowed || rel == nil || d.Remaining != 1 {
				t.Fatalf("TryAcquire: %v, %+v, %v", rel, d, err)
			}
			if rel2, d, err := slots.TryAcquire(ctx, admit.Request{Key: "k", N: 2}); err != nil || d.Allowed || rel2 != nil {
				t.Fatalf("over the max: %v, %+v, %v", rel2, d, err)
			}
			if rel0, d, err := slots.TryAcquire(ctx, admit.Request{Key: "k", N: 0}); err != nil || !d.Allowed || rel0 != nil {
				t.Fatalf("n = 0 holds nothing: %v, %+v, %v", rel0, d, err)
			}
			if rel4, d, err := slots.TryAcquire(ctx, admit.Request{Key: "k", N: 4}); err != nil || d.Allowed || d.RetryAfter != admit.InfDuration || rel4 != nil {
				t.Fatalf("n > max is a refusal: %v, %+v, %v", rel4, d, err)
			}
			rel3, _, _ := slots.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
			rel.Release()
			rel.Release() // idempotent
			if n, err := l.InFlight(ctx, "k"); err != nil || n != 1 {
				t.Fatalf("in flight after the release: %d, %v", n, err)
			}
			rel3.Release()
			if n, _ := l.InFlight(ctx, "k"); n != 0 {
				t.Fatalf("in flight: %d", n)
			}
			var nilLimiter *redisstore.ConcurrencyLimiter
			if nilLimiter.Slots() != nil {
				t.Fatal("Slots of a nil limiter is not nil")
			}
		})
	}
}
