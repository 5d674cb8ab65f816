package quota

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestStep(t *testing.T) {
	p1 := window{Start: 1000, End: 2000}
	p2 := window{Start: 2000, End: 2500}
	tests := []struct {
		name     string
		s        state
		w        window
		now      int64
		n, limit int64
		want     state
		r        result
	}{
		{"new key", state{}, p1, 1200, 3, 5,
			state{1000, 2000, 3}, result{Allowed: true, Remaining: 2, ResetAfter: 800, Start: 1000, End: 2000}},
		{"fills the quota", state{1000, 2000, 3}, p1, 1300, 2, 5,
			state{1000, 2000, 5}, result{Allowed: true, Remaining: 0, ResetAfter: 700, Start: 1000, End: 2000}},
		{"denied until the period ends", state{1000, 2000, 5}, p1, 1999, 1, 5,
			state{1000, 2000, 5}, result{RetryAfter: 1, ResetAfter: 1, Start: 1000, End: 2000}},
		{"not partly admitted", state{1000, 2000, 3}, p1, 1500, 3, 5,
			state{1000, 2000, 3}, result{Remaining: 2, RetryAfter: 500, ResetAfter: 500, Start: 1000, End: 2000}},
		{"a new period starts empty", state{1000, 2000, 5}, p2, 2000, 5, 5,
			state{2000, 2500, 5}, result{Allowed: true, ResetAfter: 500, Start: 2000, End: 2500}},
		{"peek", state{1000, 2000, 2}, p1, 1500, 0, 5,
			state{1000, 2000, 2}, result{Allowed: true, Remaining: 3, ResetAfter: 500, Start: 1000, End: 2000}},
		{"peek of a new key", state{}, p1, 1500, 0, 5,
			state{1000, 2000, 0}, result{Allowed: true, Remaining: 5, Start: 1000, End: 2000}},
		{"new key in a period before 1970", state{}, window{Start: -500, End: 100}, 0, 1, 5,
			state{-500, 100, 1}, result{Allowed: true, Remaining: 4, ResetAfter: 100, Start: -500, End: 100}},
		{"empty state keeps its period", state{2000, 2500, 0}, p1, 1500, 5, 5,
			state{2000, 2500, 5}, result{Allowed: true, ResetAfter: 1000, Start: 2000, End: 2500}},
		{"peek of a new key again", state{}, p1, 1500, 0, 5,
			state{1000, 2000, 0}, result{Allowed: true, Remaining: 5, Start: 1000, End: 2000}},
		{"peek of an ended period", state{1000, 2000, 5}, p2, 2100, 0, 5,
			state{2000, 2500, 0}, result{Allowed: true, Remaining: 5, Start: 2000, End: 2500}},
		{"more than the quota", state{}, p1, 1500, 6, 5,
			state{1000, 2000, 0}, result{Remaining: 5, RetryAfter: never, Start: 1000, End: 2000}},
		{"the whole quota at once", state{}, p1, 1000, 5, 5,
			state{1000, 2000, 5}, result{Allowed: true, ResetAfter: 1000, Start: 1000, End: 2000}},
		{"smaller per-call limit", state{1000, 2000, 4}, p1, 1500, 1, 2,
			state{1000, 2000, 4}, result{RetryAfter: 500, ResetAfter: 500, Start: 1000, End: 2000}},
		{"larger per-call limit", state{1000, 2000, 4}, p1, 1500, 4, 8,
			state{1000, 2000, 8}, result{Allowed: true, ResetAfter: 500, Start: 1000, End: 2000}},
		// Time went back: the state's period is later than w. It keeps its
		// count, and durations run from now.
		{"earlier instant, later state", state{2000, 2500, 5}, p1, 1500, 1, 5,
			state{2000, 2500, 5}, result{RetryAfter: 1000, ResetAfter: 1000, Start: 2000, End: 2500}},
		{"earlier instant in the current period", state{2000, 2500, 2}, p2, 1500, 1, 5,
			state{2000, 2500, 3}, result{Allowed: true, Remaining: 2, ResetAfter: 1000, Start: 2000, End: 2500}},
		{"peek over a smaller per-call limit", state{1000, 2000, 4}, p1, 1500, 0, 2,
			state{1000, 2000, 4}, result{Allowed: true, ResetAfter: 500, Start: 1000, End: 2000}},
		{"no overflow", state{1000, 2000, math.MaxInt64 - 1}, p1, 1500, 2, math.MaxInt64,
			state{1000, 2000, math.MaxInt64 - 1}, result{Remaining: 1, RetryAfter: 500, ResetAfter: 500, Start: 1000, End: 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r := step(tt.s, tt.w, tt.now, tt.n, tt.limit)
			if got != tt.want || r != tt.r {
				t.Errorf("step(%+v, %+v, now=%d, n=%d, limit=%d)\n = %+v, %+v\nwant %+v, %+v", tt.s, tt.w, tt.now, tt.n, tt.limit, got, r, tt.want, tt.r)
			}
		})
	}
}

func TestRefund(t *testing.T) {
	p1 := window{Start: 1000, End: 2000}
	p2 := window{Start: 2000, End: 2500}
	for _, tt := range []struct {
		s    state
		w    window
		n    int64
		want state
	}{
		{state{1000, 2000, 5}, p1, 2, state{1000, 2000, 3}},
		{state{1000, 2000, 5}, p1, 9, state{1000, 2000, 0}},
		{state{1000, 2000, 5}, p1, 0, state{1000, 2000, 5}},
		{state{1000, 2000, 5}, p2, 2, state{1000, 2000, 5}}, // ended: nothing to give back
		{state{2000, 2500, 5}, p1, 2, state{2000, 2500, 3}}, // earlier instant
		{state{}, p1, 2, state{}},
		{state{1000, 2000, 0}, p1, 2, state{1000, 2000, 0}},
	} {
		if got := refund(tt.s, tt.w, tt.n); got != tt.want {
			t.Errorf("refund(%+v, %+v, %d) = %+v, want %+v", tt.s, tt.w, tt.n, got, tt.want)
		}
	}
}

// FuzzStep drives one key's state through random instants (mostly
// forward, sometimes back), costs, per-call limits and refunds, over
// periods of random lengths, and checks the invariants: the count never
// exceeds the limit that admitted it, a new period starts empty, going
// back in time never resets or refills, and every field of the result is
// what the documentation says. With highWater, the current period never
// moves back (as Quota passes it); without, w is the period holding the
// instant (as a store might), and step must still never refill.
func FuzzStep(f *testing.F) {
	f.Add(uint64(1), int64(5), uint8(10), false, true)
	f.Add(uint64(2), int64(1), uint8(50), true, false)
	f.Add(uint64(3), int64(math.MaxInt64), uint8(0), true, true)
	f.Add(uint64(4), int64(1000), uint8(90), false, false)
	f.Fuzz(func(t *testing.T, seed uint64, limit int64, back uint8, perCall, highWater bool) {
		if limit < 1 {
			limit = 1 + int64(uint64(limit)%1000)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(limit)))
		// A calendar: periods of 1 to 1000ns from 0.
		bounds := make([]int64, 1, 300)
		for len(bounds) < cap(bounds) {
			bounds = append(bounds, bounds[len(bounds)-1]+1+rng.Int64N(1000))
		}
		last := bounds[len(bounds)-1]
		periodOf := func(now int64) window {
			i := sort.Search(len(bounds), func(i int) bool { return bounds[i] > now })
			return window{Start: bounds[i-1], End: bounds[i]}
		}
		cost := func(lim int64) int64 {
			switch rng.IntN(8) {
			case 0:
				return 0
			case 1:
				return lim + 1 + rng.Int64N(3) // may wrap to negative: skipped
			case 2:
				return lim
			}
			return 1 + rng.Int64N(min(lim, 10))
		}
		var s state
		var cur window
		used := map[int64]int64{} // events admitted (net of refunds) per period
		now := int64(0)
		for range 2000 {
			if rng.IntN(256) < int(back) {
				now = max(now-rng.Int64N(3000), 0)
			} else {
				now = min(now+rng.Int64N(400), last-1)
			}
			w := periodOf(now)
			if highWater {
				if w.Start < cur.Start {
					w = cur
				}
				cur = w
			}
			lim := limit
			if perCall {
				lim = 1 + rng.Int64N(limit)
			}
			prev := s
			// The period to decide in: the state's if it has not ended.
			inPrev := prev.End > w.Start && prev.End != 0
			want := w
			if inPrev {
				want = window{Start: prev.Start, End: prev.End}
				if want.Start < w.Start {
					t.Fatalf("state %+v from a period before w %+v not reset", prev, w)
				}
			}
			before := int64(0)
			if inPrev {
				before = prev.Used
			}

			if rng.IntN(10) == 0 { // refund
				k := rng.Int64N(5)
				s = refund(prev, w, k)
				if inPrev {
					if s.Used != before-min(k, before) || s.Start != prev.Start {
						t.Fatalf("refund(%+v, %+v, %d) = %+v", prev, w, k, s)
					}
					used[s.Start] = s.Used
				} else if s != prev {
					t.Fatalf("refund(%+v, %+v, %d) of an ended period = %+v, want it unchanged", prev, w, k, s)
				}
				continue
			}

			n := cost(lim)
			if n < 0 {
				continue
			}
			var r result
			s, r = step(prev, w, now, n, lim)

			if r.Start != want.Start || r.End != want.End || s.Start != want.Start || s.End != want.End {
				t.Fatalf("step(%+v, w=%+v, now=%d): decided in [%d, %d), state %+v; want [%d, %d)", prev, w, now, r.Start, r.End, s, want.Start, want.End)
			}
			if r.End <= now {
				t.Fatalf("period [%d, %d) is over at now=%d", r.Start, r.End, now)
			}
			if r.Allowed != (n <= lim-before || n == 0) {
				t.Fatalf("step(%+v, n=%d, limit=%d) at %d: allowed %v with %d used before", prev, n, lim, now, r.Allowed, before)
			}
			if r.Allowed {
				if s.Used != before+n || n > 0 && s.Used > lim || r.RetryAfter != 0 {
					t.Fatalf("allowed %d with %d used before: state %+v, %+v", n, before, s, r)
				}
				used[s.Start] += n
			} else {
				if s.Used != before {
					t.Fatalf("a denial changed the count: %d -> %+v", before, s)
				}
				if wantRetry := r.End - now; n > lim && r.RetryAfter != never || n <= lim && r.RetryAfter != wantRetry {
					t.Fatalf("denied n=%d limit=%d: RetryAfter %d, want %d (or never)", n, lim, r.RetryAfter, wantRetry)
				}
			}
			if used[s.Start] != s.Used {
				t.Fatalf("period %d: the state counts %d, %d were admitted in it", s.Start, s.Used, used[s.Start])
			}
			if r.Remaining != max(lim-s.Used, 0) {
				t.Fatalf("Remaining %d, want %d", r.Remaining, max(lim-s.Used, 0))
			}
			if s.Used > 0 && r.ResetAfter != r.End-now || s.Used == 0 && r.ResetAfter != 0 {
				t.Fatalf("ResetAfter %d with %d used, end %d, now %d", r.ResetAfter, s.Used, r.End, now)
			}
		}
	})
}
