package policy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
)

// recordingMemory is the memory store, keeping the rate limiters it builds
// by name, so that a test can look at one rate's state.
type recordingMemory struct {
	testMemory
	mu   sync.Mutex
	lims map[string]admit.KeyedLimiter
}

func (m *recordingMemory) Rate(s Spec) (admit.KeyedLimiter, error) {
	lim, err := m.testMemory.Rate(s)
	if err == nil {
		m.mu.Lock()
		m.lims[s.Name] = lim
		m.mu.Unlock()
	}
	return lim, err
}

// pairPolicy limits each user by two rates, 3/s and 5/min (in the order
// given), in store.
func pairPolicy(order, store string) string {
	return "domain: api\nrules:\n  - name: pair\n    match: user\n    rate: " + order + "\n    store: " + store + "\n"
}

// testRatePair runs the timeline of a rule with two rates, 3/s (burst 3,
// T = 1/3 s) and 5/min (burst 5, T = 12s), in both orders: the engine
// comes from build, and peek tells what one rate (by its limiter's name)
// has left for a key at an instant.
func testRatePair(t *testing.T, build func(t *testing.T, src string, clock admit.Clock) *Engine, peek func(t *testing.T, name string, l admit.Limit, key string, at time.Time) int64, store string) {
	for _, order := range []string{"[3/s, 5/min]", "[5/min, 3/s]"} {
		t.Run(order, func(t *testing.T) {
			clock := admittest.NewManualClock(t0)
			e := build(t, pairPolicy(order, store), clock)
			sec, min := "pair", "pair#2"
			if strings.HasPrefix(order, "[5") {
				sec, min = min, sec
			}
			alice := request("api", desc("user", "alice"))
			key := string(appendValue(nil, "alice"))
			// t0: 3 admitted, the per-second rate is what is left fewest of.
			for i := range 3 {
				res := check(t, e, alice, nil)
				want(t, "t0", res.Decision, true, "pair", int64(2-i))
			}
			// t0+1s: 2 more, the minute's fourth and fifth: it is exhausted.
			clock.Advance(time.Second)
			for i := range 2 {
				res := check(t, e, alice, nil)
				want(t, "t0+1s", res.Decision, true, "pair", int64(1-i))
				if res.Decision.Limit != admit.PerMinute(5) {
					t.Errorf("t0+1s: decided by %v, want the minute's rate", res.Decision.Limit)
				}
			}
			if got := peek(t, sec, admit.PerSecond(3), key, clock.Now()); got != 1 {
				t.Fatalf("the per-second rate has %d left, want 1", got)
			}
			// The per-second rate admits, the minute refuses: nothing is
			// spent, and the refusal says the minute's wait, 11s.
			res := check(t, e, alice, nil)
			if d := res.Decision; d.Allowed || d.RetryAfter != 11*time.Second || d.Limit != admit.PerMinute(5) || d.Rule != "pair" {
				t.Fatalf("refused by the minute: %+v", d)
			}
			if st := res.Statuses[0]; st.Code != CodeOverLimit || st.Decision != res.Decision {
				t.Errorf("status %+v, want OVER_LIMIT with the request's decision", st)
			}
			if got := peek(t, sec, admit.PerSecond(3), key, clock.Now()); got != 1 {
				t.Fatalf("after the minute's refusal the per-second rate has %d left, want 1: the refusal spent it", got)
			}
			if got := peek(t, min, admit.PerMinute(5), key, clock.Now()); got != 0 {
				t.Fatalf("the minute has %d left, want 0", got)
			}
			// Both refuse 2 events: the wait is the longer, the minute's
			// (23s), not the second's (1/3 s).
			two := *alice
			two.Hits = 2
			res = check(t, e, &two, nil)
			if d := res.Decision; d.Allowed || d.RetryAfter != 23*time.Second || d.Limit != admit.PerMinute(5) {
				t.Fatalf("refused by both: %+v, want the minute's 23s", d)
			}
			if got := peek(t, sec, admit.PerSecond(3), key, clock.Now()); got != 1 {
				t.Fatalf("after a refusal by both the per-second rate has %d left, want 1", got)
			}
			// At the minute's retry time, one is admitted.
			clock.Advance(11 * time.Second)
			if res := check(t, e, alice, nil); !res.Decision.Allowed {
				t.Fatalf("at the retry time: %+v", res.Decision)
			}
		})
	}
}

func TestRatePairMemory(t *testing.T) {
	var m *recordingMemory
	build := func(t *testing.T, src string, clock admit.Clock) *Engine {
		p, err := Parse("test.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		m = &recordingMemory{lims: map[string]admit.KeyedLimiter{}}
		e, err := NewEngine(p, Config{Options: admit.Options{Clock: clock}, Backends: map[string]Backend{StoreLocal: m}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	peek := func(t *testing.T, name string, _ admit.Limit, key string, at time.Time) int64 {
		d, err := m.lims[name].Allow(context.Background(), admit.Request{Key: key, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}
	testRatePair(t, build, peek, "local")
}

func TestRatePairRedis(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { testRatePairRedis(t, redistest.Standalone(t).Client(t)) })
	t.Run("cluster", func(t *testing.T) { testRatePairRedis(t, redistest.SharedCluster(t).Client(t)) })
}

func testRatePairRedis(t *testing.T, client redis.UniversalClient) {
	var store *redisstore.Store
	build := func(t *testing.T, src string, clock admit.Clock) *Engine {
		p, err := Parse("test.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		store = redisStore(t, client, redisstore.Config{})
		e, err := newEngine(p, withRedis(store, clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	// A limiter of the same name and limit reads the rate's state in Redis.
	peek := func(t *testing.T, name string, l admit.Limit, key string, at time.Time) int64 {
		lim, err := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: name}, Limit: l})
		if err != nil {
			t.Fatal(err)
		}
		d, err := lim.Allow(context.Background(), admit.Request{Key: key, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}
	testRatePair(t, build, peek, "redis")
}

// ratesBad are policy files whose lists of rates are wrong, with every
// error expected, at its file, line, column and field.
var ratesBad = []struct {
	name, src string
	want      []string
}{
	{"empty list", "rules:\n  - name: a\n    match: k\n    rate: []\n",
		[]string{`p.yaml:4:11: rules[0].rate: a list of 0 rates: give 1 to 8`}},
	{"too many", "rules:\n  - name: a\n    match: k\n    rate: [1/s, 2/s, 3/s, 4/s, 5/s, 6/s, 7/s, 8/s, 9/s]\n",
		[]string{`p.yaml:4:11: rules[0].rate: a list of 9 rates: give 1 to 8`}},
	{"bad item", "rules:\n  - name: a\n    match: k\n    rate: [10/s, 10/x]\n",
		[]string{`p.yaml:4:18: rules[0].rate[1]: invalid rate "10/x": period "x": want a unit (s, min, h, d, week) or a duration (500ms, 5m, 1h30m)`}},
	{"not a string", "rules:\n  - name: a\n    match: k\n    rate: [10/s, {x: 1}]\n",
		[]string{`p.yaml:4:18: rules[0].rate[1]: want a string, got a mapping`}},
	{"burst beside a list", "rules:\n  - name: a\n    match: k\n    rate:\n      - 10/s burst 20\n      - 300/min\n    burst: 5\n",
		[]string{`p.yaml:7:12: rules[0].burst: burst with a list of rates: give each rate its burst in its text (rate: [10/s burst 20, 300/min])`}},
	{"unlimited in a list", "rules:\n  - name: a\n    match: k\n    rate: [10/s, unlimited]\n",
		[]string{`p.yaml:4:18: rules[0].rate[1]: unlimited in a list of rates limits nothing: remove it`}},
	{"twice", "rules:\n  - name: a\n    match: k\n    rate:\n      - 10/s\n      - 10 per 1s\n",
		[]string{`p.yaml:6:9: rules[0].rate[1]: rate 10/s is given twice (rate[0] too)`}},
	{"never refuses", "rules:\n  - name: a\n    match: k\n    rate: [10/s, 600/min]\n",
		[]string{`p.yaml:4:18: rules[0].rate[1]: rate 600/min never refuses what 10/s admits (rate[0]): under gcra it is at least as fast with a burst at least as large; remove it, or make it slower in the long run (300/min with 10/s)`}},
	{"never refuses, first", "rules:\n  - name: a\n    match: k\n    algorithm: token_bucket\n    rate: [600/min, 10/s burst 20]\n",
		[]string{`p.yaml:5:12: rules[0].rate[0]: rate 600/min never refuses what 10/s burst 20 admits (rate[1]): under token_bucket it is at least as fast with a burst at least as large; remove it, or make it slower in the long run (300/min with 10/s)`}},
	{"prefetch", "rules:\n  - name: a\n    match: k\n    rate: [10/s burst 20, 300/min]\n    store: redis\n    prefetch: auto\n",
		[]string{`p.yaml:6:15: rules[0].prefetch: prefetch on a rule with several rates: a block is taken from one rate, and a request must pass them all at once; keep the rule strict, or put one of the rates in a rule of its own`}},
	{"tiers", "tier_tables:\n  plans:\n    default: free\n    tiers:\n      free: {rate: [10/s, 5/s burst 20]}\n      pro: {extends: free, burst: 3}\n      max: {rate: [20/s, 20/s]}\nrules:\n  - {name: t, match: tenant, tiers: plans}\n",
		[]string{
			`p.yaml:6:35: tier_tables.plans.tiers.pro.burst: burst with a list of rates: give each rate its burst in its text (rate: [10/s burst 20, 300/min])`,
			`p.yaml:7:26: tier_tables.plans.tiers.max.rate[1]: rate 20/s is given twice (rate[0] too)`,
		}},
}

func TestParseRatesBad(t *testing.T) {
	for _, tc := range ratesBad {
		_, err := parseAdmit("p.yaml", []byte(tc.src))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.name, strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
		}
	}
}

// TestParseRates: a list of rates, of a rule and of tiers (inherited with
// extends, replaced by a rate of the tier's own), and the Go form, which
// Validate checks alike.
func TestParseRates(t *testing.T) {
	const src = `
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: [10/s burst 20, 300/min]}
      pro: {extends: free, quota: 1000/day}
      max: {extends: free, rate: 100/s}
rules:
  - name: pair
    match: user
    algorithm: fixed_window
    rate: [10/s, 600/min, 20000/day]
  - {name: t, match: tenant, tiers: plans}
`
	p, err := parseAdmit("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Domains[0]
	if r := d.Rules[0]; *r.Rate != admit.PerSecond(10) || len(r.Rates) != 2 || r.Rates[0] != admit.PerMinute(600) || r.Rates[1] != admit.PerDay(20000) || r.Algorithm != admit.AlgFixedWindow {
		t.Errorf("rule pair: %v %v %v", *r.Rate, r.Rates, r.Algorithm)
	}
	tiers := d.Rules[1].Tiers.Tiers
	pair := []admit.Limit{{Rate: 10, Period: time.Second, Burst: 20}, admit.PerMinute(300)}
	for _, name := range []string{"free", "pro"} {
		if got := tiers[name].allRates(); len(got) != 2 || got[0] != pair[0] || got[1] != pair[1] {
			t.Errorf("tier %s: %v, want %v", name, got, pair)
		}
	}
	if got := tiers["max"].allRates(); len(got) != 1 || got[0] != admit.PerSecond(100) {
		t.Errorf("tier max: %v, want its own 100/s alone", got)
	}
	// The Go form: Rates without Rate, and a redundant pair.
	for _, l := range []Limits{
		{Rates: []admit.Limit{admit.PerSecond(1)}},
		{Rate: &pair[1], Rates: []admit.Limit{admit.PerSecond(10), admit.PerMinute(300)}},
	} {
		p := &Policy{Domains: []*Domain{{Name: "d", Rules: []*Rule{{Name: "r", Match: []Matcher{{Key: "k"}}, Limits: l}}}}}
		if err := p.Validate(); err == nil {
			t.Errorf("Validate of %v %v: no error", l.Rate, l.Rates)
		}
	}
}
