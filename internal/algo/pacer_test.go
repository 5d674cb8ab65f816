package algo

import (
	"math/big"
	"testing"
)

// FuzzPacer drives the pacer's state functions the way the Pacer does (a
// caller arrives, waits PacerWait, is released, PacerNext) with random
// arrival gaps and checks that releases are never less than T apart, that a
// caller who arrives before its slot is released exactly at its slot
// rounded up, and that the schedule of back-to-back callers does not drift.
func FuzzPacer(f *testing.F) {
	f.Add(uint16(3), uint16(5), []byte{0, 0, 0, 0, 200, 0, 1})
	f.Add(uint16(60001), uint16(8), []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, rate, period uint16, gaps []byte) {
		p, err := fuzzLimit(rate, period, 1)
		if err != nil || p.Mode != Normal {
			return
		}
		T := big.NewRat(p.Tn, p.Td)
		var s GCRA
		now := int64(1e9)
		var prev int64 = -1
		slot := new(big.Rat) // the exact next slot (the state's TAT)
		for _, g := range gaps {
			now += int64(g) * p.Tn / p.Td / 16 // arrivals within a few intervals
			wait := PacerWait(s, &p, now, 0)
			if (wait == 0) != PacerReady(s, now) {
				t.Fatalf("PacerWait %d but PacerReady %v", wait, PacerReady(s, now))
			}
			r := now + wait
			if prev >= 0 {
				gap := new(big.Rat).SetInt64(r - prev)
				if gap.Cmp(new(big.Rat).Sub(T, big.NewRat(1, 1))) <= 0 {
					t.Fatalf("releases %d and %d are closer than T-1ns = %v", prev, r, T.FloatString(3))
				}
			}
			if wait > 0 {
				// A caller who waited is released at its exact slot, rounded up.
				want := new(big.Int).Div(new(big.Int).Add(slot.Num(), new(big.Int).Sub(slot.Denom(), big.NewInt(1))), slot.Denom())
				if want.Int64() != r {
					t.Fatalf("released at %d, want ⌈%s⌉ = %d", r, slot.FloatString(3), want)
				}
			}
			// A release less than 1ns after the slot took the slot; a later
			// one starts the schedule afresh from itself.
			if new(big.Rat).SetInt64(r).Cmp(new(big.Rat).Add(slot, big.NewRat(1, 1))) < 0 {
				slot = new(big.Rat).Add(slot, T)
			} else {
				slot = new(big.Rat).Add(new(big.Rat).SetInt64(r), T)
			}
			s = PacerNext(s, &p, r)
			// The state is the next slot, exactly.
			got := new(big.Rat).Add(new(big.Rat).SetInt64(s.At), big.NewRat(s.Frac, p.Td))
			if got.Cmp(slot) != 0 {
				t.Fatalf("next slot %s, want %s", got.FloatString(3), slot.FloatString(3))
			}
			prev = r
		}
	})
}
