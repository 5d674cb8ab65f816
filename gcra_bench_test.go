package admit

import (
	"testing"
	"time"
)

func BenchmarkGCRAAllowN(b *testing.B) {
	g, _ := NewGCRA(PerSecond(1e9))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		g.AllowN(now, 1)
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

func BenchmarkGCRAAllowNParallel(b *testing.B) {
	g, _ := NewGCRA(PerSecond(1e9))
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.AllowN(now, 1)
		}
	})
}
