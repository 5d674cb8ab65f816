package admit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// The two forms of the sliding window, against the sliding log, on traffic
// given as explicit instants (admittest.Epoch is on a whole second, so the
// windows of these limits, W = 1s, start on whole seconds after it).

// play offers one request of one event at each instant to a fresh limiter
// of algorithm alg under l and returns the events it admitted.
func play(t *testing.T, alg admit.Algorithm, l admit.Limit, instants []time.Time) []admittest.Event {
	t.Helper()
	lim, err := admit.New(alg, l)
	if err != nil {
		t.Fatal(err)
	}
	var evs []admittest.Event
	for _, at := range instants {
		if lim.AllowN(at, 1) {
			evs = append(evs, admittest.Event{At: at, N: 1})
		}
	}
	return evs
}

// every returns the instants from..to (excluded) every step.
func every(from, to, step time.Duration) []time.Time {
	var ts []time.Time
	for d := from; d < to; d += step {
		ts = append(ts, admittest.At(d))
	}
	return ts
}

// perWindow counts evs in each window [k×w, (k+1)×w) after Epoch.
func perWindow(evs []admittest.Event, w time.Duration, windows int) []int {
	n := make([]int, windows)
	for _, e := range evs {
		if k := int(e.At.Sub(admittest.Epoch) / w); k < windows {
			n[k] += int(e.N)
		}
	}
	return n
}

// busiest returns the most events in any interval [a, a+w).
func busiest(evs []admittest.Event, w time.Duration) int {
	most, sum, j := 0, 0, 0
	for i := range evs {
		sum += int(evs[i].N)
		for !evs[j].At.Add(w).After(evs[i].At) {
			sum -= int(evs[j].N)
			j++
		}
		most = max(most, sum)
	}
	return most
}

// TestSlidingWindowSteadyOverload: offered a request every millisecond
// (10 to 1000 times the rate) for 20s, the strict form admits B-1 in every
// window after the first (for B = 1, one in every other window), the
// approximate form and the log B in every window.
func TestSlidingWindowSteadyOverload(t *testing.T) {
	const windows = 20
	traffic := every(0, windows*time.Second, time.Millisecond)
	for _, rate := range []int64{1, 3, 10, 100} {
		l := admit.PerSecond(rate)
		strict := perWindow(play(t, admit.AlgSlidingWindow, l, traffic), time.Second, windows)
		approx := perWindow(play(t, admit.AlgSlidingWindowApprox, l, traffic), time.Second, windows)
		log := perWindow(play(t, admit.AlgSlidingLog, l, traffic), time.Second, windows)
		for k := range windows {
			wantStrict := int(rate) - 1
			switch {
			case k == 0:
				wantStrict = int(rate)
			case rate == 1:
				wantStrict = 1 - k%2
			}
			if strict[k] != wantStrict || approx[k] != int(rate) || log[k] != int(rate) {
				t.Errorf("%v window %d: strict %d (want %d), approximate %d, log %d (want %d)", l, k, strict[k], wantStrict, approx[k], log[k], rate)
			}
		}
	}
}

// TestSlidingWindowBoundsReached: B events at the last nanosecond of a
// window, then a request every millisecond: the next window admits B-1
// (strict) or B (approximate), all within W of the B, so an interval of
// length W holds 2B-1 or 2B, where the log holds B. Both stay within the
// bound CheckBound checks for them; the approximate form's is one more
// than the bucket bound, and it is reached.
func TestSlidingWindowBoundsReached(t *testing.T) {
	for _, rate := range []int64{3, 10, 100} {
		l := admit.PerSecond(rate)
		b := int(rate)
		traffic := make([]time.Time, b, b+3000)
		for i := range traffic {
			traffic[i] = admittest.At(time.Second - time.Nanosecond)
		}
		traffic = append(traffic, every(time.Second, 4*time.Second, time.Millisecond)...)
		for alg, want := range map[admit.Algorithm]int{admit.AlgSlidingWindow: 2*b - 1, admit.AlgSlidingWindowApprox: 2 * b, admit.AlgSlidingLog: b} {
			evs := play(t, alg, l, traffic)
			if got := busiest(evs, time.Second); got != want {
				t.Errorf("%v %v: %d events in the busiest interval of 1s, want %d", alg, l, got, want)
			}
			if err := admittest.CheckBound(alg, evs, l); err != nil {
				t.Errorf("%v %v: %v", alg, l, err)
			}
			if alg == admit.AlgSlidingWindowApprox && admittest.CheckBound(admit.AlgGCRA, evs, l) == nil {
				t.Errorf("%v %v: within the bucket bound; want one more for some t", alg, l)
			}
		}
	}
}

// TestSlidingWindowRandomBounds checks both forms' bounds (CheckBound) on
// Poisson arrivals at half, once, twice and ten times the rate, of one to
// B events each, and on bursts of B at random instants.
func TestSlidingWindowRandomBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 6))
	for _, l := range []admit.Limit{admit.PerSecond(3), admit.PerSecond(10), admit.PerSecond(100), {Rate: 7, Period: 3 * time.Second, Burst: 2}} {
		tNs := float64(l.Period) / float64(l.Rate)
		for _, load := range []float64{0.5, 1, 2, 10, 0} {
			var reqs []admit.Request
			at := admittest.Epoch
			for range 1500 {
				n := int64(1)
				if load == 0 { // bursts of B
					at = at.Add(time.Duration(r.ExpFloat64() * float64(l.Burst) * tNs))
					n = l.Burst
				} else {
					at = at.Add(time.Duration(r.ExpFloat64() * tNs / load))
					n = 1 + r.Int64N(l.Burst)
				}
				reqs = append(reqs, admit.Request{Key: "k", N: n, At: at})
			}
			for _, alg := range []admit.Algorithm{admit.AlgSlidingWindow, admit.AlgSlidingWindowApprox} {
				lim, _ := admit.New(alg, l)
				var evs []admittest.Event
				for _, q := range reqs {
					if lim.AllowN(q.At, int(q.N)) {
						evs = append(evs, admittest.Event{At: q.At, N: q.N})
					}
				}
				if err := admittest.CheckBound(alg, evs, l); err != nil {
					t.Errorf("%v %v load %v: %v", alg, l, load, err)
				}
			}
		}
	}
}
