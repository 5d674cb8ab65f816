package admittest

import (
	"time"

	"github.com/admit-go/admit"
)

var (
	fixedAlgs   = []admit.Algorithm{admit.AlgFixedWindow}
	slidingAlgs = []admit.Algorithm{admit.AlgSlidingWindow}
)

// fixedWindowScenarios are the timelines of FixedWindow. Windows are
// W = B×T long and start at whole multiples of W since the Unix epoch (for
// W dividing a day, at Epoch). A window admits at most B; a denial's
// RetryAfter and, once the window holds events, ResetAfter run to the start
// of the next window.
func fixedWindowScenarios() []Scenario {
	return []Scenario{
		{
			Name: "burst_then_next_window", Algs: fixedAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				{t0, "a", 1, Allow(2, sec)},
				{t4, "a", 2, Allow(0, 600*ms)},
				{t4, "a", 1, Deny(0, 600*ms, 600*ms)},
				{t4, "a", 4, Never(0, 600*ms)},
				{At(sec - ns), "a", 1, Deny(0, ns, ns)},
				{At(sec), "a", 0, Allow(3, 0)},
				{At(sec), "a", 3, Allow(0, sec)},
				{At(2*sec - ns), "a", 1, Deny(0, ns, ns)},
				{At(2 * sec), "a", 2, Allow(1, sec)},
			},
		},
		{
			// Two full windows meet at an edge: 2B within 1ms.
			Name: "window_edge_burst", Algs: fixedAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				{At(999 * ms), "a", 3, Allow(0, ms)},
				{At(sec), "a", 3, Allow(0, sec)},
				{At(sec), "a", 1, Deny(0, sec, sec)},
			},
		},
		{
			// 3/s burst 1: W = T = 333333333⅓ns; Epoch×3/1s is whole, so
			// windows start at Epoch + k×W: +333333333⅓, +666666666⅔, +1s.
			Name: "non_integer_window", Algs: fixedAlgs, Limit: admit.PerSecond(3).WithBurst(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, 333333334*ns)},
				{t0, "a", 1, Deny(0, 333333334*ns, 333333334*ns)},
				{At(333333333 * ns), "a", 1, Deny(0, ns, ns)}, // ⌈⅓⌉
				{At(333333334 * ns), "a", 1, Allow(0, 333333333*ns)},
				{At(666666666 * ns), "a", 1, Deny(0, ns, ns)}, // ⌈⅔⌉
				{At(666666667 * ns), "a", 1, Allow(0, 333333333*ns)},
				{At(sec), "a", 1, Allow(0, 333333334*ns)},
				{At(sec), "a", 2, Never(0, 333333334*ns)},
			},
		},
		{
			// 7 per 3s: B = 7, W = 3s; Epoch is a multiple of 3s.
			Name: "awkward_7_per_3s", Algs: fixedAlgs, Limit: admit.Limit{Rate: 7, Period: 3 * sec},
			Steps: []Step{
				{t0, "a", 5, Allow(2, 3*sec)},
				{At(2500 * ms), "a", 3, Deny(2, 500*ms, 500*ms)},
				{At(2500 * ms), "a", 2, Allow(0, 500*ms)},
				{At(3 * sec), "a", 8, Never(7, 0)},
				{At(3 * sec), "a", 7, Allow(0, 3*sec)},
			},
		},
		{
			// W = 7s: Epoch is 7k+1 seconds after the Unix epoch, so the
			// window holding Epoch ends 6s after it.
			Name: "aligned_on_unix_epoch", Algs: fixedAlgs, Limit: admit.Every(7 * sec),
			Steps: []Step{
				{t0, "a", 1, Allow(0, 6*sec)},
				{At(6*sec - ns), "a", 1, Deny(0, ns, ns)},
				{At(6 * sec), "a", 1, Allow(0, 7*sec)},
			},
		},
		{
			Name: "long_idle_gap", Algs: fixedAlgs, Limit: admit.PerMinute(100),
			Steps: []Step{
				{t0, "a", 100, Allow(0, time.Minute)},
				{t0, "a", 1, Deny(0, time.Minute, time.Minute)},
				{At(longIdle), "a", 0, Allow(100, 0)},
				{At(longIdle), "a", 100, Allow(0, time.Minute)},
			},
		},
		{
			// W = 1e6 × 1ns = 1ms.
			Name: "huge_rate_and_burst", Algs: fixedAlgs, Limit: admit.Limit{Rate: 1e9, Period: sec, Burst: 1e6},
			Steps: []Step{
				{t0, "a", 1e6, Allow(0, ms)},
				{At(ms - ns), "a", 1, Deny(0, ns, ns)},
				{At(ms), "a", 1e6 + 1, Never(1e6, 0)},
				{At(ms), "a", 1, Allow(999999, ms)},
			},
		},
		{
			Name: "tiny_rate", Algs: fixedAlgs, Limit: admit.PerDay(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, day)},
				{At(12 * time.Hour), "a", 1, Deny(0, 12*time.Hour, 12*time.Hour)},
				{At(day - ns), "a", 1, Deny(0, ns, ns)},
				{At(day), "a", 1, Allow(0, day)},
			},
		},
		{
			Name: "independent_keys", Algs: fixedAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, sec)},
				{t0, "b", 1, Allow(1, sec)},
				{t0, "a", 1, Deny(0, sec, sec)},
				{t0, "c", 0, Allow(2, 0)},
				{t0, "{a}", 1, Allow(1, sec)},
				{t0, "a\x00b", 2, Allow(0, sec)},
				{t5, "b", 1, Allow(0, 500*ms)},
				{t5, "a", 0, Allow(0, 500*ms)},
				{t5, "{a}", 1, Allow(0, 500*ms)},
				{At(sec), "a", 2, Allow(0, sec)},
				{At(sec), "a\x00b", 0, Allow(2, 0)},
			},
		},
		{
			// An instant earlier than the current window counts in it;
			// durations run from the caller's instant. W = 1s.
			Name: "backwards", Algs: fixedAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{At(1500 * ms), "a", 1, Allow(1, 500*ms)}, // window [1s, 2s)
				{t5, "a", 1, Allow(0, 1500*ms)},           // counts in [1s, 2s)
				{t2, "a", 1, Deny(0, 1800*ms, 1800*ms)},
				{At(1900 * ms), "a", 0, Allow(0, 100*ms)},
				{At(2 * sec), "a", 2, Allow(0, sec)},       // window [2s, 3s)
				{At(1900 * ms), "a", 0, Allow(0, 1100*ms)}, // counts in [2s, 3s)
				{At(1900 * ms), "a", 1, Deny(0, 1100*ms, 1100*ms)},
			},
		},
	}
}

// slidingWindowScenarios are the timelines of SlidingWindow. Windows are as
// FixedWindow's; at elapsed e into window k (start S) holding Cur events,
// after Prev in window k-1, the estimate is Prev×(W-e)/W + Cur, and n is
// admitted iff estimate + n <= B. Remaining = ⌊B - estimate⌋. The estimate
// falls continuously (to Cur at S+W, then as Cur×(S+2W-t)/W to 0 at S+2W),
// so RetryAfter runs to the first instant it is <= B-n, rounded up, and
// ResetAfter to S+2W if Cur > 0, else to S+W if Prev > 0.
func slidingWindowScenarios() []Scenario {
	return []Scenario{
		{
			// B = 4, W = 1s.
			Name: "burst_then_slide", Algs: slidingAlgs, Limit: admit.PerSecond(4),
			Steps: []Step{
				{t0, "a", 4, Allow(0, 2*sec)},
				// In window 1: 4×(2s-t)/1s <= 3 from t = 1.25s.
				{t5, "a", 1, Deny(0, 750*ms, 1500*ms)},
				{At(sec), "a", 0, Allow(0, sec)}, // Prev 4, estimate 4
				// Estimate 4×(750ms+1ns)/1s = 3.000000004.
				{At(1250*ms - ns), "a", 1, Deny(0, ns, 750*ms+ns)},
				{At(1250 * ms), "a", 1, Allow(0, 1750*ms)}, // 3 + 1
				{At(1500 * ms), "a", 1, Allow(0, 1500*ms)}, // 2 + 1 + 1
				// 4×(2s-t)/1s + 2 <= 3 from t = 1.75s.
				{At(1500 * ms), "a", 1, Deny(0, 250*ms, 1500*ms)},
				// Estimate 1+2 = 3: ⌊4-3⌋ = 1 left, 2 fit from 2s.
				{At(1750 * ms), "a", 2, Deny(1, 250*ms, 1250*ms)},
				{At(1750 * ms), "a", 1, Allow(0, 1250*ms)}, // Cur 3
				// Window 2: Prev 3, estimate 3×0.5 = 1.5.
				{At(2500 * ms), "a", 0, Allow(2, 500*ms)},
				// 3×(3s-t)/1s <= 1 from t = 2⅔s: ⌈166666666⅔⌉.
				{At(2500 * ms), "a", 3, Deny(2, 166666667*ns, 500*ms)},
				// Estimate 3×333333333/1e9 + 3 = 3.999999999; full at 4s.
				{At(2500*ms + 166666667*ns), "a", 3, Allow(0, 1333333333*ns)},
				{At(5 * sec), "a", 0, Allow(4, 0)},
			},
		},
		{
			// 3/s burst 2: W = 666666666⅔ns, windows start at Epoch + k×W.
			Name: "non_integer_window", Algs: slidingAlgs, Limit: admit.PerSecond(3).WithBurst(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, 1333333334*ns)}, // ⌈2W⌉
				// 2×(2W-t)/W <= 1 from t = 1.5W = 1s.
				{t0, "a", 1, Deny(0, sec, 1333333334*ns)},
				// Window 1, e = 333333332⅓: estimate 1.000000003;
				// full at 2W = 1333333333⅓.
				{At(sec - ns), "a", 1, Deny(0, ns, 333333335*ns)},
				{At(sec), "a", 1, Allow(0, sec)}, // estimate 1 + 1; full at 3W = 2s
				{At(2 * sec), "a", 0, Allow(2, 0)},
			},
		},
		{
			// 7 per 3s: B = 7, W = 3s.
			Name: "awkward_7_per_3s", Algs: slidingAlgs, Limit: admit.Limit{Rate: 7, Period: 3 * sec},
			Steps: []Step{
				{t0, "a", 5, Allow(2, 6*sec)},
				// 5×(6s-t)/3s <= 4 from t = 3.6s.
				{At(2500 * ms), "a", 3, Deny(2, 1100*ms, 3500*ms)},
				{At(3600 * ms), "a", 3, Allow(0, 5400*ms)}, // 5×0.8 + 3
				{At(3600 * ms), "a", 0, Allow(0, 5400*ms)},
			},
		},
		{
			// W = 7s; the window holding Epoch runs from -1s to +6s.
			Name: "aligned_on_unix_epoch", Algs: slidingAlgs, Limit: admit.Every(7 * sec),
			Steps: []Step{
				{t0, "a", 1, Allow(0, 13*sec)},
				{At(6*sec - ns), "a", 1, Deny(0, 7*sec+ns, 7*sec+ns)},
				{At(6 * sec), "a", 1, Deny(0, 7*sec, 7*sec)}, // Prev 1, e = 0
				{At(13 * sec), "a", 1, Allow(0, 14*sec)},
			},
		},
		{
			Name: "long_idle_gap", Algs: slidingAlgs, Limit: admit.PerMinute(100),
			Steps: []Step{
				{t0, "a", 100, Allow(0, 2*time.Minute)},
				// 100×(2min-t)/1min <= 99 from t = 60.6s.
				{t0, "a", 1, Deny(0, 60600*ms, 2*time.Minute)},
				{At(longIdle), "a", 0, Allow(100, 0)},
				{At(longIdle), "a", 100, Allow(0, 2*time.Minute)},
			},
		},
		{
			// W = 1ms.
			Name: "huge_rate_and_burst", Algs: slidingAlgs, Limit: admit.Limit{Rate: 1e9, Period: sec, Burst: 1e6},
			Steps: []Step{
				{t0, "a", 1e6, Allow(0, 2*ms)},
				{At(1500 * time.Microsecond), "a", 0, Allow(500000, 500*time.Microsecond)},
				// 1e6×(2ms-t)/1ms <= 499999 from t = 1.500001ms.
				{At(1500 * time.Microsecond), "a", 500001, Deny(500000, ns, 500*time.Microsecond)},
				{At(1500*time.Microsecond + ns), "a", 500001, Allow(0, 1499999*ns)},
				{At(1500*time.Microsecond + ns), "a", 1e6 + 1, Never(0, 1499999*ns)},
			},
		},
		{
			Name: "tiny_rate", Algs: slidingAlgs, Limit: admit.PerDay(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, 2*day)},
				{At(day), "a", 1, Deny(0, day, day)},
				{At(36 * time.Hour), "a", 0, Allow(0, 12*time.Hour)}, // estimate ½
				{At(2*day - ns), "a", 1, Deny(0, ns, ns)},
				{At(2 * day), "a", 1, Allow(0, 2*day)},
			},
		},
		{
			Name: "independent_keys", Algs: slidingAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, 2*sec)},
				{t0, "b", 1, Allow(1, 2*sec)},
				{t0, "a", 1, Deny(0, 1500*ms, 2*sec)},
				{t0, "c", 0, Allow(2, 0)},
				{t0, "{a}", 1, Allow(1, 2*sec)},
				{t0, "a\x00b", 2, Allow(0, 2*sec)},
				{t5, "b", 1, Allow(0, 1500*ms)},
				{At(1500 * ms), "a", 1, Allow(0, 1500*ms)},
				{At(1500 * ms), "b", 0, Allow(1, 500*ms)},
				{At(1500 * ms), "{a}", 0, Allow(1, 500*ms)},
				{At(1500 * ms), "a\x00b", 2, Deny(1, 500*ms, 500*ms)},
			},
		},
		{
			// An instant earlier than the current window counts at its
			// start (e = 0); one inside it counts as it is. W = 1s.
			Name: "backwards", Algs: slidingAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t5, "a", 2, Allow(0, 1500*ms)},
				{At(1500 * ms), "a", 1, Allow(0, 1500*ms)}, // 2×0.5 + 1
				{At(1200 * ms), "a", 0, Allow(0, 1800*ms)}, // 2×0.8 + 1
				{t9, "a", 0, Allow(0, 2100*ms)},            // at 1s: 2 + 1
				{t9, "a", 1, Deny(0, 1100*ms, 2100*ms)},    // fits from 2s
				{At(2 * sec), "a", 1, Allow(0, 2*sec)},     // 1 + 1
			},
		},
	}
}
