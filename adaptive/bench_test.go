package adaptive

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// BenchmarkAIMD measures the hot paths of an AIMD: a decision on the
// system clock and at an explicit instant, the feedback of a success (a
// rate change, with its rebase), and decisions from many goroutines.
func BenchmarkAIMD(b *testing.B) {
	newAIMD := func(b *testing.B) *AIMD {
		a, err := NewAIMD(AIMDConfig{Min: 1, Max: 1e9, Initial: 1e9})
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	b.Run("Allow", func(b *testing.B) {
		a := newAIMD(b)
		b.ReportAllocs()
		for b.Loop() {
			a.Allow()
		}
	})
	b.Run("AllowN", func(b *testing.B) {
		a := newAIMD(b)
		now := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			a.AllowN(now, 1)
		}
	})
	b.Run("Feedback", func(b *testing.B) {
		a, err := NewAIMD(AIMDConfig{Min: 1, Max: 1e15, Burst: 1})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			a.FeedbackAt(now, Succeeded, 0) // the rate changes every time
		}
	})
	b.Run("Layer", func(b *testing.B) {
		var l admit.KeyedLimiter = newAIMD(b).Layer()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			l.Allow(ctx, admit.Request{Key: "key", N: 1})
		}
	})
	// "Layer/Held+Finish": a chain of the layer alone, its grant recorded
	// in a Held and finished as a success (the rate changes every time).
	b.Run("Layer/Held+Finish", func(b *testing.B) {
		a, err := NewAIMD(AIMDConfig{Min: 1, Max: 1e9, Initial: 1e9})
		if err != nil {
			b.Fatal(err)
		}
		chain, err := compose.All(compose.Layer{Limiter: a.Layer()})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		keys := []string{"key"}
		b.ReportAllocs()
		for b.Loop() {
			var h compose.Held
			chain.AllowKeys(ctx, keys, 1, &h)
			h.Finish(false)
		}
	})
	b.Run("Allow/parallel", func(b *testing.B) {
		a := newAIMD(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a.Allow()
			}
		})
	})
}

// BenchmarkGradient measures a Gradient's hot path: a slot taken and given
// back with a sample, directly, through its compose layer (whose Releaser
// is the Token, boxed: one allocation), and from many goroutines.
func BenchmarkGradient(b *testing.B) {
	newGradient := func(b *testing.B) *Gradient {
		g, err := NewGradient(GradientConfig{Min: 1000, Max: 1000})
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	b.Run("TryAcquire+Release", func(b *testing.B) {
		g := newGradient(b)
		b.ReportAllocs()
		for b.Loop() {
			tok, _ := g.TryAcquire()
			tok.Release()
		}
	})
	b.Run("TryAcquireN+DoneAt", func(b *testing.B) {
		g := newGradient(b)
		now := time.Now()
		end := now.Add(time.Millisecond)
		b.ReportAllocs()
		for b.Loop() {
			tok, _, _ := g.TryAcquireN(now, 1)
			tok.DoneAt(end, Succeeded)
		}
	})
	b.Run("Layer", func(b *testing.B) {
		var s admit.Slots = newGradient(b).Layer()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			r, _, _ := s.TryAcquire(ctx, admit.Request{Key: "key", N: 1})
			r.Release()
		}
	})
	b.Run("TryAcquire+Release/parallel", func(b *testing.B) {
		g := newGradient(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if tok, ok := g.TryAcquire(); ok {
					tok.Release()
				}
			}
		})
	})
}
