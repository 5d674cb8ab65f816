package fair

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// BenchmarkRateLanes measures a decision admitted by the lane's own
// limit, one that borrows (the lane's own limit empty, a lender full),
// one refused (everything empty), and the admit.KeyedLimiter form.
func BenchmarkRateLanes(b *testing.B) {
	newLanes := func(b *testing.B, budget admit.Limit) *RateLanes {
		r, err := NewRateLanes(RateLanesConfig{Budget: budget, Lanes: threeLanes, Borrowing: BorrowAny})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	now := time.Now()
	b.Run("own", func(b *testing.B) {
		r := newLanes(b, admit.PerSecond(1e9))
		b.ReportAllocs()
		for b.Loop() {
			allowAt(r, now, "critical", 1)
		}
	})
	b.Run("borrow", func(b *testing.B) {
		// critical has a burst of 1 and an emission interval of 2ms; batch
		// lends its spare at 1e9/s.
		r, err := NewRateLanes(RateLanesConfig{Budget: admit.Limit{Rate: 1e9, Period: time.Second, Burst: 3}, Lanes: []Lane{{"critical", 1}, {"batch", 1 << 20}}, Borrowing: BorrowAny})
		if err != nil {
			b.Fatal(err)
		}
		t := now
		allowAt(r, t, "critical", 1) // its own burst, 1
		if d, _ := allowAt(r, t.Add(time.Nanosecond), "critical", 1); !d.Allowed {
			b.Fatal("not borrowing")
		}
		b.ReportAllocs()
		for b.Loop() {
			t = t.Add(time.Nanosecond)
			allowAt(r, t, "critical", 1)
		}
	})
	b.Run("refused", func(b *testing.B) {
		r := newLanes(b, admit.PerHour(100))
		for {
			if d, _ := allowAt(r, now, "batch", 1); !d.Allowed {
				break
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			allowAt(r, now, "batch", 1)
		}
	})
	b.Run("Limiter", func(b *testing.B) {
		var l admit.KeyedLimiter = newLanes(b, admit.PerSecond(1e9))
		b.ReportAllocs()
		for b.Loop() {
			l.Allow(ctx, admit.Request{Key: "default", N: 1})
		}
	})
}

// BenchmarkSlotLanes measures a slot taken and released, from the lane's
// own slots and borrowed, and through the compose layer.
func BenchmarkSlotLanes(b *testing.B) {
	s, err := NewSlotLanes(SlotLanesConfig{Max: 1000, Lanes: threeLanes, Borrowing: BorrowAny})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _, _ := s.TryAcquire(ctx, "critical", 1)
			p.Release()
		}
	})
	b.Run("borrow", func(b *testing.B) {
		// a's own 2 slots are held: each request borrows one of b's.
		s, err := NewSlotLanes(SlotLanesConfig{Max: 4, Lanes: []Lane{{"a", 1}, {"b", 1}}, Borrowing: BorrowAny})
		if err != nil {
			b.Fatal(err)
		}
		own, _, _ := s.TryAcquire(ctx, "a", 2)
		defer own.Release()
		b.ReportAllocs()
		for b.Loop() {
			p, d, _ := s.TryAcquire(ctx, "a", 1)
			if !d.Allowed {
				b.Fatal("refused")
			}
			p.Release()
		}
	})
	b.Run("Layer", func(b *testing.B) {
		l := s.Layer()
		b.ReportAllocs()
		for b.Loop() {
			r, _, _ := l.TryAcquire(ctx, admit.Request{Key: "critical", N: 1})
			r.Release()
		}
	})
}

// BenchmarkQueue measures a slot taken and released without waiting, and
// the contended path: goroutines that wait in the queue for few slots.
func BenchmarkQueue(b *testing.B) {
	b.Run("TryAcquire+Release", func(b *testing.B) {
		q, _ := NewQueue(QueueConfig{Max: 1000})
		b.ReportAllocs()
		for b.Loop() {
			p, _, _ := q.TryAcquire(ctx, "tenant", 1)
			p.Release()
		}
	})
	b.Run("Acquire/contended", func(b *testing.B) {
		q, _ := NewQueue(QueueConfig{Max: 2, MaxWaiters: 1 << 20})
		flows := []string{"a", "b", "c", "d"}
		b.ReportAllocs()
		b.SetParallelism(4)
		i := 0
		b.RunParallel(func(pb *testing.PB) {
			i++
			flow := flows[i%len(flows)]
			for pb.Next() {
				p, _, err := q.Acquire(ctx, flow, 1)
				if err != nil {
					b.Error(err)
					return
				}
				p.Release()
			}
		})
	})
}

// BenchmarkShare measures a decision of a known tenant admitted within its
// share, one admitted beyond the reserve (its share empty, the budget
// full), one refused (the budget empty), and the same with the weights of
// a map, as policy's share: rules give them.
func BenchmarkShare(b *testing.B) {
	now := time.Now()
	ctx := context.Background()
	newShare := func(b *testing.B, budget admit.Limit, weight func(string) int64) *Share {
		s, err := NewShare(ShareConfig{Budget: budget, Weight: weight})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	run := func(b *testing.B, s *Share, tenant string, step time.Duration, want bool) {
		t := now
		if d, _ := s.Allow(ctx, admit.Request{Key: tenant, N: 1, At: t}); d.Allowed != want {
			b.Fatalf("allowed %v", d.Allowed)
		}
		b.ReportAllocs()
		for b.Loop() {
			t = t.Add(step)
			s.Allow(ctx, admit.Request{Key: tenant, N: 1, At: t})
		}
	}
	b.Run("within", func(b *testing.B) {
		run(b, newShare(b, admit.PerSecond(1e9), nil), "acme", time.Nanosecond, true)
	})
	b.Run("beyond", func(b *testing.B) {
		// acme's share of a budget of burst 1e6 is one event in 2^20+1:
		// its share is empty at once, the budget full.
		weights := map[string]int64{"globex": 1 << 20}
		s := newShare(b, admit.PerSecond(1e6), func(t string) int64 { return max(weights[t], 1) })
		s.Allow(ctx, admit.Request{Key: "globex", N: 0, At: now})
		s.Allow(ctx, admit.Request{Key: "globex", N: 1, At: now})
		run(b, s, "acme", time.Microsecond, true)
	})
	b.Run("refused", func(b *testing.B) {
		s := newShare(b, admit.PerHour(1), nil)
		s.Allow(ctx, admit.Request{Key: "acme", N: 1, At: now})
		run(b, s, "acme", 0, false)
	})
	b.Run("weights", func(b *testing.B) {
		weights := map[string]int64{"acme": 3, "globex": 2}
		run(b, newShare(b, admit.PerSecond(1e9), func(t string) int64 { return max(weights[t], 1) }), "acme", time.Nanosecond, true)
	})
}
