package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// twinStep is one call of a partial-grant timeline.
type twinStep struct {
	op  string // "most" (AllowAtMost), "allow" or "refund"
	req admit.Request
}

// twinTimeline draws count calls on keys a and b (under the limiters' own
// limit) and t (under limit tier, given per call), at instants that go
// forwards and backwards: mostly partial grants of 0 to 12 events, now
// and then of a huge number, with admissions, peeks and refunds between.
func twinTimeline(rng *rand.Rand, count int, tier admit.Limit) []twinStep {
	at := admittest.Epoch
	steps := make([]twinStep, 0, count)
	for range count {
		at = at.Add(time.Duration(rng.IntN(400)-50) * time.Millisecond)
		r := admit.Request{Key: []string{"a", "b", "t"}[rng.IntN(3)], N: int64(rng.IntN(13)), At: at}
		if r.Key == "t" {
			r.Limit = tier
		}
		if rng.IntN(10) == 0 {
			r.N = []int64{math.MaxInt64, 1 << 40, 1000}[rng.IntN(3)]
		}
		op := "most"
		switch rng.IntN(10) {
		case 0, 1:
			op = "allow"
			r.N = min(r.N, 3)
		case 2:
			op = "refund"
			r.N = min(r.N, 4)
		}
		steps = append(steps, twinStep{op, r})
	}
	return steps
}

// TestAllowAtMostMatchesKeyed: on random timelines with explicit instants
// going forwards and backwards, for every algorithm, on a standalone Redis
// and a cluster, with and without the deny cache, AllowAtMost grants what
// keyed.Limiter.AllowAtMost grants, with the same Decision, field for
// field, and the keys' states stay the same (the Allows, peeks and refunds
// between agree too).
func TestAllowAtMostMatchesKeyed(t *testing.T) {
	limits := []admit.Limit{
		{Rate: 5, Period: time.Second, Burst: 7},
		{Rate: 7, Period: 3 * time.Second, Burst: 4},
		{Rate: 3, Period: time.Second},
		{Rate: 100, Period: 10 * time.Second, Burst: 12},
	}
	tier := admit.Limit{Rate: 2, Period: 700 * time.Millisecond, Burst: 6}
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		for _, deny := range []int{0, -1} {
			t.Run(fmt.Sprintf("%s/deny=%d", name, deny), func(t *testing.T) {
				t.Parallel()
				s := newStore(t, client(t), redisstore.Config{DenyCacheKeys: deny})
				for _, alg := range admit.Algorithms() {
					for li, l := range limits {
						rng := rand.New(rand.NewPCG(uint64(alg), uint64(li)))
						playTwins(t, s, alg, l, twinTimeline(rng, 250, tier))
					}
				}
			})
		}
	}
}

// playTwins plays steps on a new Limiter of s and on a keyed.Limiter that
// forgets no key, and fails t at the first difference.
func playTwins(t *testing.T, s *redisstore.Store, alg admit.Algorithm, l admit.Limit, steps []twinStep) {
	t.Helper()
	ctx := t.Context()
	name := fmt.Sprintf("twin-%d-%d", alg, time.Now().UnixNano())
	lim, err := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: name}, Algorithm: alg, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	twin, err := keyed.New(keyed.Config{Options: admit.Options{Name: name}, Algorithm: alg, Limit: l, ForgetAfter: 200 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		var g, tg int64
		var d, td admit.Decision
		var err, terr error
		switch st.op {
		case "most":
			g, d, err = lim.AllowAtMost(ctx, st.req)
			tg, td, terr = twin.AllowAtMost(ctx, st.req)
		case "allow":
			d, err = lim.Allow(ctx, st.req)
			td, terr = twin.Allow(ctx, st.req)
		case "refund":
			err = lim.Refund(ctx, st.req)
			terr = twin.Refund(ctx, st.req)
		}
		if err != nil || terr != nil || g != tg || d != td {
			t.Fatalf("%v %v step %d: %s(%s n=%d at %v): Redis %d, %+v, %v; keyed %d, %+v, %v",
				alg, l, i, st.op, st.req.Key, st.req.N, st.req.At.Sub(admittest.Epoch), g, d, err, tg, td, terr)
		}
	}
}

// TestAllowAtMostBadInput: errors are Allow's, and nothing is granted;
// more than the burst is a grant of the burst.
func TestAllowAtMostBadInput(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{MaxKeyLength: 4})
	lim, err := s.Limiter(redisstore.LimiterConfig{Limit: admit.Limit{Rate: 3, Period: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := admittest.At(0)
	for _, c := range []struct {
		r    admit.Request
		want error
		text string
	}{
		{admit.Request{Key: "k", N: -1, At: now}, admit.ErrInvalidCost, "n=-1"},
		{admit.Request{Key: "too-long", N: 1, At: now}, admit.ErrKeyTooLong, "redisstore: 8 bytes, the maximum is 4"},
		{admit.Request{Key: "k", N: 1, At: now, Limit: admit.Limit{Rate: -1, Period: time.Second}}, admit.ErrInvalidLimit, ""},
	} {
		g, d, err := lim.AllowAtMost(ctx, c.r)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.text) || g != 0 || d.Allowed {
			t.Errorf("AllowAtMost(%+v) = %d, %+v, %v; want an error wrapping %v saying %q, and nothing granted", c.r, g, d, err, c.want, c.text)
		}
	}
	if d, err := lim.Allow(ctx, admit.Request{Key: "k", At: now}); err != nil || d.Remaining != 3 {
		t.Errorf("after the refusals: %+v, %v; want the key full", d, err)
	}
	// More than the burst is a partial grant of the burst, not a refusal.
	g, d, err := lim.AllowAtMost(ctx, admit.Request{Key: "k", N: 1000, At: now})
	if err != nil || g != 3 || !d.Allowed || d.Remaining != 0 || d.RetryAfter != 20*time.Minute {
		t.Errorf("AllowAtMost of 1000 under a burst of 3 = %d, %+v, %v; want 3, and one more in 20m", g, d, err)
	}
	// On Redis's clock.
	g, d, err = lim.AllowAtMost(ctx, admit.Request{Key: "r", N: 2})
	if err != nil || g != 2 || !d.Allowed || d.Remaining != 1 || d.RetryAfter != 0 {
		t.Errorf("AllowAtMost of 2 on Redis's clock = %d, %+v, %v", g, d, err)
	}
}

// TestAllowAtMostDenyCache: a grant of nothing, or of less than asked,
// leaves the key denied one event, which the Store answers without Redis
// until it ends (for Allow and AllowAtMost alike); a grant of everything
// asked, a refund or a reset forgets it.
func TestAllowAtMostDenyCache(t *testing.T) {
	obs := &obsRecorder{}
	s := newStore(t, standalone(t), redisstore.Config{Options: admit.Options{Observer: obs}})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.Limit{Rate: 4, Period: time.Second}}) // T = 250ms
	ctx := t.Context()
	now := admittest.At(0)
	calls := func() int {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.calls)
	}
	most := func(n int64, at time.Time) (int64, admit.Decision) {
		t.Helper()
		g, d, err := lim.AllowAtMost(ctx, admit.Request{Key: "k", N: n, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return g, d
	}
	if g, d := most(6, now); g != 4 || !d.Allowed || d.RetryAfter != 250*time.Millisecond {
		t.Fatalf("6 of a fresh 4: %d, %+v", g, d)
	}
	before := calls()
	// Denied one event until +250ms: answered locally.
	if g, d := most(2, now.Add(100*time.Millisecond)); g != 0 || d.Allowed || d.RetryAfter != 150*time.Millisecond || d.Remaining != 0 {
		t.Errorf("2 at +100ms: %d, %+v", g, d)
	}
	if d, _ := lim.Allow(ctx, admit.Request{Key: "k", N: 1, At: now.Add(200 * time.Millisecond)}); d.Allowed || d.RetryAfter != 50*time.Millisecond {
		t.Errorf("Allow at +200ms: %+v", d)
	}
	if got := calls(); got != before {
		t.Errorf("%d calls to Redis for cached denials", got-before)
	}
	// At +250ms the denial ends: one fits, and is granted by Redis.
	if g, d := most(1, now.Add(250*time.Millisecond)); g != 1 || !d.Allowed || calls() != before+1 {
		t.Errorf("1 at +250ms: %d, %+v (%d calls)", g, d, calls()-before)
	}
	// A grant of nothing is remembered too, and a peek is never cached.
	if g, d := most(3, now.Add(300*time.Millisecond)); g != 0 || d.Allowed || d.RetryAfter != 200*time.Millisecond {
		t.Errorf("3 at +300ms: %d, %+v", g, d)
	}
	before = calls()
	if g, _ := most(1, now.Add(400*time.Millisecond)); g != 0 || calls() != before {
		t.Errorf("1 at +400ms: %d granted, %d calls", g, calls()-before)
	}
	if g, d := most(0, now.Add(400*time.Millisecond)); g != 0 || !d.Allowed || calls() != before+1 {
		t.Errorf("a peek at +400ms: %d, %+v, %d calls", g, d, calls()-before)
	}
	// A refund forgets the denial: the next grant asks Redis.
	if err := lim.Refund(ctx, admit.Request{Key: "k", N: 2, At: now.Add(400 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	before = calls()
	if g, d := most(2, now.Add(400*time.Millisecond)); g != 2 || !d.Allowed || d.RetryAfter != 0 || calls() != before+1 {
		t.Errorf("2 at +400ms after a refund of 2: %d, %+v, %d calls", g, d, calls()-before)
	}
}

// TestAllowAtMostConcurrent: many goroutines taking blocks of one key at
// one instant, on a standalone Redis and a cluster, while others Allow it,
// take exactly the burst between them: each grant is atomic.
func TestAllowAtMostConcurrent(t *testing.T) {
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, client(t), redisstore.Config{})
			lim, err := s.Limiter(redisstore.LimiterConfig{Algorithm: admit.AlgFixedWindow, Limit: admit.Limit{Rate: 500, Period: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			now := admittest.At(0)
			var mu sync.Mutex
			var total int64
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for i := range 40 {
						var got int64
						if w%4 == 0 {
							d, err := lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: now})
							if err != nil {
								t.Error(err)
							}
							if d.Allowed {
								got = 1
							}
						} else {
							g, _, err := lim.AllowAtMost(ctx, admit.Request{Key: "hot", N: int64(1 + (w+i)%7), At: now})
							if err != nil {
								t.Error(err)
							}
							got = g
						}
						mu.Lock()
						total += got
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if total != 500 {
				t.Errorf("took %d in all, want exactly the burst, 500", total)
			}
		})
	}
}

// AllowAtMost passes the scenario's limit per call (Request.Limit) too,
// so that the conformance suite's partial grants run on per-call limits.
func (s limitSubject) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	r.Limit = s.l
	return s.lim.AllowAtMost(ctx, r)
}
