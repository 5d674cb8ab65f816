package bench

// Redis: admit's redisstore against go-redis/redis_rate on the same Redis,
// started by the benchmark itself (redis-server on a free port, nothing
// saved to disk), in one run.
//
//   - BenchmarkRedisGCRA: GCRA checks from 64 goroutines on one hot key and
//     on 10,000 keys, every check admitted (1e9 per second). Reports
//     checks/s and the p50 and p99 latency of one check.
//   - BenchmarkRedisDenied: one hot key in denial (1 per hour, already
//     used). Reports checks/s and the Redis commands per check (from INFO
//     commandstats): admit answers from its deny cache.
//
// Both libraries get one go-redis client each with a pool of 64
// connections; admit's Store runs its defaults (4 pipelines, batches of up
// to 256 checks, no batching window).

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/bench/internal/redisbench"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// redisAddr starts one redis-server for the benchmarks of this run and
// returns its address; it skips when redis-server is not installed.
var redisAddr = sync.OnceValues(func() (string, error) {
	srv, err := redisbench.Start()
	if err != nil {
		return "", err
	}
	redisSrv = srv
	return srv.Addr, nil
})

var redisSrv *redisbench.Server

// quiet drops go-redis's log lines (a refused dial per check during the
// outage benchmark).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	code := m.Run()
	if redisSrv != nil {
		redisSrv.Stop()
	}
	os.Exit(code)
}

func redisClient(b *testing.B) *redis.Client {
	addr, err := redisAddr()
	if err != nil {
		b.Skip(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	b.Cleanup(func() { c.Close() })
	return c
}

// redisLib is one library's Redis GCRA check.
type redisLib struct {
	name string
	make func(b *testing.B, c *redis.Client, rate int, period time.Duration, burst int) func(ctx context.Context, key string) (bool, error)
}

// redisLibs are the GCRA limiters of redisbench.Libs: admit's store and
// redis_rate.
var redisLibs = func() []redisLib {
	var libs []redisLib
	for _, lib := range redisbench.Libs {
		if lib.GCRA {
			libs = append(libs, redisLib{lib.Name, func(b *testing.B, c *redis.Client, rate int, period time.Duration, burst int) func(context.Context, string) (bool, error) {
				return newCheck(b, lib, c, admit.Limit{Rate: int64(rate), Period: period, Burst: int64(burst)})
			}})
		}
	}
	return libs
}()

// newCheck builds lib's limiter on c for limit, under a key prefix of its
// own, and releases it when b ends.
func newCheck(b *testing.B, lib redisbench.Lib, c *redis.Client, limit admit.Limit) redisbench.Check {
	prefix := "bench-" + lib.Name + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	check, done, err := lib.New(c, redisbench.Setup{Prefix: prefix, Limit: limit, Instances: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(done)
	return check
}

// latencies samples check latencies from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))]) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// runRedis runs check from 64 goroutines and reports checks/s and latency.
func runRedis(b *testing.B, check func(ctx context.Context, key string) (bool, error), keys []string, wantAllowed bool) {
	ctx := context.Background()
	var lat latencies
	var next atomic.Uint64
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		own := make([]time.Duration, 0, 1024)
		for pb.Next() {
			k := keys[int(next.Add(1))%len(keys)]
			t0 := time.Now()
			ok, err := check(ctx, k)
			own = append(own, time.Since(t0))
			if err != nil {
				b.Error(err)
				return
			}
			if ok != wantAllowed {
				b.Errorf("allowed %v, want %v", ok, wantAllowed)
				return
			}
		}
		lat.add(own)
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "checks/s")
	lat.report(b)
}

func BenchmarkRedisGCRA(b *testing.B) {
	c := redisClient(b)
	tenK := make([]string, 10_000)
	for i := range tenK {
		tenK[i] = "client-" + strconv.Itoa(i)
	}
	for _, shape := range []struct {
		name string
		keys []string
	}{{"hot-key", []string{"hot"}}, {"10k-keys", tenK}} {
		for _, lib := range redisLibs {
			b.Run(shape.name+"/"+lib.name, func(b *testing.B) {
				check := lib.make(b, c, 1e9, time.Second, 1e9)
				runRedis(b, check, shape.keys, true)
			})
		}
	}
}

func BenchmarkRedisDenied(b *testing.B) {
	c := redisClient(b)
	for _, lib := range redisLibs {
		b.Run(lib.name, func(b *testing.B) {
			check := lib.make(b, c, 1, time.Hour, 1)
			ctx := context.Background()
			check(ctx, "hot") // uses the burst: denied from now on
			check(ctx, "hot") // and remembered as denied
			before := scriptCalls(b, c)
			runRedis(b, check, []string{"hot"}, false)
			b.ReportMetric(float64(scriptCalls(b, c)-before)/float64(b.N), "redis-cmds/op")
		})
	}
}

// scriptCalls returns the number of EVAL and EVALSHA calls Redis has run.
func scriptCalls(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for line := range strings.SplitSeq(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
				total += n
			}
		}
	}
	return total
}

// BenchmarkRedisFleet: four Stores (four clients, as four processes would
// have) share one key limited to 1000 per second with a burst of 100, and
// are offered 10 times that for 5 s (0.2 s with -short). Reports the
// admitted count over the ideal one, burst + rate × elapsed on Redis's
// clock, and fails if it is ever above 1.
func BenchmarkRedisFleet(b *testing.B) {
	addr, err := redisAddr()
	if err != nil {
		b.Skip(err)
	}
	const rate, burst, instances, perInstance = 1000, 100, 4, 8
	run := 5 * time.Second
	if testing.Short() {
		run = 200 * time.Millisecond
	}
	prefix := "bench-fleet:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	ctx := context.Background()
	for b.Loop() {
		var lims []*redisstore.Limiter
		var first *redis.Client
		for range instances {
			c := redis.NewClient(&redis.Options{Addr: addr})
			if first == nil {
				first = c
			}
			defer c.Close()
			s, err := redisstore.New(c, redisstore.Config{Prefix: prefix})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			lim, err := s.Limiter(redisstore.LimiterConfig{Limit: admit.Limit{Rate: rate, Period: time.Second, Burst: burst}})
			if err != nil {
				b.Fatal(err)
			}
			lims = append(lims, lim)
		}
		key := "shared-" + strconv.Itoa(b.N)
		redisNow := func() time.Time {
			t, err := first.Time(ctx).Result()
			if err != nil {
				b.Fatal(err)
			}
			return t
		}
		start := redisNow()
		var admitted, offered atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(run)
		// Each goroutine offers one check per 2.5 ms (plus the check's own
		// time): 32 goroutines offer about 10,000 per second, 10 times the
		// rate (reported as offered/s).
		for _, lim := range lims {
			for range perInstance {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						d, err := lim.Allow(ctx, admit.Request{Key: key, N: 1})
						if err != nil {
							b.Error(err)
							return
						}
						offered.Add(1)
						if d.Allowed {
							admitted.Add(1)
						}
						time.Sleep(2500 * time.Microsecond)
					}
				})
			}
		}
		wg.Wait()
		elapsed := redisNow().Sub(start)
		ideal := burst + int64(rate*elapsed.Seconds())
		b.ReportMetric(float64(admitted.Load())/float64(ideal), "admitted/ideal")
		b.ReportMetric(float64(offered.Load())/elapsed.Seconds(), "offered/s")
		if admitted.Load() > ideal {
			b.Fatalf("admitted %d, more than the ideal %d over %v", admitted.Load(), ideal, elapsed)
		}
	}
}

// BenchmarkRedisOutage: decisions while Redis is down (nothing listens at
// the client's address), through a compose.Guard falling back to a local
// share of the limit, from 64 goroutines: as a breaker (the store is not
// called while open) and without one (every check tries the store first,
// and is refused at once by the operating system). Reports p50/p99.
func BenchmarkRedisOutage(b *testing.B) {
	for _, breaker := range []bool{true, false} {
		name := "fallback"
		if breaker {
			name = "breaker"
		}
		b.Run(name, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1})
			defer c.Close()
			s, err := redisstore.New(c, redisstore.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			shared := admit.Limit{Rate: 1e9, Period: time.Second, Burst: 1e9}
			lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: shared})
			local, _ := keyed.LocalShare(keyed.Config{Limit: shared}, 4)
			policy := compose.Fallback(local)
			if breaker {
				policy = compose.Breaker(policy)
			}
			g, err := compose.NewGuard(lim, compose.GuardConfig{Policy: policy})
			if err != nil {
				b.Fatal(err)
			}
			check := func(ctx context.Context, key string) (bool, error) {
				d, err := g.Allow(ctx, admit.Request{Key: key, N: 1})
				return d.Allowed, err
			}
			runRedis(b, check, []string{"a", "b", "c"}, true)
		})
	}
}
