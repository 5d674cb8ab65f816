package server

import (
	"math"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/envoyunit"
)

// rlsUnit is the Envoy unit of each envoyunit.Unit (the numbers are the
// same, by construction of envoyunit.Unit).
func rlsUnit(u envoyunit.Unit) rlsv3.RateLimitResponse_RateLimit_Unit {
	return rlsv3.RateLimitResponse_RateLimit_Unit(u)
}

// fillRLSLimit fills out, a descriptor status's current_limit, with limit l
// of kind k, in the form Envoy reads: requests_per_unit per unit, times
// unit_multiplier units.
//
//   - A rate whose period is a unit (second, minute, hour, day, week,
//     30-day month, 365-day year) is requests_per_unit = Rate per that unit.
//   - A rate whose period is a whole number of a unit is Rate per
//     unit_multiplier units of the largest such unit: 100 per 5 minutes is
//     100 per MINUTE × 5.
//   - Any other rate is written exactly as r per k seconds (the fraction
//     Rate/Period in lowest terms, 3 per 1.5s being 2 per SECOND × 3) when
//     r and k fit in 32 bits, else as requests per SECOND, rounded down (a
//     client sees a limit no higher than the real one).
//   - A calendar quota is its events per calendar unit: the period's length
//     (a day of 23 to 25 hours, a month of 28 to 31 days) names the unit;
//     UNKNOWN when the period is not known (a quota not asked).
//   - A concurrency cap is its slots with unit UNKNOWN: slots have no time
//     unit.
//   - Rates beyond 2^32-1 per unit saturate at 2^32-1.
//
// The burst is not part of Envoy's limit; the RateLimit-Policy field
// carries it (q).
func fillRLSLimit(out *rlsv3.RateLimitResponse_RateLimit, k admit.Kind, l admit.Limit) {
	switch k {
	case admit.KindConcurrency:
		out.RequestsPerUnit, out.Unit = rlsSat32(l.Rate), rlsv3.RateLimitResponse_RateLimit_UNKNOWN
		return
	case admit.KindQuota:
		out.RequestsPerUnit, out.Unit = rlsSat32(l.Rate), rlsv3.RateLimitResponse_RateLimit_UNKNOWN
		if l.Period > 0 {
			out.Unit = rlsUnit(rlsCalendarUnit(l.Period))
		}
		return
	}
	if l.Period <= 0 {
		// The zero limit (refusing everything) and other limits without
		// a period.
		out.RequestsPerUnit, out.Unit = rlsSat32(l.Rate), rlsv3.RateLimitResponse_RateLimit_SECOND
		return
	}
	if u, ok := envoyunit.Of(l.Period); ok {
		out.RequestsPerUnit, out.Unit = rlsSat32(l.Rate), rlsUnit(u)
		return
	}
	rate, period := l.Rate, l.Period
	if period%time.Second != 0 {
		// Rate per Period as r per k seconds, in lowest terms:
		// Rate/Period = (Rate/g)·(1e9/h) per ((Period/g)/h) seconds with
		// g = rlsGCD(Rate, Period), h = rlsGCD(1e9, Period/g).
		g := rlsGCD(rate, int64(period))
		r, p := rate/g, int64(period)/g
		h := rlsGCD(int64(time.Second), p)
		f := int64(time.Second) / h
		if r > math.MaxUint32/f || p/h > math.MaxUint32 {
			// Not exact in 32 bits: requests per second, rounded down.
			out.RequestsPerUnit, out.Unit = rlsPerSecondFloor(rate, period), rlsv3.RateLimitResponse_RateLimit_SECOND
			return
		}
		rate, period = r*f, time.Duration(p/h)*time.Second
		if u, ok := envoyunit.Of(period); ok {
			out.RequestsPerUnit, out.Unit = uint32(rate), rlsUnit(u)
			return
		}
	}
	// A whole number of seconds: the largest unit dividing it.
	for _, u := range [...]envoyunit.Unit{envoyunit.Year, envoyunit.Month, envoyunit.Week, envoyunit.Day, envoyunit.Hour, envoyunit.Minute, envoyunit.Second} {
		d := u.Duration()
		if period%d != 0 {
			continue
		}
		m := int64(period / d)
		if m > math.MaxUint32 {
			break
		}
		out.RequestsPerUnit, out.Unit = rlsSat32(rate), rlsUnit(u)
		out.UnitMultiplier = wrapperspb.UInt32(uint32(m))
		return
	}
	out.RequestsPerUnit, out.Unit = rlsPerSecondFloor(rate, period), rlsv3.RateLimitResponse_RateLimit_SECOND
}

// rlsCalendarUnit names the calendar period of a quota from the length of
// its current period.
func rlsCalendarUnit(p time.Duration) envoyunit.Unit {
	const day = 24 * time.Hour
	switch {
	case p <= 2*time.Hour:
		return envoyunit.Hour
	case p <= 2*day:
		return envoyunit.Day
	case p <= 8*day:
		return envoyunit.Week
	case p <= 32*day:
		return envoyunit.Month
	}
	return envoyunit.Year
}

// rlsPerSecondFloor is rate per period in events per second, rounded down,
// saturated at 2^32-1.
func rlsPerSecondFloor(rate int64, period time.Duration) uint32 {
	v := float64(rate) * float64(time.Second) / float64(period)
	if v >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

func rlsSat32(v int64) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

func rlsGCD(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
