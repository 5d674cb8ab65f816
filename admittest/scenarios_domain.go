package admittest

import (
	"time"

	"github.com/admit-go/admit"
)

// domainScenarios exercise limits inside the domain admit.Limit documents
// (any positive Period, whole Rate and Burst, capacity B×T of at most 36
// years) whose emission interval is an awkward fraction with a large
// denominator: 100003 per day is T = 86400e9/100003 = 863974080.777...ns
// (⌈T⌉ = 863974081), capacity C = W = 24h.
func domainScenarios() []Scenario {
	l := admit.PerDay(100003)
	const ceilT = 863974081 * ns
	return []Scenario{
		{
			Name: "awkward_rate_per_day", Algs: bucketAlgs, Limit: l,
			Steps: []Step{
				{t0, "a", 100003, Allow(0, day)},
				{t0, "a", 1, Deny(0, ceilT, day)},
				// D = C-⌈T⌉+1; D+T-C = T-⌈T⌉+1 ∈ (0, 1).
				{At(ceilT - ns), "a", 1, Deny(0, ns, day-ceilT+ns)},
				// D+T = C-(⌈T⌉-T) <= C; TAT = C+T.
				{At(ceilT), "a", 1, Allow(0, day)},
				// D = 12h+T: ⌊(12h-T)/T⌋ = ⌊100003/2⌋-1 = 50000.
				{At(12 * time.Hour), "a", 0, Allow(50000, 12*time.Hour+ceilT)},
			},
		},
		{
			Name: "awkward_rate_per_day", Algs: fixedAlgs, Limit: l,
			Steps: []Step{
				{t0, "a", 100003, Allow(0, day)},
				{t0, "a", 1, Deny(0, day, day)},
				{At(day), "a", 1, Allow(100002, day)},
			},
		},
		{
			Name: "awkward_rate_per_day", Algs: slidingAlgs, Limit: l,
			Steps: []Step{
				{t0, "a", 100003, Allow(0, 2*day)},
				{At(12 * time.Hour), "a", 0, Allow(0, 36*time.Hour)},
				// Window 1 at e = 12h: estimate 100003/2 = 50001.5.
				{At(36 * time.Hour), "a", 0, Allow(50001, 12*time.Hour)},
			},
		},
		{
			Name: "awkward_rate_per_day", Algs: logAlgs, Limit: l,
			Steps: []Step{
				{t0, "a", 100003, Allow(0, day)},
				{At(day - ns), "a", 1, Deny(0, ns, ns)},
				{At(day), "a", 1, Allow(100002, day)},
			},
		},
	}
}

// before1970Scenarios: instants before 1970 count as 1970-01-01T00:00:00Z,
// the Unix epoch, and durations run from it. Limit 1/s: T = W = 1s.
func before1970Scenarios() []Scenario {
	l := admit.PerSecond(1)
	y1960 := time.Date(1960, 6, 1, 0, 0, 0, 0, time.UTC)
	y1969 := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	unix1 := time.Unix(1, 0)
	return []Scenario{
		{
			Name: "before_1970", Algs: bucketAlgs, Limit: l,
			Steps: []Step{
				{y1960, "a", 1, Allow(0, sec)},
				{y1969, "a", 1, Deny(0, sec, sec)},
				{unix1, "a", 1, Allow(0, sec)},
			},
		},
		{
			Name: "before_1970", Algs: fixedAlgs, Limit: l,
			Steps: []Step{
				{y1960, "a", 1, Allow(0, sec)},
				{y1969, "a", 1, Deny(0, sec, sec)},
				{unix1, "a", 1, Allow(0, sec)},
			},
		},
		{
			Name: "before_1970", Algs: slidingAlgs, Limit: l,
			Steps: []Step{
				{y1960, "a", 1, Allow(0, 2*sec)},
				{y1969, "a", 1, Deny(0, 2*sec, 2*sec)},
				{unix1, "a", 1, Deny(0, sec, sec)}, // Prev 1 at e = 0
			},
		},
		{
			Name: "before_1970", Algs: logAlgs, Limit: l,
			Steps: []Step{
				{y1960, "a", 1, Allow(0, sec)},
				{y1969, "a", 1, Deny(0, sec, sec)},
				{unix1, "a", 1, Allow(0, sec)},
			},
		},
	}
}

// backwardsAfterPeekScenarios pin what "the latest instant" and "the
// current window" mean for time going backwards after requests that do not
// admit anything. The buckets clamp to their latest admission: a denial or
// a peek at a later instant does not move it (a refusal changes no state).
// The window counters move to the window of every request they decide,
// peeks included, so an earlier instant afterwards counts in that later
// window.
func backwardsAfterPeekScenarios() []Scenario {
	return []Scenario{
		{
			// T = C = 100ms.
			Name: "backwards_after_denial_and_peek", Algs: []admit.Algorithm{admit.AlgTokenBucket, admit.AlgLeakyBucket}, Limit: admit.PerSecond(10).WithBurst(1),
			Steps: []Step{
				{At(sec), "a", 1, Allow(0, 100*ms)},            // latest admission 1s
				{At(1050 * ms), "a", 1, Deny(0, 50*ms, 50*ms)}, // D = 50ms
				{At(2 * sec), "a", 0, Allow(1, 0)},
				// Judged at 1.02s, not 2s: D = 80ms.
				{At(1020 * ms), "a", 1, Deny(0, 80*ms, 80*ms)},
				{At(1100 * ms), "a", 1, Allow(0, 100*ms)},
			},
		},
		{
			// W = 1s. The peek at 2.5s sees window [2s, 3s) but changes
			// nothing: only an admission moves the counter to a new window.
			Name: "backwards_after_peek", Algs: fixedAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t5, "a", 2, Allow(0, 500*ms)},
				{At(2500 * ms), "a", 0, Allow(2, 0)},
				{t6, "a", 1, Deny(0, 400*ms, 400*ms)}, // counts in [0, 1s)
			},
		},
		{
			// W = 1s. The peek at 2.5s changes nothing, so at 600ms the
			// estimate is 0 + 2 in window [0, 1s): denied until 1.5s, when
			// 2×(1-0.5) + 0 + 1 <= 2; full at 2s.
			Name: "backwards_after_peek", Algs: slidingAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t5, "a", 2, Allow(0, 1500*ms)},
				{At(2500 * ms), "a", 0, Allow(2, 0)},
				{t6, "a", 1, Deny(0, 900*ms, 1400*ms)},
			},
		},
	}
}
