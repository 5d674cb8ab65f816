package admittest

import (
	"time"

	"github.com/admit-go/admit"
)

var logAlgs = []admit.Algorithm{admit.AlgSlidingLog}

// slidingLogScenarios are the timelines of SlidingLog. The window is
// W = ⌈B×T⌉ ns; n is admitted at now iff the events logged in (now-W, now]
// plus n are at most B. A denial's RetryAfter runs to the instant the
// oldest events making room for n leave the window (their instant + W);
// ResetAfter to the newest logged instant + W.
func slidingLogScenarios() []Scenario {
	return []Scenario{
		{
			// B = 3, W = 1s.
			Name: "burst_then_slide", Algs: logAlgs, Limit: admit.PerSecond(3),
			Steps: []Step{
				{t0, "a", 1, Allow(2, sec)},
				{t1, "a", 2, Allow(0, sec)},
				{t5, "a", 1, Deny(0, 500*ms, 600*ms)}, // +0 leaves at 1s
				{At(sec - ns), "a", 1, Deny(0, ns, 100*ms+ns)},
				{At(sec), "a", 1, Allow(0, sec)},        // +0 left
				{At(sec), "a", 2, Deny(0, 100*ms, sec)}, // the two at +100ms
				{At(1100 * ms), "a", 0, Allow(2, 900*ms)},
				{At(5 * sec), "a", 3, Allow(0, sec)},
				{At(5 * sec), "a", 4, Never(0, sec)},
			},
		},
		{
			// 3/s burst 2: W = ⌈666666666⅔⌉ = 666666667ns.
			Name: "non_integer_window", Algs: logAlgs, Limit: admit.PerSecond(3).WithBurst(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, 666666667*ns)},
				{At(666666666 * ns), "a", 1, Deny(0, ns, ns)},
				{At(666666667 * ns), "a", 1, Allow(1, 666666667*ns)},
				{At(666666667 * ns), "a", 2, Deny(1, 666666667*ns, 666666667*ns)},
			},
		},
		{
			// 7 per 3s burst 2: W = ⌈857142857 1/7⌉ = 857142858ns.
			Name: "awkward_7_per_3s", Algs: logAlgs, Limit: admit.Limit{Rate: 7, Period: 3 * sec, Burst: 2},
			Steps: []Step{
				{t0, "a", 1, Allow(1, 857142858*ns)},
				{At(ms), "a", 1, Allow(0, 857142858*ns)},
				{At(ms), "a", 1, Deny(0, 856142858*ns, 857142858*ns)},
				{At(857142857 * ns), "a", 1, Deny(0, ns, 1000001*ns)},
				{At(857142858 * ns), "a", 1, Allow(0, 857142858*ns)},
			},
		},
		{
			Name: "long_idle_gap", Algs: logAlgs, Limit: admit.PerMinute(100),
			Steps: []Step{
				{t0, "a", 100, Allow(0, time.Minute)},
				{t0, "a", 1, Deny(0, time.Minute, time.Minute)},
				{At(longIdle), "a", 0, Allow(100, 0)},
				{At(longIdle), "a", 100, Allow(0, time.Minute)},
			},
		},
		{
			// W = 1ms.
			Name: "huge_rate_and_burst", Algs: logAlgs, Limit: admit.Limit{Rate: 1e9, Period: sec, Burst: 1e6},
			Steps: []Step{
				{t0, "a", 1e6, Allow(0, ms)},
				{At(ms - ns), "a", 1, Deny(0, ns, ns)},
				{At(ms), "a", 1, Allow(999999, ms)},
				{At(ms), "a", 1e6, Deny(999999, ms, ms)},
				{At(ms), "a", 1e6 + 1, Never(999999, ms)},
			},
		},
		{
			Name: "tiny_rate", Algs: logAlgs, Limit: admit.PerDay(1),
			Steps: []Step{
				{t0, "a", 1, Allow(0, day)},
				{At(12 * time.Hour), "a", 1, Deny(0, 12*time.Hour, 12*time.Hour)},
				{At(day - ns), "a", 1, Deny(0, ns, ns)},
				{At(day), "a", 1, Allow(0, day)},
			},
		},
		{
			Name: "independent_keys", Algs: logAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t0, "a", 2, Allow(0, sec)},
				{t0, "b", 1, Allow(1, sec)},
				{t0, "a", 1, Deny(0, sec, sec)},
				{t0, "c", 0, Allow(2, 0)},
				{t0, "{a}", 1, Allow(1, sec)},
				{t0, "a\x00b", 2, Allow(0, sec)},
				{t5, "b", 1, Allow(0, sec)},
				{At(sec), "a", 1, Allow(1, sec)},
				{At(sec), "b", 2, Deny(1, 500*ms, 500*ms)},
				{At(sec), "{a}", 0, Allow(2, 0)},
				{At(sec), "a\x00b", 2, Allow(0, sec)},
			},
		},
		{
			// An instant earlier than the newest logged event counts as
			// that event's instant; durations run from the caller's. W = 1s.
			Name: "backwards", Algs: logAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{At(sec), "a", 1, Allow(1, sec)},
				{t5, "a", 1, Allow(0, 1500*ms)}, // logged at 1s
				{At(1500 * ms), "a", 1, Deny(0, 500*ms, 500*ms)},
				{At(1900 * ms), "a", 0, Allow(0, 100*ms)},
				{At(2 * sec), "a", 2, Allow(0, sec)},
				{At(1200 * ms), "a", 1, Deny(0, 1800*ms, 1800*ms)}, // judged at 2s
				{At(1200 * ms), "a", 0, Allow(0, 1800*ms)},
			},
		},
	}
}
