package bench

// Concurrency limits: admit's concurrency.Limiter against
// golang.org/x/sync/semaphore.Weighted, uncontended: a non-blocking acquire
// of one slot and its release, and the blocking acquire. admit's global
// limit is its empty key; "admit-key" acquires on a key, which also creates
// and forgets the key's entry each time (a key with nothing in flight is
// not kept).

import (
	"context"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/concurrency"
	"golang.org/x/sync/semaphore"
)

func BenchmarkConcurrencyTryAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("semaphore", func(b *testing.B) {
		s := semaphore.NewWeighted(100)
		b.ReportAllocs()
		for b.Loop() {
			if !s.TryAcquire(1) {
				b.Fatal("denied")
			}
			s.Release(1)
		}
	})
	for _, key := range []string{"", "tenant-42"} {
		name := "admit-global"
		if key != "" {
			name = "admit-key"
		}
		b.Run(name, func(b *testing.B) {
			lim, err := concurrency.New(concurrency.Config{Max: 100})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				p, d, err := lim.TryAcquire(ctx, admit.Request{Key: key, N: 1})
				if !d.Allowed || err != nil {
					b.Fatal("denied", err)
				}
				p.Release()
			}
		})
	}
}

func BenchmarkConcurrencyAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("semaphore", func(b *testing.B) {
		s := semaphore.NewWeighted(100)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	})
	b.Run("admit-global", func(b *testing.B) {
		lim, err := concurrency.New(concurrency.Config{Max: 100})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			p, d, err := lim.Acquire(ctx, admit.Request{Key: "", N: 1})
			if !d.Allowed || err != nil {
				b.Fatal("denied", err)
			}
			p.Release()
		}
	})
}
