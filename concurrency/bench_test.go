package concurrency_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/concurrency"
)

// BenchmarkAcquireRelease is the uncontended path, Acquire then Release:
// "global" (the empty key, no map) is the one to compare with
// golang.org/x/sync/semaphore's TryAcquire+Release, which cannot be
// imported here (the core module depends on the standard library only; a
// side-by-side comparison belongs in the bench/ module). "key" creates and
// forgets the key's state on every call (a map insert and delete), since a
// key with nothing in flight is forgotten at once; BusyKey keeps it.

func BenchmarkAcquireRelease(b *testing.B) {
	for _, bc := range []struct {
		name string
		key  string
		cfg  concurrency.Config
	}{
		{"global", "", concurrency.Config{}},
		{"key", "user-12345", concurrency.Config{}},
		{"global/lease", "", concurrency.Config{Lease: time.Minute}},
		{"key/lease", "user-12345", concurrency.Config{Lease: time.Minute}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Max = 100
			l := mustNew(b, cfg)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p, d, err := l.Acquire(ctx, admit.Request{Key: bc.key, N: 1})
				if err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
				p.Release()
			}
		})
	}
}

// BenchmarkAcquireReleaseBusyKey holds a slot of the key throughout, so the
// key's state is never forgotten (no map insert nor delete per call).
func BenchmarkAcquireReleaseBusyKey(b *testing.B) {
	l := mustNew(b, concurrency.Config{Max: 100})
	ctx := context.Background()
	held, _, _ := l.Acquire(ctx, admit.Request{Key: "user-12345", N: 1})
	defer held.Release()
	b.ReportAllocs()
	for b.Loop() {
		p, _, _ := l.Acquire(ctx, admit.Request{Key: "user-12345", N: 1})
		p.Release()
	}
}

// BenchmarkDenied is the reject path: the key is full.
func BenchmarkDenied(b *testing.B) {
	for _, bc := range []struct {
		name string
		key  string
		cfg  concurrency.Config
	}{
		{"global", "", concurrency.Config{}},
		{"key", "user-12345", concurrency.Config{}},
		{"key/lease", "user-12345", concurrency.Config{Lease: time.Minute}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Max = 1
			l := mustNew(b, cfg)
			ctx := context.Background()
			held, _, _ := l.TryAcquire(ctx, admit.Request{Key: bc.key, N: 1})
			defer held.Release()
			b.ReportAllocs()
			for b.Loop() {
				if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: bc.key, N: 1}); d.Allowed {
					b.Fatal("allowed")
				}
			}
		})
	}
}

// BenchmarkAcquireReleaseParallel: every goroutine on its own key, or all
// on the global one.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	for _, global := range []bool{false, true} {
		name := "keys"
		if global {
			name = "global"
		}
		b.Run(name, func(b *testing.B) {
			l := mustNew(b, concurrency.Config{Max: 1 << 40})
			ctx := context.Background()
			var id atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := ""
				if !global {
					key = "user-" + strconv.FormatInt(id.Add(1), 10)
				}
				for pb.Next() {
					p, _, _ := l.Acquire(ctx, admit.Request{Key: key, N: 1})
					p.Release()
				}
			})
		})
	}
}
