package bench

// Envoy's rate-limit service on skewed traffic (issue 15): each server a
// process of its own, driven by the same client as BenchmarkRLS (64
// ShouldRateLimit calls in flight over 4 HTTP/2 connections, one
// descriptor per call), with the key of each call drawn as
// BenchmarkSkewed's: remote_address from 100,000 values, Zipf s = 1.1,
// limited to 1000 per second each in fixed windows of a second (so the
// hottest values are refused most of the time).
//
//   - admit-serve-memory: `admit serve` on its in-memory store, with the
//     envoyproxy/ratelimit configuration file;
//   - admit-serve-redis: the same on Redis, every check on Redis (strict);
//   - admit-serve-prefetch: the same rule in admit's own format with
//     `prefetch: auto`, on Redis;
//   - envoyproxy-ratelimit: its own server on the same Redis with the
//     same file.
//
// Reported beside checks/s, p50 and p99: admitted (the share of calls
// answered OK), server-cpu-µs/op (the CPU time of the server process per
// check, from /proc, user and system, in ticks of 10 ms), server-cores
// (that CPU time over the run's wall time), and on Redis
// redis-cmds/op, redis-evals/op and redis-cpu-µs/op as BenchmarkSkewed's.
// The driver, Redis and the server share the 2 cores.

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// rlsSkewedEnvoy is envoyproxy/ratelimit's file: 1000 per second per
// remote_address.
const rlsSkewedEnvoy = `domain: bench
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 1000
`

// rlsSkewedPrefetch is the same limit in admit's format, prefetching.
const rlsSkewedPrefetch = `version: 1
domain: bench
keys: [remote_address]
defaults: {store: redis}
rules:
  - {name: per-address, match: remote_address, rate: 1000/s, algorithm: fixed_window, prefetch: auto}
`

// rlsSkewedKeys returns the remote addresses and the sequence of indexes
// into them that the callers walk (each from its own offset).
var rlsSkewedKeys = sync.OnceValues(func() ([]string, []int32) {
	addrs := make([]string, skewKeys)
	for i := range addrs {
		addrs[i] = "10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	seq := zipfSeq(2)
	return addrs, seq
})

func BenchmarkRLSSkewed(b *testing.B) {
	if testing.Short() {
		b.Skip("runs servers as processes and installs envoyproxy/ratelimit; not under -short")
	}
	counters := func(b *testing.B) func() (int64, int64, time.Duration) {
		c := redisClient(b)
		return func() (int64, int64, time.Duration) {
			st := redisStats(b, c)
			return st.Calls, st.Evals, st.CPU
		}
	}
	b.Run("admit-serve-memory", func(b *testing.B) {
		target, pid := admitServe(b, rlsSkewedEnvoy, false)
		benchRLSSkewed(b, target, pid, nil)
	})
	b.Run("admit-serve-redis", func(b *testing.B) {
		target, pid := admitServe(b, rlsSkewedEnvoy, true)
		benchRLSSkewed(b, target, pid, counters(b))
	})
	b.Run("admit-serve-prefetch", func(b *testing.B) {
		target, pid := admitServe(b, rlsSkewedPrefetch, true)
		benchRLSSkewed(b, target, pid, counters(b))
	})
	b.Run("envoyproxy-ratelimit", func(b *testing.B) {
		target, pid := envoyRatelimit(b, rlsSkewedEnvoy)
		benchRLSSkewed(b, target, pid, counters(b))
	})
}

// benchRLSSkewed drives the RLS at target, process pid, with the skewed
// keys (driveRLS); redis, when not nil, reads Redis's counters.
func benchRLSSkewed(b *testing.B, target string, pid int, redis func() (calls, evals int64, cpu time.Duration)) {
	addrs, seq := rlsSkewedKeys()
	var calls0, evals0 int64
	var rcpu0 time.Duration
	if redis != nil {
		calls0, evals0, rcpu0 = redis()
	}
	cpu0, cpuErr := childCPU(pid)
	elapsed, admitted := driveRLS(b, target, addrs, seq, true)
	cpu1, cpuErr1 := childCPU(pid)
	n := float64(b.N)
	b.ReportMetric(float64(admitted)/n, "admitted")
	if cpuErr == nil && cpuErr1 == nil {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/n, "server-cpu-µs/op")
		b.ReportMetric((cpu1-cpu0).Seconds()/elapsed.Seconds(), "server-cores")
	}
	if redis != nil {
		calls1, evals1, rcpu1 := redis()
		b.ReportMetric(float64(calls1-calls0)/n, "redis-cmds/op")
		b.ReportMetric(float64(evals1-evals0)/n, "redis-evals/op")
		b.ReportMetric(float64((rcpu1-rcpu0).Microseconds())/n, "redis-cpu-µs/op")
	}
}
