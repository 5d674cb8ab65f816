package admit

import (
	"fmt"
	"math"
	"time"
)

// Share returns the part of l that each of instances instances should
// enforce on its own, so that together they enforce about l: the rate
// divided exactly, the burst rounded up. It is the limit of the local
// limiter a fleet falls back to when its shared store is down (see
// keyed.LocalShare and keyed.LiveShare).
//
// The rate is divided without rounding by scaling the Period: Rate/instances
// per Period is written as Rate/g per Period×instances/g, where g is the
// greatest common divisor of Rate and instances. So 100/s among 4 is 25/s,
// and 10/s among 3 is 10 per 3s, an event every 300ms. The burst is
// ⌈Burst/instances⌉ (Burst 0 standing for Rate, as always), at least 1, so
// the instances together admit at most instances-1 events more at once
// than l does. The window algorithms, whose window is Burst×Period/Rate,
// keep the shared window when instances divides the burst, and a window
// longer by less than instances emission intervals of l otherwise.
//
// When Period×instances/g does not fit a time.Duration, or the share would
// be outside the domain of Limit (a capacity over 36 years), the rate is
// rounded up instead: ⌈Rate/instances⌉ per Period. Unlimited and the zero
// Limit are shared as they are. An instances below 1 is an error wrapping
// ErrInvalidConfig, an invalid l an error wrapping ErrInvalidLimit.
func (l Limit) Share(instances int) (Limit, error) {
	if instances < 1 {
		return Limit{}, fmt.Errorf("%w: Limit.Share: invalid number of instances %d (want at least 1)", ErrInvalidConfig, instances)
	}
	if err := l.Validate(); err != nil {
		return Limit{}, err
	}
	if l.Rate == Inf || l.Rate == 0 {
		return l, nil
	}
	n := int64(instances)
	burst := l.Burst
	if burst == 0 {
		burst = l.Rate
	}
	burst = ceilDiv(burst, n)
	g := gcd(l.Rate, n)
	if m := n / g; int64(l.Period) <= math.MaxInt64/m {
		exact := Limit{Rate: l.Rate / g, Period: l.Period * time.Duration(m), Burst: burst}
		if exact.Validate() == nil {
			return exact, nil
		}
	}
	rounded := Limit{Rate: ceilDiv(l.Rate, n), Period: l.Period, Burst: burst}
	if err := rounded.Validate(); err != nil {
		return Limit{}, fmt.Errorf("the share of %v among %d instances: %w", l, instances, err)
	}
	return rounded, nil
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 {
	if a == 0 {
		return 0
	}
	return (a-1)/b + 1
}

// gcd returns the greatest common divisor of a and b (both > 0).
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
