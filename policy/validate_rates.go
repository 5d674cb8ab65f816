package policy

import (
	"fmt"
	"math/big"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/limits"
)

// rates checks the rates of limits l that has several (Limits.Rates):
// Rate given, at most maxRates, each valid and finite, no two alike, and
// none that never refuses what another admits. prefix is the tier's field
// prefix ("" for a rule); the fields are rate[0], rate[1]... in the order
// of the list.
func (v *validator) rates(l *Limits, src *source, prefix string) {
	if l.Rate == nil {
		v.at(src, prefix+"rate", "Rates without Rate: the first rate is Rate, the others Rates")
		return
	}
	all := l.allRates()
	if len(all) > maxRates {
		v.at(src, prefix+"rate", "%d rates: give 1 to %d", len(all), maxRates)
		return
	}
	field := func(i int) string { return fmt.Sprintf("%srate[%d]", prefix, i) }
	good := true
	for i, r := range all {
		switch c := limits.Compile(l.Algorithm, r); {
		case c.Err != nil:
			v.at(src, field(i), "invalid rate %v for %v: %s", r, l.Algorithm, limitReason(c.Err))
			good = false
		case r.Rate == admit.Inf:
			v.at(src, field(i), "unlimited in a list of rates limits nothing: remove it")
			good = false
		}
	}
	if !good {
		return
	}
	for i := range all {
		for j := range i {
			a, b := withBurst(all[i]), withBurst(all[j])
			switch {
			case a == b:
				v.at(src, field(i), "rate %v is given twice (rate[%d] too)", all[i], j)
			case bucketLike(l.Algorithm) && covers(a, b):
				v.at(src, field(i), "rate %v never refuses what %v admits (rate[%d]): under %v it is at least as fast with a burst at least as large; remove it, or make it slower in the long run (300/min with 10/s)", all[i], all[j], j, l.Algorithm)
			case bucketLike(l.Algorithm) && covers(b, a):
				v.at(src, field(j), "rate %v never refuses what %v admits (rate[%d]): under %v it is at least as fast with a burst at least as large; remove it, or make it slower in the long run (300/min with 10/s)", all[j], all[i], i, l.Algorithm)
			}
		}
	}
}

// allRates returns Rate (if not nil) and Rates, in order.
func (l *Limits) allRates() []admit.Limit {
	if l.Rate == nil {
		return l.Rates
	}
	return append([]admit.Limit{*l.Rate}, l.Rates...)
}

// withBurst returns l with its burst filled in (Burst 0 means Rate).
func withBurst(l admit.Limit) admit.Limit {
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	return l
}

// bucketLike reports whether alg is one of the bucket algorithms (GCRA,
// the token bucket, the leaky bucket as a meter), the same quantity seen
// from two sides: a bucket of Burst tokens refilled at Rate per Period.
func bucketLike(alg admit.Algorithm) bool {
	return alg == admit.AlgGCRA || alg == admit.AlgTokenBucket || alg == admit.AlgLeakyBucket
}

// covers reports whether bucket a admits whatever bucket b admits: a
// refills at least as fast (a.Rate/a.Period >= b.Rate/b.Period) and holds
// at least as much (a.Burst >= b.Burst). Its level then never falls below
// b's, so as a second rate it never refuses anything: it is redundant.
func covers(a, b admit.Limit) bool {
	if a.Burst < b.Burst {
		return false
	}
	// a.Rate × b.Period >= b.Rate × a.Period, exactly.
	x := new(big.Int).Mul(big.NewInt(a.Rate), big.NewInt(int64(b.Period)))
	y := new(big.Int).Mul(big.NewInt(b.Rate), big.NewInt(int64(a.Period)))
	return x.Cmp(y) >= 0
}
