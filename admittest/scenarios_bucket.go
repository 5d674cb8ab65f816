package admittest

import (
	"time"

	"github.com/admit-go/admit"
)

// bucketScenarios are the timelines of GCRA, TokenBucket and LeakyBucket.
//
// Derivations use GCRA's form: T = Period/Rate, capacity C = B×T, and the
// TAT (the instant the limit is full again). At instant now the debt is
// D = max(TAT-now, 0); n fits iff D + n×T <= C, and then TAT = now + D + n×T.
// A decision reports Remaining = ⌊(C-D)/T⌋ and ResetAfter = ⌈D⌉ with D after
// it, and, when denied, RetryAfter = ⌈D + n×T - C⌉. The three algorithms
// agree on every timeline that does not go backwards, so the scenarios
// before the last two apply to all three.
func bucketScenarios() []Scenario {
	return []Scenario{
		{
			// T = 100ms, C = 300ms.
			Name: "burst_then_refill", Algs: bucketAlgs, Limit: admit.PerSecond(10).WithBurst(3),
			Steps: []Step{
				{t0, "a", 1, Allow(2, 100*ms)},
				{t0, "a", 1, Allow(1, 200*ms)},
				{t0, "a", 1, Allow(0, 300*ms)},
				{t0, "a", 1, Deny(0, 100*ms, 300*ms)}, // D+T-C = 100ms
				// D = 300ms-(100ms-1ns) = 200ms+1ns: short by 1ns.
				{At(100*ms - ns), "a", 1, Deny(0, ns, 200*ms+ns)},
				{t1, "a", 1, Allow(0, 300*ms)}, // TAT = 400ms
				// D = 150ms, then 250ms: ⌊50/100⌋ = 0 remaining.
				{At(250 * ms), "a", 1, Allow(0, 250*ms)}, // TAT = 500ms
				{t3, "a", 0, Allow(1, 200*ms)},           // D = 200ms: one fits
				{At(sec), "a", 0, Allow(3, 0)},           // full again at 500ms
				{At(sec), "a", 3, Allow(0, 300*ms)},
				{At(1300 * ms), "a", 3, Allow(0, 300*ms)},
			},
		},
		{
			// T = C = 1s: one event per second, exactly.
			Name: "boundary_instants", Algs: bucketAlgs, Limit: admit.Every(time.Second),
			Steps: []Step{
				{t0, "a", 1, Allow(0, sec)},
				{At(sec - ns), "a", 1, Deny(0, ns, ns)},
				{At(sec), "a", 1, Allow(0, sec)},
				{At(sec), "a", 1, Deny(0, sec, sec)},
				{At(2*sec - ns), "a", 0, Allow(0, ns)},
				{At(2 * sec), "a", 0, Allow(1, 0)},
			},
		},
		{
			// T = 100ms, B = 5, C = 500ms.
			Name: "costs", Algs: bucketAlgs, Limit: admit.PerSecond(10).WithBurst(5),
			Steps: []Step{
				{t0, "a", 6, Never(5, 0)},
				{t0, "a", 3, Allow(2, 300*ms)},
				{t0, "a", 3, Deny(2, 100*ms, 300*ms)}, // 300+300-500
				{t0, "a", 2, Allow(0, 500*ms)},
				{t0, "a", 6, Never(0, 500*ms)},
				{At(50 * ms), "a", 1, Deny(0, 50*ms, 450*ms)}, // D = 450ms
				{t1, "a", 1, Allow(0, 500*ms)},                // D = 400ms; TAT = 600ms
				{t3, "a", 2, Allow(0, 500*ms)},                // D = 300ms; TAT = 800ms
				{t3, "a", 5, Deny(0, 500*ms, 500*ms)},         // 500+500-500
				{t8, "a", 5, Allow(0, 500*ms)},                // D = 0; TAT = 1.3s
				{t8, "a", -1, Refused()},
				{t8, "a", 0, Allow(0, 500*ms)},
				{At(1300 * ms), "a", 0, Allow(5, 0)},
			},
		},
		{
			// 3/s: T = 333333333⅓ns, C = 1s. The k-th event after the burst
			// is admitted at ⌈k×T⌉ and not 1ns before.
			Name: "non_integer_interval", Algs: bucketAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				{t0, "a", 1, Allow(2, 333333334*ns)}, // ⌈T⌉
				{t0, "a", 1, Allow(1, 666666667*ns)}, // ⌈2T⌉
				{t0, "a", 1, Allow(0, sec)},
				{t0, "a", 1, Deny(0, 333333334*ns, sec)}, // ⌈D+T-C⌉ = ⌈T⌉
				// D = 1s-333333333 = 666666667; D+T-C = ⅓ns.
				{At(333333333 * ns), "a", 1, Deny(0, ns, 666666667*ns)},
				// D = 666666666, D+T = 999999999⅓ <= C;
				// TAT = 1333333333⅓.
				{At(333333334 * ns), "a", 1, Allow(0, sec)},
				// D = 666666667⅓; D+T-C = ⅔ns.
				{At(666666666 * ns), "a", 1, Deny(0, ns, 666666668*ns)},
				// D = 666666666⅓; TAT = 1666666666⅔, D after = 999999999⅔.
				{At(666666667 * ns), "a", 1, Allow(0, sec)},
				// D = 666666666⅔; D+T = C exactly; TAT = 2s.
				{At(sec), "a", 1, Allow(0, sec)},
				{At(2 * sec), "a", 0, Allow(3, 0)},
			},
		},
		{
			// 7 per 3s, burst 2: T = 428571428 4/7 ns, C = 857142857 1/7 ns.
			Name: "awkward_7_per_3s", Algs: bucketAlgs, Limit: admit.Limit{Rate: 7, Period: 3 * sec, Burst: 2},
			Steps: []Step{
				{t0, "a", 2, Allow(0, 857142858*ns)},
				{t0, "a", 1, Deny(0, 428571429*ns, 857142858*ns)},
				// D = 428571429 1/7; D+T-C = 4/7 ns.
				{At(428571428 * ns), "a", 1, Deny(0, ns, 428571430*ns)},
				// D = 428571428 1/7; D+T = 857142856 5/7 <= C.
				{At(428571429 * ns), "a", 1, Allow(0, 857142857*ns)},
				{At(3 * sec), "a", 0, Allow(2, 0)},
			},
		},
		{
			// T = 600ms. Idle for 90 years refills to B and no further.
			Name: "long_idle_gap", Algs: bucketAlgs, Limit: admit.PerMinute(100),
			Steps: []Step{
				{t0, "a", 100, Allow(0, time.Minute)},
				{t0, "a", 1, Deny(0, 600*ms, time.Minute)},
				{At(longIdle), "a", 0, Allow(100, 0)},
				{At(longIdle), "a", 101, Never(100, 0)},
				{At(longIdle), "a", 100, Allow(0, time.Minute)},
				{At(longIdle), "a", 1, Deny(0, 600*ms, time.Minute)},
			},
		},
		{
			// 1e9/s burst 1e6: T = 1ns, C = 1ms.
			Name: "huge_rate_and_burst", Algs: bucketAlgs, Limit: admit.Limit{Rate: 1e9, Period: sec, Burst: 1e6},
			Steps: []Step{
				{t0, "a", 1e6, Allow(0, ms)},
				{t0, "a", 1, Deny(0, ns, ms)},
				{At(ns), "a", 1, Allow(0, ms)}, // TAT = 1ms+1ns
				{At(ms + ns), "a", 0, Allow(1e6, 0)},
				{At(ms + ns), "a", 999999, Allow(1, 999999*ns)},
				{At(ms + ns), "a", 1e6, Deny(1, 999999*ns, 999999*ns)},
				{At(ms + ns), "a", 1e6 + 1, Never(1, 999999*ns)},
			},
		},
		{
			// 1e6 per day with burst 1e6: T = 86.4ms, C = 24h.
			Name: "million_per_day", Algs: bucketAlgs, Limit: admit.PerDay(1e6),
			Steps: []Step{
				{t0, "a", 1e6, Allow(0, day)},
				// D = 12h: ⌊12h/86.4ms⌋ = 500000 remaining.
				{At(12 * time.Hour), "a", 0, Allow(500000, 12*time.Hour)},
				{At(12 * time.Hour), "a", 500001, Deny(500000, 86400*time.Microsecond, 12*time.Hour)},
				{At(12 * time.Hour), "a", 500000, Allow(0, day)},
			},
		},
		{
			// 1 per day, and 1 per 36 years (T = 1.135296e18ns, the longest
			// capacity a limit may have is 2^60ns).
			Name: "tiny_rates", Algs: bucketAlgs, Limit: admit.PerDay(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, day)},
				{At(day - ns), "a", 1, Deny(0, ns, ns)},
				{At(day), "a", 1, Allow(0, day)},
			},
		},
		{
			Name: "one_per_36_years", Algs: bucketAlgs, Limit: admit.Every(years36),
			Steps: []Step{
				{t0, "a", 1, Allow(0, years36)},
				{At(years36 - ns), "a", 1, Deny(0, ns, ns)},
				{At(years36), "a", 1, Allow(0, years36)},
				{At(years36), "a", 1, Deny(0, years36, years36)},
			},
		},
		{
			// T = 500ms, C = 1s. Every key is its own limit, whatever bytes
			// it holds.
			Name: "independent_keys", Algs: bucketAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, sec)},
				{t0, "b", 1, Allow(1, 500*ms)},
				{t0, "a", 1, Deny(0, 500*ms, sec)},
				{t0, "c", 0, Allow(2, 0)},
				{t0, "b", 1, Allow(0, sec)},
				{t0, "{a}", 1, Allow(1, 500*ms)},
				{t0, "a}{", 1, Allow(1, 500*ms)},
				{t0, "a\x00b", 1, Allow(1, 500*ms)},
				{t0, "ключ", 2, Allow(0, sec)},
				{t5, "a", 1, Allow(0, sec)},            // D = 500ms
				{t5, "b", 2, Deny(1, 500*ms, 500*ms)},  // D = 500ms
				{t5, "{a}", 2, Allow(0, sec)},          // D = 0
				{At(sec), "c", 2, Allow(0, sec)},       // never used
				{At(sec), "a\x00b", 0, Allow(2, 0)},    // full since 500ms
				{At(sec), "a", 0, Allow(1, 500*ms)},    // TAT = 1.5s
				{At(sec), "ключ", 1, Allow(1, 500*ms)}, // full at 1s
				{At(sec), "a}{", 2, Allow(0, sec)},     // full since 500ms
				{At(1500 * ms), "b", 0, Allow(2, 0)},   // TAT = 1s
				{At(1500 * ms), "a", 2, Allow(0, sec)}, // TAT = 1.5s
				{At(1500 * ms), "{a}", 0, Allow(2, 0)}, // TAT = 1.5s
			},
		},
		{
			// GCRA judges an earlier instant as it is: the TAT is further
			// away from it, so it owes more. T = 100ms, C = 200ms.
			Name: "backwards_gcra", Algs: []admit.Algorithm{admit.AlgGCRA}, Limit: admit.PerSecond(10).WithBurst(2),
			Steps: []Step{
				{At(sec), "a", 1, Allow(1, 100*ms)},             // TAT = 1.1s
				{t9, "a", 1, Deny(0, 100*ms, 200*ms)},           // D = 200ms
				{At(950 * ms), "a", 0, Allow(0, 150*ms)},        // D = 150ms
				{At(sec), "a", 1, Allow(0, 200*ms)},             // D = 100ms; TAT = 1.2s
				{t5, "a", 1, Deny(0, 600*ms, 700*ms)},           // D = 700ms
				{At(1200 * ms), "a", 2, Allow(0, 200*ms)},       // D = 0
				{At(1200*ms - ns), "a", 0, Allow(0, 200*ms+ns)}, // TAT = 1.4s
			},
		},
		{
			// The buckets judge an instant earlier than their latest
			// admission as that admission's instant L (time going backwards
			// neither refills nor drains them); durations are measured from
			// the caller's instant: an instant L+x reported as (L-now)+x.
			// Same timeline as backwards_gcra; T = 100ms, C = 200ms.
			Name: "backwards_buckets", Algs: []admit.Algorithm{admit.AlgTokenBucket, admit.AlgLeakyBucket}, Limit: admit.PerSecond(10).WithBurst(2),
			Steps: []Step{
				{At(sec), "a", 1, Allow(1, 100*ms)}, // TAT = 1.1s, L = 1s
				// Judged at 1s: D = 100ms fits; TAT = 1.2s, 300ms away.
				{t9, "a", 1, Allow(0, 300*ms)},
				{At(950 * ms), "a", 0, Allow(0, 250*ms)},
				{At(sec), "a", 1, Deny(0, 100*ms, 200*ms)},
				// Judged at 1s: retry at 1.1s, full at 1.2s.
				{t5, "a", 1, Deny(0, 600*ms, 700*ms)},
				{At(1200 * ms), "a", 2, Allow(0, 200*ms)}, // L = 1.2s, TAT = 1.4s
				// Judged at 1.2s: D = 200ms; full at 1.4s, 200ms+1ns away.
				{At(1200*ms - ns), "a", 0, Allow(0, 200*ms+ns)},
				// Full at 1.4s: judged at 1.4s, nothing to wait for.
				{At(1400 * ms), "a", 1, Allow(1, 100*ms)}, // L = 1.4s
				{At(sec), "a", 0, Allow(1, 500*ms)},       // full at 1.5s
			},
		},
	}
}

// years36 is 36×365 days, within the longest capacity (2^60ns) a limit may
// have.
const years36 = 36 * 365 * day
