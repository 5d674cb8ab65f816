package policy

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
)

// slidingPolicy limits key k to 3/s by each form of the sliding window.
const slidingPolicy = `domain: d
rules:
  - {name: strict, match: [{key: r, value: strict}, k], rate: 3/s, algorithm: sliding_window, store: redis}
  - {name: approx, match: [{key: r, value: approx}, k], rate: 3/s, algorithm: sliding_window_approx, store: redis}
`

// TestSlidingWindowForms: under steady overload (a request every 10ms for
// 5s) the strict sliding window admits 3 in the first window and 2 in each
// after (B-1: the previous window's weight stays above 0 until each window
// ends), the approximate one 3 in each, in memory and in Redis, standalone
// and cluster.
func TestSlidingWindowForms(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		e, clock := engine(t, slidingPolicy)
		checkSlidingForms(t, e, clock)
	})
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{
		"standalone": func(t testing.TB) redis.UniversalClient { return redistest.Standalone(t).Client(t) },
		"cluster":    func(t testing.TB) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) },
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(slidingPolicy))
			if err != nil {
				t.Fatal(err)
			}
			clock := admittest.NewManualClock(t0)
			e, err := newEngine(p, withRedis(redisStore(t, client(t), redisstore.Config{}), clock))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			checkSlidingForms(t, e, clock)
		})
	}
}

func checkSlidingForms(t *testing.T, e *Engine, clock *admittest.ManualClock) {
	t.Helper()
	want := map[string][5]int{"strict": {3, 2, 2, 2, 2}, "approx": {3, 3, 3, 3, 3}}
	got := map[string]*[5]int{"strict": new([5]int), "approx": new([5]int)}
	for i := range 500 {
		for _, form := range []string{"strict", "approx"} {
			if res := check(t, e, request("d", desc("r", form, "k", "v")), nil); res.Decision.Allowed {
				got[form][i/100]++
			}
		}
		clock.Advance(10 * time.Millisecond)
	}
	for form, w := range want {
		if *got[form] != w {
			t.Errorf("%s: admitted %v per second, want %v", form, *got[form], w)
		}
	}
}
