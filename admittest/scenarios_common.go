package admittest

import (
	"time"

	"github.com/admit-go/admit"
)

const (
	ns  = time.Nanosecond
	ms  = time.Millisecond
	sec = time.Second
	day = 24 * time.Hour
	// longIdle is a gap of 90×365 days: from 2025 to 2114, inside the
	// range of instants the limiters distinguish (up to 2116).
	longIdle = 90 * 365 * day
)

// commonScenarios apply to every algorithm: the special cases that
// package admit documents as "the same for every algorithm".
func commonScenarios() []Scenario {
	return []Scenario{
		{
			// A fresh limit is full: a peek reports B and no reset; n > B
			// is refused for good and consumes nothing; so is n < 0.
			Name: "fresh_peek_and_above_burst", Algs: allAlgs, Limit: admit.PerSecond(5),
			Steps: []Step{
				{t0, "a", 0, Allow(5, 0)},
				{t0, "a", 6, Never(5, 0)},
				{t0, "a", -1, Refused()},
				{t0, "a", -1 << 62, Refused()},
				{t0, "a", 0, Allow(5, 0)},
				{t1, "a", 1 << 40, Never(5, 0)},
				{t1, "a", 0, Allow(5, 0)},
			},
		},
		{
			// The zero Limit denies every n > 0 for good; a peek is allowed
			// and reports nothing remaining; no instant changes that.
			Name: "zero_limit", Algs: allAlgs, Limit: admit.Limit{},
			Steps: []Step{
				{t0, "a", 1, Never(0, 0)},
				{t0, "a", 0, Allow(0, 0)},
				{t0, "a", -1, Refused()},
				{At(time.Hour), "a", 1, Never(0, 0)},
				{At(longIdle), "a", 5, Never(0, 0)},
				{At(longIdle), "b", 1, Never(0, 0)},
			},
		},
		{
			// A zero Rate with a Period is the zero limit too; the Limit
			// reported keeps its Period.
			Name: "zero_rate_with_period", Algs: allAlgs, Limit: admit.Limit{Period: time.Second},
			Steps: []Step{
				{t0, "a", 1, Never(0, 0)},
				{t0, "a", 0, Allow(0, 0)},
			},
		},
		{
			// Unlimited admits every n >= 0, whatever its size, and reports
			// math.MaxInt64 remaining; n < 0 is still refused.
			Name: "unlimited", Algs: allAlgs, Limit: admit.Unlimited,
			Steps: []Step{
				{t0, "a", 1, Allow(maxInt64, 0)},
				{t0, "a", 1 << 40, Allow(maxInt64, 0)},
				{t0, "a", 1 << 40, Allow(maxInt64, 0)},
				{t0, "a", 0, Allow(maxInt64, 0)},
				{t0, "a", -1, Refused()},
				{t0, "b", 1 << 62, Allow(maxInt64, 0)},
				{At(-time.Hour), "a", 1, Allow(maxInt64, 0)},
				{At(longIdle), "a", 1, Allow(maxInt64, 0)},
			},
		},
		{
			// Refused requests consume nothing: after them the limit is
			// still full, and then n = B fits.
			Name: "refusals_consume_nothing", Algs: allAlgs, Limit: admit.PerSecond(2),
			Steps: []Step{
				{t0, "a", -1, Refused()},
				{t0, "a", 3, Never(2, 0)},
				{t0, "a", -(1 << 62), Refused()},
				{t0, "a", 0, Allow(2, 0)},
			},
		},
	}
}
