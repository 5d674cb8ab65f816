package policy

// Helpers of the tests: engines on a manual clock, requests, checks and the decisions wanted.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/internal/stores/inredis"
	"github.com/admit-go/admit/redisstore"
)

// t0 is a Monday noon, UTC, on a whole second.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// engine loads src (this package's format, every rule in memory) into an
// engine on a manual clock at t0, configured by cfg if given.
func engine(t testing.TB, src string, cfg ...Config) (*Engine, *admittest.ManualClock) {
	t.Helper()
	p, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0)
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Clock = clock
	e, err := newEngine(localOnly(p), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clock
}

// desc returns a descriptor of key/value pairs.
func desc(kv ...string) Descriptor {
	var d Descriptor
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, Entry{kv[i], kv[i+1]})
	}
	return d
}

func request(domain string, descs ...Descriptor) *Request {
	return &Request{Domain: domain, Hits: 1, Descriptors: descs}
}

// check runs e.Check and fails the test on an error.
func check(t testing.TB, e *Engine, req *Request, h *compose.Held) *Result {
	t.Helper()
	var res Result
	if err := e.Check(context.Background(), req, h, &res); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return &res
}

// want checks a decision: allowed, the rule that decided, remaining.
func want(t testing.TB, what string, d admit.Decision, allowed bool, rule string, remaining int64) {
	t.Helper()
	if d.Allowed != allowed || d.Rule != rule || d.Remaining != remaining {
		t.Errorf("%s: allowed %v, rule %q, remaining %d; want %v, %q, %d (%+v)", what, d.Allowed, d.Rule, d.Remaining, allowed, rule, remaining, d)
	}
}

// fileText returns the text of the file at path.
func fileText(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// admitOne checks req into a fresh Held and fails the test unless it is
// admitted; it returns the Held and the result.
func admitOne(t *testing.T, e *Engine, req *Request) (*compose.Held, *Result) {
	t.Helper()
	h := new(compose.Held)
	res := check(t, e, req, h)
	if !res.Decision.Allowed {
		t.Fatalf("refused: %+v", res.Decision)
	}
	return h, res
}

// limitOf peeks at req and returns the rate (or cap) of its first status.
func limitOf(t *testing.T, e *Engine, req *Request) admit.Limit {
	t.Helper()
	peek := *req
	peek.Hits = 0
	res := check(t, e, &peek, nil)
	return res.Statuses[0].Decision.Limit
}

// testMemory and testRedis are policy/backends' Memory and Redis, which
// this package's tests cannot import (backends imports policy).
type testMemory struct{}

func (testMemory) Rate(s Spec) (admit.KeyedLimiter, error)  { return stores.Rate(stores.Spec(s)) }
func (testMemory) Quota(s Spec) (admit.KeyedLimiter, error) { return stores.Quota(stores.Spec(s)) }
func (testMemory) Slots(s Spec) (admit.Slots, error)        { return stores.Slots(stores.Spec(s)) }
func (testMemory) Shared() bool                             { return false }

type testRedis struct{ r inredis.Redis }

func (t *testRedis) Rate(s Spec) (admit.KeyedLimiter, error)  { return t.r.Rate(stores.Spec(s)) }
func (t *testRedis) Quota(s Spec) (admit.KeyedLimiter, error) { return t.r.Quota(stores.Spec(s)) }
func (t *testRedis) Slots(s Spec) (admit.Slots, error)        { return t.r.Slots(stores.Spec(s)) }
func (t *testRedis) Shared() bool                             { return true }

// withRedis is the Config of an engine on clock with the Redis store s as
// "redis", its default store, deciding at clock's instants.
func withRedis(s *redisstore.Store, clock admit.Clock) Config {
	b := &testRedis{inredis.Redis{Store: s, Clock: clock}}
	return Config{Options: admit.Options{Clock: clock}, Backends: map[string]Backend{"redis": b}, DefaultStore: "redis"}
}

// newEngine is NewEngine with the local store added to cfg's.
func newEngine(p *Policy, cfg Config) (*Engine, error) {
	backends := map[string]Backend{StoreLocal: testMemory{}}
	for name, b := range cfg.Backends {
		backends[name] = b
	}
	cfg.Backends = backends
	return NewEngine(p, cfg)
}

// clocked is the Config of an engine on clock.
func clocked(clock admit.Clock) Config { return Config{Options: admit.Options{Clock: clock}} }

func (t *testRedis) Rates(specs []Spec) (admit.KeyedLimiter, error) {
	ss := make([]stores.Spec, len(specs))
	for i, s := range specs {
		ss[i] = stores.Spec(s)
	}
	return t.r.Rates(ss)
}
