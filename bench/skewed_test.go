package bench

// Skewed traffic on Redis (issue 15's baseline): every limiter of
// redisbench.Libs (admit's strict GCRA store, go-redis/redis_rate,
// ulule/limiter's fixed window), one after the other in one run, on one
// redis-server started by the benchmark, under the same traffic:
//
//   - 100,000 keys, drawn from a Zipf distribution with s = 1.1 and v = 1
//     (math/rand/v2's exact sampler, seeded): key i (from 0) with
//     probability proportional to (1+i)^-1.1, so the hottest key gets
//     about 13.5% of the checks and the top 10 about 36%;
//   - a limit of 1000 per second with a burst of 100 per key;
//   - 64 goroutines in a closed loop (each sends its next check when its
//     last one is answered).
//
// The key sequence is drawn once, before any timing (2^21 draws, 2^14
// with -short); each goroutine walks it from its own offset, so a check
// costs the driver an index and two clock reads.
//
// Reported per library, beside ns/op and allocs/op (which include the
// driver's latency samples, amortised to nothing):
//
//   - checks/s, and the p50, p99 and p99.9 latency of one check (every
//     check timed, into one slice per goroutine, merged and sorted at the
//     end);
//   - redis-cmds/op: commands Redis ran per check, from INFO commandstats
//     (the delta of the sum of calls over every command but INFO, across
//     the run), the commands that scripts call included; redis-evals/op:
//     the EVAL and EVALSHA calls alone; redis-cmd-µs/op: the time those
//     commands took (commandstats usec);
//   - redis-cpu-µs/op: the CPU time of the redis-server process per check
//     (INFO cpu, used_cpu_user + used_cpu_sys), and redis-cores: that CPU
//     time over the run's wall time (1 is the single main thread saturated;
//     redis-main-cores is that thread's alone);
//   - go-cpu-µs/op and go-cores: the same for this process (getrusage), the
//     driver, go-redis and the limiter together;
//   - admitted: the share of checks admitted, and gcra-bound: the largest
//     share a GCRA of the limit could admit on this run's key counts
//     (sum over keys of min(checks, burst + rate × run time), over the
//     checks), so that each library is seen enforcing the limit.
//
// With -short (the smoke run) the sequence is short; the figures then
// mean nothing.

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/bench/internal/redisbench"
	"github.com/redis/go-redis/v9"
)

const (
	skewKeys       = 100_000
	skewS          = 1.1
	skewGoroutines = 64
)

var skewLimit = admit.Limit{Rate: 1000, Period: time.Second, Burst: 100}

// skewTraffic returns the keys and the sequence of indexes into them that
// every goroutine walks.
var skewTraffic = sync.OnceValues(func() ([]string, []int32) {
	keys := make([]string, skewKeys)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	seq := zipfSeq(1)
	return keys, seq
})

// zipfSeq draws the sequence of key indexes the skewed benchmarks walk:
// 2^21 draws (2^14 with -short) from math/rand/v2's Zipf over skewKeys
// keys, s = skewS, v = 1, seeded with PCG(15, stream).
func zipfSeq(stream uint64) []int32 {
	n := 1 << 21
	if testing.Short() {
		n = 1 << 14
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(15, stream)), skewS, 1, skewKeys-1)
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(z.Uint64())
	}
	return seq
}

func BenchmarkSkewed(b *testing.B) {
	c := redisClient(b)
	keys, seq := skewTraffic()
	for _, lib := range redisbench.Libs {
		b.Run(lib.Name, func(b *testing.B) {
			runSkewed(b, c, newCheck(b, lib, c, skewLimit), keys, seq)
		})
	}
}

// skewWorker is one goroutine's share of a run, padded so that two
// goroutines' counters never share a cache line.
type skewWorker struct {
	from, n, allowed int
	lat              []time.Duration
	_                [64]byte
}

// runSkewed runs check over the sequence from 64 goroutines and reports.
func runSkewed(b *testing.B, c *redis.Client, check redisbench.Check, keys []string, seq []int32) {
	ctx := context.Background()
	procs := runtime.GOMAXPROCS(0)
	par := max(skewGoroutines/procs, 1)
	workers := make([]skewWorker, par*procs)
	for i := range workers {
		workers[i].from = i * len(seq) / len(workers)
		workers[i].lat = make([]time.Duration, 0, 2*b.N/len(workers)+64)
	}
	var ids atomic.Int32
	runtime.GC()
	stats0 := redisStats(b, c)
	cpu0, cpuOK := processCPU()
	b.SetParallelism(par)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		w := &workers[ids.Add(1)-1]
		i := w.from
		for pb.Next() {
			k := keys[seq[i]]
			if i++; i == len(seq) {
				i = 0
			}
			t := time.Now()
			ok, err := check(ctx, k)
			w.lat = append(w.lat, time.Since(t))
			if err != nil {
				b.Error(err)
				return
			}
			if ok {
				w.allowed++
			}
		}
		w.n = len(w.lat)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, _ := processCPU()
	st := redisStats(b, c).Sub(stats0)

	n := float64(b.N)
	per := func(d time.Duration) float64 { return float64(d) / 1e3 / n }
	b.ReportMetric(n/elapsed.Seconds(), "checks/s")
	reportLatency(b, workers)
	b.ReportMetric(float64(st.Calls)/n, "redis-cmds/op")
	b.ReportMetric(float64(st.Evals)/n, "redis-evals/op")
	b.ReportMetric(float64(st.Usec)/n, "redis-cmd-µs/op")
	b.ReportMetric(per(st.CPU), "redis-cpu-µs/op")
	b.ReportMetric(st.CPU.Seconds()/elapsed.Seconds(), "redis-cores")
	b.ReportMetric(st.MainCPU.Seconds()/elapsed.Seconds(), "redis-main-cores")
	if cpuOK {
		b.ReportMetric(per(cpu1-cpu0), "go-cpu-µs/op")
		b.ReportMetric((cpu1-cpu0).Seconds()/elapsed.Seconds(), "go-cores")
	}
	allowed := 0
	for _, w := range workers {
		allowed += w.allowed
	}
	b.ReportMetric(float64(allowed)/n, "admitted")
	b.ReportMetric(float64(gcraBound(workers, seq, elapsed))/n, "gcra-bound")
}

// reportLatency reports the p50, p99 and p99.9 of every check's latency.
func reportLatency(b *testing.B, workers []skewWorker) {
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(q(0.999), "p99.9-µs")
}

// gcraBound returns the most checks a GCRA of skewLimit could admit in a
// run of the given length that checked what workers did: the sum over the
// keys of min(checks of the key, burst + rate × elapsed).
func gcraBound(workers []skewWorker, seq []int32, elapsed time.Duration) int64 {
	counts := make([]int64, skewKeys)
	for _, w := range workers {
		for j := range w.n {
			counts[seq[(w.from+j)%len(seq)]]++
		}
	}
	most := skewLimit.Burst + int64(float64(skewLimit.Rate)*elapsed.Seconds()/skewLimit.Period.Seconds())
	var sum int64
	for _, n := range counts {
		sum += min(n, most)
	}
	return sum
}

// redisStats reads c's server's counters, failing b if it cannot.
func redisStats(b *testing.B, c *redis.Client) redisbench.Stats {
	st, err := redisbench.ReadStats(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return st
}
