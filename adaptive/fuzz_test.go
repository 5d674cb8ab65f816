package adaptive

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/timeline"
)

// FuzzAIMD runs random operations on an AIMD along a forward timeline and
// checks that its rate stays within its bounds and that it never admits
// more than its initial burst plus what its successive rates refilled.
func FuzzAIMD(f *testing.F) {
	f.Add(int64(1), int64(100), int64(10), uint8(0), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(int64(5), int64(5), int64(5), uint8(3), []byte{9, 9, 9, 1, 1, 1, 200, 0, 0})
	f.Add(int64(1), int64(1000000), int64(3), uint8(7), []byte{3, 3, 3, 3, 250, 2, 2, 2, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, lo, hi, initial int64, flags uint8, ops []byte) {
		cfg := AIMDConfig{Min: lo, Max: hi, Initial: initial}
		if flags&1 != 0 {
			cfg.Burst = int64(flags) + 1
		}
		if flags&2 != 0 {
			cfg.IncreaseInterval = time.Duration(flags) * time.Millisecond
		}
		if flags&4 != 0 {
			cfg.Factor, cfg.Step = 0.9, int64(flags)
		}
		if flags&8 != 0 {
			cfg.IncreaseOnlyWhenLimited, cfg.DecreaseInterval = true, time.Millisecond
		}
		a, err := NewAIMD(cfg)
		if err != nil {
			if lo >= 1 && lo <= hi && hi <= 1e9 && (initial == 0 || initial >= lo && initial <= hi) {
				t.Fatalf("NewAIMD(%d, %d, %d): %v", lo, hi, initial, err)
			}
			return
		}
		now := int64(0) // ns after t0
		admitted := int64(0)
		burst0 := a.Limit().Burst
		refill := new(big.Int) // Σ rate × elapsed ns
		rate := a.Limit().Rate
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			switch op % 5 {
			case 0: // time passes
				d := arg * arg * int64(time.Millisecond) / 16
				refill.Add(refill, new(big.Int).Mul(big.NewInt(rate), big.NewInt(d)))
				now += d
			case 1:
				if a.AllowN(t0.Add(time.Duration(now)), int(arg%4)) {
					admitted += arg % 4
				}
			case 2:
				if d := a.DecideN(t0.Add(time.Duration(now)), int(arg%4)); d.Allowed {
					admitted += arg % 4
				}
			case 3:
				a.FeedbackAt(t0.Add(time.Duration(now)), Outcome(arg%4), time.Duration(arg)*time.Millisecond)
			case 4:
				a.refundAt(timeline.Nanos(t0.Add(time.Duration(now))), arg%3)
				admitted -= arg % 3 // a refund may add capacity even if nothing was taken
			}
			rate = a.Limit().Rate
			if rate < lo || rate > hi {
				t.Fatalf("rate %d outside [%d, %d]", rate, lo, hi)
			}
			if l := a.Limit(); l.Rate != rate || l.Burst <= 0 {
				t.Fatalf("limit %+v", l)
			}
			// admitted - refunded <= burst0 + refill/period.
			bound := new(big.Int).Quo(refill, big.NewInt(int64(time.Second)))
			bound.Add(bound, big.NewInt(burst0))
			if big.NewInt(admitted).Cmp(bound) > 0 {
				t.Fatalf("admitted %d > %v after op %d", admitted, bound, i/2)
			}
		}
	})
}

// FuzzGradient runs random acquisitions and completions on a Gradient and
// checks its bookkeeping: the limit within its bounds, in flight the sum of
// the live tokens, and nothing left when every token is done.
func FuzzGradient(f *testing.F) {
	f.Add(int64(1), int64(10), []byte{0, 1, 0, 1, 1, 0, 2, 5, 1, 1})
	f.Add(int64(3), int64(3), []byte{0, 3, 0, 3, 0, 3, 1, 200, 1, 7})
	f.Add(int64(2), int64(500), []byte{0, 1, 0, 2, 0, 3, 1, 1, 1, 2, 1, 3, 3, 9})
	f.Fuzz(func(t *testing.T, min, max int64, ops []byte) {
		g, err := NewGradient(GradientConfig{Min: min, Max: max, WindowSamples: 2, WindowTime: -1, LongWindow: 3})
		if err != nil {
			if min >= 1 && min <= max {
				t.Fatalf("NewGradient(GradientConfig{Min: %d, Max: %d}): %v", min, max, err)
			}
			return
		}
		type held struct {
			tok Token
			n   int64
		}
		var live []held
		now := int64(0)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			switch op % 4 {
			case 0:
				n := arg % 4
				tok, d, err := g.TryAcquireN(t0.Add(time.Duration(now)), n)
				if err != nil {
					if n <= max {
						t.Fatalf("n=%d: %v", n, err)
					}
					break
				}
				if d.Allowed && n > 0 {
					live = append(live, held{tok, n})
				}
			case 1, 2:
				if len(live) == 0 {
					break
				}
				k := int(arg) % len(live)
				h := live[k]
				live = append(live[:k], live[k+1:]...)
				var ok bool
				if op%4 == 1 {
					ok = h.tok.DoneAt(t0.Add(time.Duration(now+arg*int64(time.Millisecond))), Outcome(arg%4))
				} else {
					ok = h.tok.DoneRTT(Outcome(arg%3), time.Duration(arg-100)*time.Millisecond)
				}
				if !ok || h.tok.DoneAt(t0, Succeeded) {
					t.Fatal("a token completed other than once")
				}
			case 3:
				now += arg * int64(time.Millisecond)
			}
			st := g.Stats()
			var sum int64
			for _, h := range live {
				sum += h.n
			}
			if st.Limit < min || st.Limit > max || st.InFlight != sum || math.IsNaN(st.Estimate) {
				t.Fatalf("stats %+v, %d held", st, sum)
			}
		}
		for _, h := range live {
			h.tok.Release()
		}
		if st := g.Stats(); st.InFlight != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}
