package admittest

import "github.com/admit-go/admit"

var approxAlgs = []admit.Algorithm{admit.AlgSlidingWindowApprox}

// overloadScenarios show what the two sliding windows admit under steady
// overload, in the window after a full one (W = 1s, windows start on
// whole seconds after Epoch).
//
// The strict form (AlgSlidingWindow) admits n iff Prev×(W-e)/W + Cur + n
// <= B: with Prev > 0 the weighted term is positive until the window ends,
// so the window admits at most B-1 (for B = 1, nothing).
//
// The approximate form (AlgSlidingWindowApprox) admits n iff
// ⌊Prev×(W-e)/W⌋ + Cur + n <= B, and admits B. Its Remaining is B - Cur -
// ⌊Prev×(W-e)/W⌋; its RetryAfter runs to the first nanosecond at which
// that term has fallen enough; its ResetAfter to the first at which the
// counts weigh nothing: the first e of the next window with Cur×(W-e) <
// W if Cur > 0, else the first e of this one with Prev×(W-e) < W. An
// admission where the previous window weighs nothing forgets it.
func overloadScenarios() []Scenario {
	return []Scenario{
		{
			// B = 3: the second window admits 2 (at W/3 and 2W/3).
			Name: "steady_overload_strict", Algs: slidingAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				{t0, "a", 3, Allow(0, 2*sec)},
				// 3×(W-e)/W + 1 <= 3 from e = ⌈W/3⌉.
				{At(sec), "a", 1, Deny(0, 333333334*ns, sec)},
				{At(sec + 333333334*ns), "a", 1, Allow(0, 1666666666*ns)},
				// 3×(W-e)/W + 2 <= 3 from e = ⌈2W/3⌉.
				{At(sec + 666666666*ns), "a", 1, Deny(0, ns, 1333333334*ns)},
				{At(sec + 666666667*ns), "a", 1, Allow(0, 1333333333*ns)},
				// A third never fits in this window.
				{At(2*sec - ns), "a", 1, Deny(0, ns, sec+ns)},
				{At(2 * sec), "a", 1, Allow(0, 2*sec)}, // Prev 2: 2 + 1
			},
		},
		{
			// B = 3: the second window admits 3 (from e = 1ns, W/3, 2W/3).
			Name: "steady_overload_approx", Algs: approxAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				// Full again once 3×(W-e) < W in the next window: e = ⌊W/3⌋+1.
				{t0, "a", 3, Allow(0, 1666666667*ns)},
				// ⌊3×(W-e)/W⌋ + 1 <= 3 from e = 1ns.
				{At(sec), "a", 1, Deny(0, ns, 666666667*ns)},
				{At(sec + ns), "a", 1, Allow(0, sec)},
				// ⌊3×(W-e)/W⌋ <= 1 from 3×(W-e) < 2W: e = 333333334ns.
				{At(sec + 333333333*ns), "a", 1, Deny(0, ns, 666666668*ns)},
				{At(sec + 333333334*ns), "a", 1, Allow(0, 1166666667*ns)},
				// ⌊3×(W-e)/W⌋ = 0 from e = 666666667ns: the third fits, and
				// Prev is forgotten.
				{At(sec + 666666666*ns), "a", 1, Deny(0, ns, 833333335*ns)},
				{At(sec + 666666667*ns), "a", 1, Allow(0, sec)},
				{At(2 * sec), "a", 1, Deny(0, ns, 666666667*ns)}, // ⌊3⌋ + 1 > 3
			},
		},
		{
			// B = 1: one event every other window.
			Name: "burst_one_strict", Algs: slidingAlgs, Limit: admit.PerSecond(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, 2*sec)},
				{At(sec), "a", 1, Deny(0, sec, sec)},
				{At(2*sec - ns), "a", 1, Deny(0, ns, ns)},
				{At(2 * sec), "a", 1, Allow(0, 2*sec)},
			},
		},
		{
			// B = 1: one event per window, from 1ns into it.
			Name: "burst_one_approx", Algs: approxAlgs, Limit: admit.PerSecond(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, sec+ns)},
				{At(sec), "a", 0, Allow(0, ns)},
				{At(sec), "a", 1, Deny(0, ns, ns)},
				{At(sec + ns), "a", 1, Allow(0, sec)},
				{At(2*sec + ns), "a", 1, Allow(0, sec)},
				{At(2*sec + ns), "a", 1, Deny(0, sec, sec)},
			},
		},
	}
}
