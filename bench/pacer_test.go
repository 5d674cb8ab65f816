package bench

// admit's Pacer against go.uber.org/ratelimit: both space events T apart
// and make a caller wait for its slot; both read the clock in Take.
//
// The rate is 1e9 per second (T = 1 ns), far above what one call can reach
// (reading the clock alone takes longer than T), so neither ever waits and
// the benchmark measures the cost of taking a slot: uber's Take (its default
// slack of 10, and WithoutSlack) against Pacer.Take. The Pacer has no slack
// (its burst is 1), so "uber-noslack" is the like-for-like comparison.
// Parallel runs the same from every P (use -cpu 1,2).

import (
	"testing"

	"github.com/admit-go/admit"
	"go.uber.org/ratelimit"
)

func benchPacer(b *testing.B, take func() error) {
	b.ReportAllocs()
	for b.Loop() {
		if err := take(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPacerParallel(b *testing.B, take func() error) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := take(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// pacers makes a new pacer of each kind, at highRate, and returns its Take.
var pacers = []struct {
	name string
	make func(b *testing.B) func() error
}{
	{"admit-pacer", func(b *testing.B) func() error {
		p, err := admit.NewPacer(admit.PerSecond(highRate))
		if err != nil {
			b.Fatal(err)
		}
		return func() error { _, err := p.Take(); return err }
	}},
	{"uber", func(*testing.B) func() error {
		l := ratelimit.New(highRate)
		return func() error { l.Take(); return nil }
	}},
	{"uber-noslack", func(*testing.B) func() error {
		l := ratelimit.New(highRate, ratelimit.WithoutSlack)
		return func() error { l.Take(); return nil }
	}},
}

func BenchmarkPacerTake(b *testing.B) {
	for _, p := range pacers {
		b.Run(p.name, func(b *testing.B) { benchPacer(b, p.make(b)) })
	}
}

func BenchmarkPacerTakeParallel(b *testing.B) {
	for _, p := range pacers {
		b.Run(p.name, func(b *testing.B) { benchPacerParallel(b, p.make(b)) })
	}
}
