package keyed

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// benchKeys returns n distinct keys of the shape of API keys ("key-" and a
// number), built once.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	return keys
}

// keys1M returns 1M keys, built on first use (not by every test run).
var keys1M = sync.OnceValue(func() []string { return benchKeys(1_000_000) })

func BenchmarkAllowAt(b *testing.B) {
	ctx := context.Background()
	for _, alg := range admit.Algorithms() {
		b.Run(alg.String()+"/one-key", func(b *testing.B) {
			lim, _ := New(Config{Algorithm: alg, Limit: admit.PerSecond(1e9)})
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				lim.Allow(ctx, admit.Request{Key: "key-42", N: 1, At: now})
			}
		})
	}
	b.Run("gcra/1M-keys", func(b *testing.B) {
		lim, _ := New(Config{Algorithm: admit.AlgGCRA, Limit: admit.PerSecond(1e6)})
		now := time.Now()
		b.ReportAllocs()
		keys := keys1M()
		i := 0
		for b.Loop() {
			lim.Allow(ctx, admit.Request{Key: keys[i], N: 1, At: now})
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
}

func BenchmarkAllowParallel(b *testing.B) {
	ctx := context.Background()
	lim, _ := New(Config{Algorithm: admit.AlgGCRA, Limit: admit.PerSecond(1e6)})
	now := time.Now()
	keys := keys1M()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			lim.Allow(ctx, admit.Request{Key: keys[i], N: 1, At: now})
			if i += 7; i >= len(keys) {
				i -= len(keys)
			}
		}
	})
}

// BenchmarkMemoryPerKey inserts 1M keys and reports the heap the limiter
// retains per key beyond the keys' own bytes, after GC.
func BenchmarkMemoryPerKey(b *testing.B) {
	ctx := context.Background()
	keys := keys1M()
	keyBytes := 0
	for _, k := range keys {
		keyBytes += len(k)
	}
	for _, alg := range []admit.Algorithm{admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgFixedWindow, admit.AlgSlidingWindow} {
		b.Run(alg.String(), func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				before := heap()
				lim, _ := New(Config{Algorithm: alg, Limit: admit.PerHour(100), MaxKeys: 2_000_000})
				now := time.Now()
				for _, k := range keys {
					lim.Allow(ctx, admit.Request{Key: k, N: 1, At: now})
				}
				after := heap()
				if lim.Len() != len(keys) {
					b.Fatalf("holds %d keys", lim.Len())
				}
				perKey = float64(int64(after)-int64(before)-int64(keyBytes)) / float64(len(keys))
				runtime.KeepAlive(lim)
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDelayMode: a request that does not wait (its slot is free), with
// the delay mode off (MaxDelay 0) and on (MaxDelay 1s), on the limiter's
// clock: the price of the delay mode when nothing waits.
func BenchmarkDelayMode(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []struct {
		name     string
		maxDelay time.Duration
	}{{"off", 0}, {"on", time.Second}} {
		for _, alg := range []admit.Algorithm{admit.AlgGCRA, admit.AlgTokenBucket} {
			b.Run(mode.name+"/"+alg.String(), func(b *testing.B) {
				lim, _ := New(Config{Algorithm: alg, Limit: admit.PerSecond(1e9)})
				b.ReportAllocs()
				for b.Loop() {
					if d, _ := lim.Allow(ctx, admit.Request{Key: "key-42", N: 1, MaxDelay: mode.maxDelay}); d.Delay != 0 || !d.Allowed {
						b.Fatalf("%+v", d)
					}
				}
			})
		}
	}
}
