package promlimit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/promlimit"
	"github.com/prometheus/client_golang/prometheus"
)

func BenchmarkDecided(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	e := decision("api", "api", admit.KindRate, true)
	obs.Decided(e)
	b.ReportAllocs()
	for b.Loop() {
		obs.Decided(e)
	}
}

// BenchmarkDecidedRules cycles through 64 label combinations.
func BenchmarkDecidedRules(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	events := make([]admit.DecisionEvent, 64)
	for i := range events {
		events[i] = decision(fmt.Sprint("limiter-", i%4), fmt.Sprint("rule-", i/2), admit.KindRate, i%2 == 0)
		obs.Decided(events[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		obs.Decided(events[i&63])
		i++
	}
}

// BenchmarkDecidedBeyondCap decides under a rule beyond the cap, counted
// under rule="other".
func BenchmarkDecidedBeyondCap(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{MaxSeries: 1})
	obs.Decided(decision("api", "api", admit.KindRate, true))
	e := decision("api", "rule-beyond-the-cap", admit.KindRate, true)
	obs.Decided(e)
	b.ReportAllocs()
	for b.Loop() {
		obs.Decided(e)
	}
}

// BenchmarkDecidedLongRule decides under a rule of 1 MB, too long for a
// series of its own: it must cost no more than a short one beyond the cap
// (the rule is never hashed).
func BenchmarkDecidedLongRule(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	obs.Decided(decision("api", "api", admit.KindRate, true))
	e := decision("api", strings.Repeat("r", 1<<20), admit.KindRate, true)
	obs.Decided(e)
	b.ReportAllocs()
	for b.Loop() {
		obs.Decided(e)
	}
}

func BenchmarkDecidedKeyLabel(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{KeyLabel: true})
	e := decision("api", "api", admit.KindRate, true)
	e.Key = "tenant-0042"
	obs.Decided(e)
	b.ReportAllocs()
	for b.Loop() {
		obs.Decided(e)
	}
}

// BenchmarkDecidedParallel decides from every P on one series, the worst
// case for the counter's cache line.
func BenchmarkDecidedParallel(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	e := decision("api", "api", admit.KindRate, true)
	obs.Decided(e)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			obs.Decided(e)
		}
	})
}

// BenchmarkDecidedParallelRules decides from every P on 64 series.
func BenchmarkDecidedParallelRules(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	events := make([]admit.DecisionEvent, 64)
	for i := range events {
		events[i] = decision("api", fmt.Sprint("rule-", i), admit.KindRate, true)
		obs.Decided(events[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			obs.Decided(events[i&63])
			i += 7
		}
	})
}

func BenchmarkStoreCalled(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	e := admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 8, Duration: 420 * time.Microsecond}
	obs.StoreCalled(e)
	b.ReportAllocs()
	for b.Loop() {
		obs.StoreCalled(e)
	}
}

func BenchmarkStoreCalledParallel(b *testing.B) {
	obs, _ := newObserver(b, promlimit.Config{})
	e := admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 8, Duration: 420 * time.Microsecond}
	obs.StoreCalled(e)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			obs.StoreCalled(e)
		}
	})
}

// BenchmarkWithLabelValues is what Decided would cost if it resolved its
// counter with WithLabelValues on each call, for comparison.
func BenchmarkWithLabelValues(b *testing.B) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_decisions_total", Help: "x"}, []string{"limiter", "rule", "kind", "decision"})
	e := decision("api", "api", admit.KindRate, true)
	b.ReportAllocs()
	for b.Loop() {
		outcome := "denied"
		if e.Decision.Allowed {
			outcome = "allowed"
		}
		vec.WithLabelValues(e.Limiter, e.Decision.Rule, e.Decision.Kind.String(), outcome).Inc()
	}
}
