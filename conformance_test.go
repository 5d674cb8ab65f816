package admit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// rootSubject runs the single-key limiters of package admit as an
// admit.KeyedLimiter for admittest: one limiter per key, made on the key's first request.
// Requests of n < 0 or above the burst go to DecideN like any other, which
// answers them with a refusal (RetryAfter admit.InfDuration).
type rootSubject struct {
	alg   admit.Algorithm
	limit admit.Limit
	mu    sync.Mutex
	lims  map[string]admit.Limiter
}

func rootFactory(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
	t.Helper()
	if _, err := admit.New(alg, l); err != nil {
		t.Fatalf("admit.New(%v, %v): %v", alg, l, err)
	}
	return &rootSubject{alg: alg, limit: l, lims: map[string]admit.Limiter{}}
}

func (s *rootSubject) Allow(_ context.Context, r admit.Request) (admit.Decision, error) {
	if r.MaxDelay != 0 {
		// A single-key limiter reserves with ReserveN instead: the delay
		// scenarios are for keyed limiters.
		return admit.Decision{RetryAfter: admit.InfDuration}, fmt.Errorf("%w: single-key limiters reserve with ReserveN", admit.ErrInvalidDelay)
	}
	key, now, n := r.Key, r.At, r.N
	s.mu.Lock()
	lim := s.lims[key]
	if lim == nil {
		var err error
		if lim, err = admit.New(s.alg, s.limit); err != nil {
			s.mu.Unlock()
			return admit.Decision{}, err
		}
		s.lims[key] = lim
	}
	s.mu.Unlock()
	return lim.DecideN(now, int(n)), nil
}

// TestConformance runs the hand-derived timeline scenarios against every
// algorithm's single-key limiter.
func TestConformance(t *testing.T) {
	admittest.Run(t, rootFactory)
}

// TestConformanceModel compares the limiters with the exact reference model
// on random timelines: awkward limits, instants aimed at boundaries, costs
// of 0, above the burst and negative, several keys, time going backwards.
func TestConformanceModel(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	admittest.RunDifferential(t, rootFactory, 1, rounds)
}

// FuzzConformance is TestConformanceModel driven by fuzz input.
func FuzzConformance(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 7, 5, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x04\x00\x02\x05\x04\x09\x01\x0a\x0b\x0e\x09\x10\x0c\x0d\x0f\x0e\x0e\x05\x06"))
	f.Add([]byte("sliding log: time goes backwards, then forwards again"))
	for alg := range 6 {
		f.Add([]byte{byte(alg), 0, 3, 4, 2, 9, 9, 9, 10, 10, 11, 11, 14, 14, 16, 16, 8, 200, 5})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		alg, l, reqs := admittest.TimelineFromBytes(data)
		admittest.Differential(t, rootFactory(t, alg, l), alg, l, reqs)
	})
}
