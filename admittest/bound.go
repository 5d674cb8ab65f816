package admittest

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/admit-go/admit"
)

// Event is N events admitted at instant At: one entry of the log of what a
// limiter admitted, as the Check functions read it.
type Event struct {
	At time.Time
	N  int64
}

// CheckBound checks events, admitted by algorithm alg under limit l for one
// key, against the bound alg documents, and reports an error naming the
// interval that exceeds it by the most events. The bounds, with T =
// Period/Rate and B the burst, over every closed interval [a, a+t]:
//
//   - GCRA, TokenBucket, LeakyBucket and SlidingWindow: at most B + ⌊t/T⌋
//     events (the bucket bound);
//   - SlidingWindowApprox: at most B + ⌈t/T⌉ (one more than the bucket
//     bound when t/T is not whole);
//   - FixedWindow: at most B×(⌈t/W⌉+1), W = B×T (such an interval meets
//     at most ⌈t/W⌉+1 windows);
//   - SlidingLog: the bucket bound, and at most B in an interval shorter
//     than the log's window ⌈B×T⌉ ns.
//
// Events need not be sorted; events with N <= 0 are ignored. The
// arithmetic is exact. An unlimited l admits anything; the zero limit
// nothing.
func CheckBound(alg admit.Algorithm, events []Event, l admit.Limit) error {
	switch alg {
	case admit.AlgFixedWindow:
		return checkFixedWindowBound(events, l)
	case admit.AlgSlidingLog:
		return errors.Join(checkLogBound(events, l), checkBucketBound(events, l))
	case admit.AlgSlidingWindowApprox:
		return checkPairs(events, l, "B + ⌈t/T⌉", func(b, dt *big.Int, rate, period int64) *big.Int {
			// B + ⌈dt×Rate/Period⌉
			q := new(big.Int).Mul(dt, big.NewInt(rate))
			q.Add(q, big.NewInt(period-1))
			q.Quo(q, big.NewInt(period))
			return q.Add(q, b)
		})
	}
	return checkBucketBound(events, l)
}

// checkBucketBound checks the bucket bound, B + ⌊t/T⌋ (see CheckBound).
func checkBucketBound(events []Event, l admit.Limit) error {
	return checkPairs(events, l, "B + ⌊t/T⌋", func(b, dt *big.Int, rate, period int64) *big.Int {
		// B + ⌊dt×Rate/Period⌋
		q := new(big.Int).Mul(dt, big.NewInt(rate))
		q.Quo(q, big.NewInt(period))
		return q.Add(q, b)
	})
}

// checkFixedWindowBound checks the bound of FixedWindow, B×(⌈t/W⌉+1).
func checkFixedWindowBound(events []Event, l admit.Limit) error {
	return checkPairs(events, l, "B×(⌈t/W⌉+1)", func(b, dt *big.Int, rate, period int64) *big.Int {
		// ⌈t/W⌉ = ⌈dt×Rate/(B×Period)⌉
		num := new(big.Int).Mul(dt, big.NewInt(rate))
		den := new(big.Int).Mul(b, big.NewInt(period))
		q, r := num.QuoRem(num, den, new(big.Int))
		if r.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		q.Add(q, big.NewInt(1))
		return q.Mul(q, b)
	})
}

// checkLogBound checks the bound of SlidingLog's window: B events in an
// interval shorter than ⌈B×T⌉ ns.
func checkLogBound(events []Event, l admit.Limit) error {
	var w *big.Int
	return checkPairs(events, l, "B within ⌈B×T⌉", func(b, dt *big.Int, rate, period int64) *big.Int {
		if w == nil {
			// ⌈B×Period/Rate⌉
			w = new(big.Int).Mul(b, big.NewInt(period))
			w.Add(w, big.NewInt(rate-1))
			w.Quo(w, big.NewInt(rate))
		}
		if dt.Cmp(w) >= 0 {
			return nil // no bound: the interval is a window long
		}
		return b
	})
}

// checkPairs checks every interval from one event's instant to another's
// against bound(B, t, Rate, Period) (nil: unbounded, and so are all longer
// intervals) and reports the worst excess.
func checkPairs(events []Event, l admit.Limit, what string, bound func(b, dt *big.Int, rate, period int64) *big.Int) error {
	l = normalLimit(l)
	var evs []Event
	for _, e := range events {
		if e.N > 0 {
			evs = append(evs, e)
		}
	}
	if l.Rate == admit.Inf || len(evs) == 0 {
		return nil
	}
	if l.Rate <= 0 || l.Period <= 0 {
		return fmt.Errorf("limit %v admits nothing, yet %d events at %s were admitted", l, evs[0].N, offset(evs[0].At))
	}
	slices.SortStableFunc(evs, func(a, b Event) int { return a.At.Compare(b.At) })
	// suffix[i] = events from i on: once an interval's bound reaches it,
	// no longer interval from the same start can exceed its bound.
	suffix := make([]*big.Int, len(evs)+1)
	suffix[len(evs)] = new(big.Int)
	for i := len(evs) - 1; i >= 0; i-- {
		suffix[i] = new(big.Int).Add(suffix[i+1], big.NewInt(evs[i].N))
	}
	b := big.NewInt(l.Burst)
	var worst, worstSum, worstBound *big.Int
	var from, to int
	for i := range evs {
		sum := new(big.Int)
		for j := i; j < len(evs); j++ {
			sum.Add(sum, big.NewInt(evs[j].N))
			// Events at the same instant as j belong to every interval
			// ending there: count them all before comparing.
			if j+1 < len(evs) && evs[j+1].At.Equal(evs[j].At) {
				continue
			}
			dt := big.NewInt(int64(evs[j].At.Sub(evs[i].At)))
			bd := bound(b, dt, l.Rate, int64(l.Period))
			if bd == nil || bd.Cmp(suffix[i]) >= 0 {
				break
			}
			if ex := new(big.Int).Sub(sum, bd); ex.Sign() > 0 && (worst == nil || ex.Cmp(worst) > 0) {
				worst, worstSum, worstBound, from, to = ex, new(big.Int).Set(sum), bd, i, j
			}
		}
	}
	if worst == nil {
		return nil
	}
	return fmt.Errorf("limit %v: %v events admitted in [%s, %s] (t = %v), over the bound %s = %v by %v",
		l, worstSum, offset(evs[from].At), offset(evs[to].At), evs[to].At.Sub(evs[from].At), what, worstBound, worst)
}
