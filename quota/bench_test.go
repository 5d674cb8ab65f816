package quota_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

var benchNow = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

// BenchmarkAllowAt decides on one existing key at a fixed instant (the
// quota is large enough never to run out). It must not allocate.
func BenchmarkAllowAt(b *testing.B) {
	q, _ := quota.New(quota.Config{Limit: 1 << 62, Period: quota.Day})
	q.Allow(context.Background(), admit.Request{Key: "user:12345", N: 1, At: benchNow})
	b.ReportAllocs()
	for b.Loop() {
		q.Allow(context.Background(), admit.Request{Key: "user:12345", N: 1, At: benchNow})
	}
}

// BenchmarkAllowAtDenied decides on an exhausted key: the reject path.
func BenchmarkAllowAtDenied(b *testing.B) {
	q, _ := quota.New(quota.Config{Limit: 1, Period: quota.Day})
	q.Allow(context.Background(), admit.Request{Key: "user:12345", N: 1, At: benchNow})
	b.ReportAllocs()
	for b.Loop() {
		q.Allow(context.Background(), admit.Request{Key: "user:12345", N: 1, At: benchNow})
	}
}

// BenchmarkAllow reads the system clock, in Europe/Paris.
func BenchmarkAllow(b *testing.B) {
	paris, _ := time.LoadLocation("Europe/Paris")
	q, _ := quota.New(quota.Config{Limit: 1 << 62, Period: quota.Day, Location: paris})
	ctx := context.Background()
	q.Allow(ctx, admit.Request{Key: "user:12345", N: 1})
	b.ReportAllocs()
	for b.Loop() {
		q.Allow(ctx, admit.Request{Key: "user:12345", N: 1})
	}
}

// BenchmarkAllowAtManyKeys cycles through 100,000 existing keys.
func BenchmarkAllowAtManyKeys(b *testing.B) {
	const n = 100_000
	q, _ := quota.New(quota.Config{Limit: 1 << 62, Period: quota.Day})
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
		q.Allow(context.Background(), admit.Request{Key: keys[i], N: 1, At: benchNow})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q.Allow(context.Background(), admit.Request{Key: keys[i], N: 1, At: benchNow})
		if i++; i == n {
			i = 0
		}
	}
}

// BenchmarkAllowAtNewKeys inserts a new key on each call, with the
// instant moving a day every 100,000 keys, so the keys of the day before
// are swept as new ones come in.
func BenchmarkAllowAtNewKeys(b *testing.B) {
	q, _ := quota.New(quota.Config{Limit: 10, Period: quota.Day})
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q.Allow(context.Background(), admit.Request{Key: keys[i&(len(keys)-1)], N: 1, At: benchNow.Add(time.Duration(i/100_000) * 24 * time.Hour)})
		i++
	}
}

// BenchmarkAllowAtParallel decides on 1,024 existing keys from all CPUs.
func BenchmarkAllowAtParallel(b *testing.B) {
	q, _ := quota.New(quota.Config{Limit: 1 << 62, Period: quota.Day})
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
		q.Allow(context.Background(), admit.Request{Key: keys[i], N: 1, At: benchNow})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			q.Allow(context.Background(), admit.Request{Key: keys[i&1023], N: 1, At: benchNow})
			i += 7
		}
	})
}

// BenchmarkAllowAtParallelOneKey is the worst case: every CPU on one key.
func BenchmarkAllowAtParallelOneKey(b *testing.B) {
	q, _ := quota.New(quota.Config{Limit: 1 << 62, Period: quota.Day})
	q.Allow(context.Background(), admit.Request{Key: "hot", N: 1, At: benchNow})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q.Allow(context.Background(), admit.Request{Key: "hot", N: 1, At: benchNow})
		}
	})
}

// BenchmarkBounds computes a period in a zone with daylight saving (what
// a Quota does once per period, not per call).
func BenchmarkBounds(b *testing.B) {
	paris, _ := time.LoadLocation("Europe/Paris")
	b.ReportAllocs()
	for b.Loop() {
		quota.Month.Bounds(benchNow, paris, time.Monday)
	}
}
