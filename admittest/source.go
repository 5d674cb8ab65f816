package admittest

import (
	"math/rand/v2"
	"sync"
)

// Source returns a random source seeded with seed1 and seed2 (a
// rand.PCG) that is safe for concurrent use: for admit.Jitter.Source in
// tests, where the middleware draws from handler goroutines and a fixed
// seed makes the draws the same at every run.
func Source(seed1, seed2 uint64) rand.Source {
	return &lockedSource{src: rand.NewPCG(seed1, seed2)}
}

type lockedSource struct {
	mu  sync.Mutex
	src *rand.PCG
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}
