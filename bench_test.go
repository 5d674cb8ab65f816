package admit

import (
	"testing"
	"time"
)

// The benchmarks use a fixed instant, so they measure the limiter and not
// the clock, except the Allow ones, which read it.

func benchLimits() []struct {
	name string
	l    Limit
} {
	return []struct {
		name string
		l    Limit
	}{
		// x/time/rate's BenchmarkAllowN configuration: after the first
		// call every request is denied (the reject path).
		{"deny", Every(time.Second)},
		// Every request admitted: the write path.
		{"admit", PerSecond(1e9)},
	}
}

func BenchmarkAllowN(b *testing.B) {
	for _, bl := range benchLimits() {
		for _, a := range Algorithms() {
			b.Run(bl.name+"/"+a.String(), func(b *testing.B) {
				lim, _ := New(a, bl.l)
				now := time.Now()
				b.ReportAllocs()
				for b.Loop() {
					lim.AllowN(now, 1)
				}
			})
		}
	}
}

func BenchmarkDecideN(b *testing.B) {
	for _, bl := range benchLimits() {
		for _, a := range Algorithms() {
			b.Run(bl.name+"/"+a.String(), func(b *testing.B) {
				lim, _ := New(a, bl.l)
				now := time.Now()
				b.ReportAllocs()
				for b.Loop() {
					lim.DecideN(now, 1)
				}
			})
		}
	}
}

func BenchmarkAllowNParallel(b *testing.B) {
	for _, bl := range benchLimits() {
		for _, a := range []Algorithm{AlgGCRA, AlgTokenBucket} {
			b.Run(bl.name+"/"+a.String(), func(b *testing.B) {
				lim, _ := New(a, bl.l)
				now := time.Now()
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						lim.AllowN(now, 1)
					}
				})
			})
		}
	}
}

func BenchmarkGCRAAllow(b *testing.B) {
	g, _ := NewGCRA(PerSecond(1e9))
	b.ReportAllocs()
	for b.Loop() {
		g.Allow()
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		_ = time.Now()
	}
}

func BenchmarkGCRAReserveCancel(b *testing.B) {
	g, _ := NewGCRA(PerSecond(1e9))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r := g.ReserveN(now, 1)
		r.CancelAt(now)
	}
}

func BenchmarkTokenBucketReserveCancel(b *testing.B) {
	tb, _ := NewTokenBucket(PerSecond(1e9))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r := tb.ReserveN(now, 1)
		r.CancelAt(now)
	}
}

// BenchmarkPacerTake measures Take at a rate high enough that no caller
// waits: the cost of pacing itself, clock read included.
func BenchmarkPacerTake(b *testing.B) {
	p, err := NewPacer(Limit{Rate: 1e9, Period: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Take()
	}
}
