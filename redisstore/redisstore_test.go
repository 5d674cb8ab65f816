package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newStore returns a Store on client under a fresh prefix, closed with the
// test. Keys live a day, so that explicit instants never race Redis's
// clock.
// newStore returns a Store on client configured by cfg, under a fresh
// prefix (unless cfg gives one), with keys that live a day at least
// (unless cfg says otherwise), closed with the test.
func newStore(t testing.TB, client redis.UniversalClient, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = redistest.Prefix(t)
	}
	if cfg.MinTTL == 0 {
		cfg.MinTTL = 24 * time.Hour
	}
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// limitSubject passes the scenario's limit per call (Request.Limit).
type limitSubject struct {
	lim *redisstore.Limiter
	l   admit.Limit
}

func (s limitSubject) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	r.Limit = s.l
	return s.lim.Allow(ctx, r)
}

// factory makes limiters on client, each under its own prefix.
func factory(client func(t testing.TB) redis.UniversalClient, cfg redisstore.Config) admittest.Factory {
	return func(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
		t.Helper()
		lim, err := newStore(t, client(t), cfg).Limiter(redisstore.LimiterConfig{Algorithm: alg, Limit: l})
		if err != nil {
			t.Fatalf("Limiter(%v, %v): %v", alg, l, err)
		}
		return lim
	}
}

func standalone(t testing.TB) redis.UniversalClient { return redistest.Standalone(t).Client(t) }
func cluster(t testing.TB) redis.UniversalClient    { return redistest.SharedCluster(t).Client(t) }

func TestConformanceStandalone(t *testing.T) {
	admittest.Run(t, factory(standalone, redisstore.Config{}))
}

func TestConformanceStandaloneNoDenyCache(t *testing.T) {
	admittest.Run(t, factory(standalone, redisstore.Config{DenyCacheKeys: -1}))
}

func TestConformanceCluster(t *testing.T) {
	admittest.Run(t, factory(cluster, redisstore.Config{}))
}

func TestConformancePerCallLimit(t *testing.T) {
	admittest.Run(t, func(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
		own := admit.PerHour(7)
		if l == (admit.Limit{}) {
			own = l // the zero Limit per call asks for the own limit: make it the zero Limit
		}
		lim, err := newStore(t, standalone(t), redisstore.Config{}).Limiter(redisstore.LimiterConfig{Algorithm: alg, Limit: own})
		if err != nil {
			t.Fatal(err)
		}
		return limitSubject{lim, l}
	})
}

func TestDifferentialStandalone(t *testing.T) {
	admittest.RunDifferential(t, factory(standalone, redisstore.Config{}), 1, 8)
}

func TestDifferentialCluster(t *testing.T) {
	admittest.RunDifferential(t, factory(cluster, redisstore.Config{}), 2, 4)
}

// Many goroutines checking one key concurrently are batched into shared
// pipelines, and admit exactly the burst.
func TestConcurrentChecksAdmitExactlyTheBurst(t *testing.T) {
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, client(t), redisstore.Config{})
			lim, err := s.Limiter(redisstore.LimiterConfig{Limit: admit.Limit{Rate: 100, Period: time.Hour, Burst: 100}})
			if err != nil {
				t.Fatal(err)
			}
			now := admittest.At(0)
			ctx := t.Context()
			const workers, each = 16, 20
			admitted := make(chan int, workers)
			for w := range workers {
				go func() {
					got := 0
					for i := range each {
						key := "hot"
						if i%2 == 1 {
							key = "other-" + string(rune('a'+w))
						}
						d, err := lim.Allow(ctx, admit.Request{Key: key, N: 1, At: now})
						if err != nil {
							t.Error(err)
						}
						if d.Allowed && key == "hot" {
							got++
						}
					}
					admitted <- got
				}()
			}
			total := 0
			for range workers {
				total += <-admitted
			}
			if total != 100 {
				t.Fatalf("admitted %d on the hot key, want exactly the burst, 100", total)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	lim, err := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(10)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lim.Allow(ctx, admit.Request{Key: strings.Repeat("k", 1<<20), N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("a 1 MB key: err = %v, want ErrKeyTooLong", err)
	}
	if _, err := lim.Allow(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n = -1: err = %v, want ErrInvalidCost", err)
	}
	if _, err := lim.Allow(ctx, admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: -1}}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Errorf("a negative limit: err = %v, want ErrInvalidLimit", err)
	}
	// Any bytes in a key, braces included, are fine.
	for _, key := range []string{"", "{", "}", "{a}", "a}{b", "\x00\xff", strings.Repeat("é", 1000)} {
		if d, err := lim.Allow(ctx, admit.Request{Key: key, N: 1}); err != nil || !d.Allowed {
			t.Errorf("key %q: %+v, %v", key, d, err)
		}
	}
	for _, cfg := range []redisstore.Config{
		{Prefix: "a{b"}, {Prefix: strings.Repeat("p", 129)}, {Pipelines: -1}, {Pipelines: 1025},
		{MaxBatch: -1}, {MaxBatch: 1<<16 + 1}, {BatchWindow: -time.Second}, {BatchWindow: 2 * time.Second},
		{DenyCacheKeys: 1<<26 + 1}, {Timeout: -1}, {MaxKeyLength: -1}, {MaxKeyLength: 1<<24 + 1}, {MinTTL: -1},
	} {
		if _, err := redisstore.New(standalone(t), cfg); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("New(%+v): err = %v, want admit.ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := redisstore.New(nil, redisstore.Config{}); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("New(nil): err = %v", err)
	}
	for _, name := range []string{"a:b", "{", "}", strings.Repeat("n", 129)} {
		if _, err := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: name}, Limit: admit.PerSecond(1)}); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("name %q: err = %v, want admit.ErrInvalidConfig", name, err)
		}
	}
	if _, err := s.Limiter(redisstore.LimiterConfig{Algorithm: admit.Algorithm(200), Limit: admit.PerSecond(1)}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "unknown algorithm Algorithm(200)") {
		t.Errorf("an unknown algorithm: err = %v, want ErrInvalidConfig naming it", err)
	}
}

// A key that holds something else than our state is an error, and the
// value is left alone.
func TestWrongTypeKey(t *testing.T) {
	srv := redistest.Standalone(t)
	client := srv.Client(t)
	prefix := redistest.Prefix(t)
	s, err := redisstore.New(client, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.PerSecond(10)})
	ctx := t.Context()
	if _, err := lim.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil {
		t.Fatal(err)
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys under the prefix: %q, %v", keys, err)
	}
	client.Del(ctx, keys[0])
	client.HSet(ctx, keys[0], "f", "v")
	if _, err := lim.Allow(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("a hash at the key: err = %v, want ErrStore", err)
	}
	if v, _ := client.HGet(ctx, keys[0], "f").Result(); v != "v" {
		t.Errorf("the hash was changed: %q", v)
	}
	client.Del(ctx, keys[0])
	client.Set(ctx, keys[0], "garbage", 0)
	if _, err := lim.Allow(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("garbage at the key: err = %v, want ErrStore", err)
	}
}

// Keys carry the prefix, a hash tag of the key and the limiter's name, and
// expire when their state is full again.
func TestKeyLayoutAndExpiry(t *testing.T) {
	client := redistest.Standalone(t).Client(t)
	prefix := redistest.Prefix(t)
	s, _ := redisstore.New(client, redisstore.Config{Prefix: prefix})
	defer s.Close()
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.Limit{Rate: 10, Period: time.Second, Burst: 10}})
	ctx := t.Context()
	if _, err := lim.Allow(ctx, admit.Request{Key: "a}{b", N: 5}); err != nil {
		t.Fatal(err)
	}
	keys, _ := client.Keys(ctx, prefix+"*").Result()
	if len(keys) != 1 {
		t.Fatalf("keys: %q", keys)
	}
	k := keys[0]
	if !strings.HasPrefix(k, prefix+"{") || !strings.HasSuffix(k, ":api:a}{b") || strings.Index(k, "}") != len(prefix)+17 {
		t.Errorf("key %q: want %s{<16 hex>}:<alg>:api:a}{b", k, prefix)
	}
	pttl, _ := client.PTTL(ctx, k).Result()
	if pttl <= 0 || pttl > 502*time.Millisecond {
		t.Errorf("PTTL %v after 5 of 10/s: want about 500ms", pttl)
	}
}

// The script is reloaded when Redis has lost it (SCRIPT FLUSH mid-run).
func TestScriptFlushMidRun(t *testing.T) {
	for name, client := range map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		t.Run(name, func(t *testing.T) {
			c := client(t)
			s := newStore(t, c, redisstore.Config{})
			lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(1000)})
			ctx := t.Context()
			for i := range 50 {
				if i%10 == 5 {
					if cc, ok := c.(*redis.ClusterClient); ok {
						err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
						if err != nil {
							t.Fatal(err)
						}
					} else if err := c.ScriptFlush(ctx).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := lim.Allow(ctx, admit.Request{Key: "k" + string(rune('a'+i%26)), N: 1}); err != nil {
					t.Fatalf("check %d after SCRIPT FLUSH: %v", i, err)
				}
			}
		})
	}
}

// A batch and layers.
func TestBatchAndLayers(t *testing.T) {
	s := newStore(t, cluster(t), redisstore.Config{})
	ip, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "ip"}, Limit: admit.Limit{Rate: 2, Period: time.Hour, Burst: 2}})
	tenant, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "tenant"}, Algorithm: admit.AlgFixedWindow, Limit: admit.Limit{Rate: 3, Period: time.Hour, Burst: 3}})
	ctx := t.Context()
	now := admittest.At(0)
	var reqs []admit.Request
	for i := range 40 {
		reqs = append(reqs, admit.Request{Key: "k" + string(rune('a'+i%20)), N: 1, At: now})
	}
	ds, err := ip.AllowBatch(ctx, reqs, nil)
	if err != nil || len(ds) != 40 {
		t.Fatalf("batch: %d decisions, %v", len(ds), err)
	}
	for i, d := range ds {
		if !d.Allowed || d.Remaining != int64(1-i/20) {
			t.Errorf("batch request %d: %+v", i, d)
		}
	}
	// Layers: ip x (burst 2) and ip y under tenant t (3 per hour): the
	// fourth request is denied by the tenant and consumes nothing.
	layers := func(ipKey string) []redisstore.Layer {
		return []redisstore.Layer{{Limiter: ip, Key: ipKey}, {Limiter: tenant, Key: "t"}}
	}
	for i, want := range []bool{true, true, true, false} {
		key := "x"
		if i >= 2 {
			key = "y"
		}
		d, all, err := s.AllowLayers(ctx, admit.Request{Key: "t", N: 1, At: now}, layers(key), nil)
		if err != nil || d.Allowed != want || len(all) != 2 {
			t.Fatalf("request %d: %+v %v, want allowed %v", i, d, err, want)
		}
		if !want && d.Rule != "tenant" {
			t.Errorf("request %d denied by %q, want tenant", i, d.Rule)
		}
	}
	// y was admitted once (request 3); the denied request 4 took nothing
	// from it.
	d, _, _ := s.AllowLayers(ctx, admit.Request{Key: "t", N: 0, At: now}, []redisstore.Layer{{Limiter: ip, Key: "y"}}, nil)
	if d.Remaining != 1 {
		t.Errorf("ip y after a denied layered request: remaining %d, want 1", d.Remaining)
	}
}

// An unreachable Redis fails fast with ErrStore; a wrong password too.
func TestUnreachableAndAuth(t *testing.T) {
	srv := redistest.NewStandalone(t)
	addr := srv.Addr()
	srv.Kill()
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer client.Close()
	s, err := redisstore.New(client, redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(10)})
	start := time.Now()
	if _, err := lim.Allow(t.Context(), admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("unreachable: err = %v, want ErrStore", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("unreachable Redis took %v", el)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).ConfigSet(t.Context(), "requirepass", "right").Err(); err != nil {
		t.Fatal(err)
	}
	bad := redis.NewClient(&redis.Options{Addr: addr, Password: "wrong", MaxRetries: -1})
	defer bad.Close()
	s2, _ := redisstore.New(bad, redisstore.Config{})
	defer s2.Close()
	lim2, _ := s2.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(10)})
	if _, err := lim2.Allow(t.Context(), admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("wrong password: err = %v, want ErrStore", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s, err := redisstore.New(standalone(t), redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(10)})
	s.Close()
	s.Close()
	if _, err := lim.Allow(t.Context(), admit.Request{Key: "k", N: 1}); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
}

// Through Sentinel (a failover client finds the master), decisions are the
// same.
func TestConformanceSentinel(t *testing.T) {
	sentinel := redistest.NewSentinel(t)
	client := sentinel.Client(t)
	admittest.Run(t, factory(func(testing.TB) redis.UniversalClient { return client }, redisstore.Config{}), admit.AlgGCRA, admit.AlgSlidingLog)
}

// Close while checks are in flight: every caller returns (a decision or
// ErrClosed), none hangs, and no worker is left behind.
func TestCloseUnderLoad(t *testing.T) {
	client := standalone(t)
	before := runtime.NumGoroutine()
	s, err := redisstore.New(client, redisstore.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(1e6)})
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := lim.Allow(context.Background(), admit.Request{Key: "k" + strconv.Itoa(w*1000+i%50), N: 1})
				if errors.Is(err, admit.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // let the load build up
	s.Close()
	wg.Wait()
	for start := time.Now(); runtime.NumGoroutine() > before+2; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
	}
}

// obsRecorder records the events of a Store and its Limiter.
type obsRecorder struct {
	admit.NopObserver
	mu      sync.Mutex
	decided []admit.DecisionEvent
	calls   []admit.StoreEvent
}

func (o *obsRecorder) Decided(e admit.DecisionEvent) {
	o.mu.Lock()
	o.decided = append(o.decided, e)
	o.mu.Unlock()
}

func (o *obsRecorder) StoreCalled(e admit.StoreEvent) {
	o.mu.Lock()
	o.calls = append(o.calls, e)
	o.mu.Unlock()
}

// The observer hears of every decision, cached ones included, and of each
// round trip to Redis, which a cached denial does not make.
func TestObserver(t *testing.T) {
	obs := &obsRecorder{}
	s := newStore(t, standalone(t), redisstore.Config{Options: admit.Options{Observer: obs, Name: "store"}})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.Limit{Rate: 1, Period: time.Hour, Burst: 1}})
	ctx := t.Context()
	now := admittest.At(0)
	for _, want := range []bool{true, false, false} {
		if d, err := lim.Allow(ctx, admit.Request{Key: "k", N: 1, At: now}); err != nil || d.Allowed != want {
			t.Fatalf("%+v %v, want allowed %v", d, err, want)
		}
	}
	if len(obs.decided) != 3 {
		t.Fatalf("%d decisions observed, want 3", len(obs.decided))
	}
	for i, e := range obs.decided {
		if e.Limiter != "api" || e.Key != "k" || e.N != 1 || e.Decision.Rule != "api" || e.Decision.Allowed != (i == 0) {
			t.Errorf("decision event %d: %+v", i, e)
		}
	}
	if len(obs.calls) != 2 {
		t.Fatalf("%d store calls observed, want 2 (the third check is the deny cache's)", len(obs.calls))
	}
	for _, e := range obs.calls {
		if e.Limiter != "store" || e.Op != "decide" || e.Keys != 1 || e.Err != nil || e.Duration <= 0 {
			t.Errorf("store event %+v", e)
		}
	}
}

// Layers with bad input are refused before anything is sent, and nothing
// is consumed.
func TestLayersBadInput(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	other := newStore(t, standalone(t), redisstore.Config{})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "ip"}, Limit: admit.Limit{Rate: 1, Period: time.Hour, Burst: 1}})
	foreign, _ := other.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(1)})
	ctx := t.Context()
	now := admittest.At(0)
	bad := admit.Limit{Rate: -5}
	many := make([]redisstore.Layer, 257)
	for i := range many {
		many[i] = redisstore.Layer{Limiter: lim, Key: "k"}
	}
	for name, c := range map[string]struct {
		tag    string
		n      int64
		layers []redisstore.Layer
		want   error
		text   string
	}{
		"no layers":     {"t", 1, nil, admit.ErrInvalidConfig, "redisstore: invalid argument: 0 layers, want 1 to 256"},
		"too many":      {"t", 1, many, admit.ErrInvalidConfig, "redisstore: invalid argument: 257 layers, want 1 to 256"},
		"nil limiter":   {"t", 1, []redisstore.Layer{{Key: "k"}}, admit.ErrInvalidConfig, "redisstore: invalid argument: layer 0: a limiter of this store is needed"},
		"another store": {"t", 1, []redisstore.Layer{{Limiter: foreign, Key: "k"}}, admit.ErrInvalidConfig, "redisstore: invalid argument: layer 0: a limiter of this store is needed"},
		"negative n":    {"t", -1, []redisstore.Layer{{Limiter: lim, Key: "k"}}, admit.ErrInvalidCost, ""},
		"bad limit":     {"t", 1, []redisstore.Layer{{Limiter: lim, Key: "k"}, {Limiter: lim, Key: "j", Limit: &bad}}, admit.ErrInvalidLimit, ""},
		"1 MB key":      {"t", 1, []redisstore.Layer{{Limiter: lim, Key: strings.Repeat("k", 1<<20)}}, admit.ErrKeyTooLong, ""},
		"1 MB tag":      {strings.Repeat("t", 1<<20), 1, []redisstore.Layer{{Limiter: lim, Key: "k"}}, admit.ErrKeyTooLong, ""},
	} {
		d, _, err := s.AllowLayers(ctx, admit.Request{Key: c.tag, N: c.n, At: now}, c.layers, nil)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.text) || d.Allowed {
			t.Errorf("%s: %+v, %v; want a refusal wrapping %v saying %q", name, d, err, c.want, c.text)
		}
	}
	// Nothing was consumed: the one event of "k" under tag "t" is there.
	if d, _, err := s.AllowLayers(ctx, admit.Request{Key: "t", N: 1, At: now}, []redisstore.Layer{{Limiter: lim, Key: "k"}}, nil); err != nil || !d.Allowed {
		t.Errorf("after the refusals: %+v %v", d, err)
	}
}

// TestDenyCacheForgetsOnRoom: a sliding log drops its expired entries at
// every decision, so a decision with room for one event (here a request
// above the burst, at a later instant) ends a remembered denial; a caller's
// instant that then goes back before the dropped entries finds room, as
// the step function says. (Found by TestDifferentialStandalone.)
func TestDenyCacheForgetsOnRoom(t *testing.T) {
	l := admit.Limit{Rate: 1, Period: time.Second, Burst: 1} // the log's window: 1s
	lim := factory(standalone, redisstore.Config{})(t, admit.AlgSlidingLog, l)
	model := admittest.Model(admit.AlgSlidingLog, l)
	at := func(d time.Duration) time.Time { return admittest.Epoch.Add(d) }
	for i, r := range []admit.Request{
		{Key: "k", N: 1, At: at(10 * time.Second)},                      // logged at 10s
		{Key: "k", N: 1, At: at(time.Second)},                           // judged at 10s: denied until 11s (cached)
		{Key: "k", N: 2, At: at(11 * time.Second)},                      // above the burst; drops the entry of 10s
		{Key: "k", N: 1, At: at(10*time.Second + 500*time.Millisecond)}, // an empty log: admitted
	} {
		got, err := lim.Allow(t.Context(), r)
		want, _ := model.Allow(t.Context(), r)
		if err != nil || got != want {
			t.Fatalf("request %d %+v: %+v, %v; the model: %+v", i, r, got, err, want)
		}
	}
}

// AllowLayers decides at the instant it is given (it used to send its
// all-or-nothing call without it, deciding on Redis's clock): the same
// instant repeated gives exact figures, the ones Limiter.Allow gives.
func TestLayersAtInstant(t *testing.T) {
	for name, c := range map[string]func(testing.TB) redis.UniversalClient{"standalone": standalone, "cluster": cluster} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, c(t), redisstore.Config{})
			sec, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "sec"}, Limit: admit.PerSecond(3)})
			min, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "min"}, Limit: admit.PerMinute(5)})
			at := admittest.At(time.Hour) // far from Redis's clock
			for i := range 3 {
				d, all, err := s.AllowLayers(t.Context(), admit.Request{Key: "k", N: 1, At: at}, []redisstore.Layer{{Limiter: sec, Key: "k"}, {Limiter: min, Key: "k"}}, nil)
				if err != nil || !d.Allowed || d.ResetAfter != time.Duration(i+1)*time.Second/3+1 && i != 2 || all[1].ResetAfter != time.Duration(i+1)*12*time.Second {
					t.Fatalf("request %d at one instant: %+v %+v %v", i, d, all, err)
				}
			}
			d, err := sec.Allow(t.Context(), admit.Request{Key: "k", N: 0, At: at})
			if err != nil || d.Remaining != 0 || d.ResetAfter != time.Second {
				t.Fatalf("the layer's state read by its limiter at the same instant: %+v %v", d, err)
			}
		})
	}
}
