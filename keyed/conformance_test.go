package keyed_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

// factory makes a keyed limiter configured by cfg, with the scenario's
// algorithm and limit. The suite's keys are few, so the cap is never
// reached, and idle keys are evicted freely: decisions must not change.
func factory(cfg keyed.Config) admittest.Factory {
	return func(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
		t.Helper()
		cfg.Algorithm, cfg.Limit = alg, l
		lim, err := keyed.New(cfg)
		if err != nil {
			t.Fatalf("keyed.New(keyed.Config{Algorithm: %v, Limit: %v}): %v", alg, l, err)
		}
		return lim
	}
}

// limitSubject passes the scenario's limit per call (Request.Limit) to a
// limiter whose own limit is something else: per-call limits decide
// exactly as own ones.
type limitSubject struct {
	lim *keyed.Limiter
	l   admit.Limit
}

func (s limitSubject) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	r.Limit = s.l
	return s.lim.Allow(ctx, r)
}

// AllowAtMost passes the limit per call too, so that the suite's partial
// grants run on per-call limits.
func (s limitSubject) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	r.Limit = s.l
	return s.lim.AllowAtMost(ctx, r)
}

func perCallFactory(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
	t.Helper()
	own := admit.PerHour(7)
	if l == (admit.Limit{}) {
		own = l // the zero Limit per call asks for the own limit: make it the zero Limit
	}
	lim, err := keyed.New(keyed.Config{Algorithm: alg, Limit: own, ForgetAfter: never})
	if err != nil {
		t.Fatal(err)
	}
	return limitSubject{lim, l}
}

func TestConformance(t *testing.T) {
	admittest.Run(t, factory(keyed.Config{}))
}

func TestConformancePerCallLimit(t *testing.T) {
	admittest.Run(t, perCallFactory)
}

// One shard, no grace: keys are swept as soon as they are full, so the
// scenarios check that forgetting idle keys changes no decision.
func TestConformanceEager(t *testing.T) {
	admittest.Run(t, factory(keyed.Config{Shards: 1, ForgetAfter: -1}))
}

// never is a grace period longer than any timeline: with it a limiter
// forgets no key, and decides exactly as the single-key limiters even when
// instants jump back arbitrarily far.
const never = 200 * 365 * 24 * time.Hour

func TestConformanceModel(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	admittest.RunDifferential(t, factory(keyed.Config{ForgetAfter: never}), 7, rounds)
	admittest.RunDifferential(t, perCallFactory, 8, rounds/2)
}

// TestConformanceModelForward: on timelines that never go back in time,
// sweeping idle keys at once, on one shard, changes no decision.
func TestConformanceModelForward(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for range rounds {
		l := admittest.RandomLimit(r)
		for _, alg := range admit.Algorithms() {
			reqs := admittest.RandomTimeline(r, alg, l, 1+r.IntN(300), false, "a", "b", "c", "d", "e")
			subj := factory(keyed.Config{Shards: 1, ForgetAfter: -1})(t, alg, l)
			admittest.Differential(t, subj, alg, l, reqs)
		}
	}
}

func FuzzConformance(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 7, 5, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	for alg := range 6 {
		f.Add([]byte{byte(alg), 0, 3, 4, 2, 9, 9, 9, 10, 10, 11, 11, 14, 14, 16, 16, 8, 200, 5})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		alg, l, reqs := admittest.TimelineFromBytes(data)
		admittest.Differential(t, factory(keyed.Config{Shards: 1, ForgetAfter: never})(t, alg, l), alg, l, reqs)
	})
}

// FuzzConformanceEager plays fuzzed timelines sorted by instant (so time
// never goes back) on a limiter that forgets idle keys at once.
func FuzzConformanceEager(f *testing.F) {
	f.Add([]byte{})
	for alg := range 6 {
		f.Add([]byte{byte(alg), 0, 3, 4, 2, 9, 9, 9, 10, 10, 11, 11, 14, 14, 16, 16, 8, 200, 5})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		alg, l, reqs := admittest.TimelineFromBytes(data)
		slices.SortStableFunc(reqs, func(a, b admit.Request) int { return a.At.Compare(b.At) })
		admittest.Differential(t, factory(keyed.Config{Shards: 1, ForgetAfter: -1})(t, alg, l), alg, l, reqs)
	})
}
