package admittest

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

func TestCheckBucketBound(t *testing.T) {
	l := admit.PerSecond(10).WithBurst(3) // T = 100ms
	ok := []Event{{At(200 * ms), 1}, {t0, 3}, {t1, 1}, {t1, 0}, {t1, -5}}
	if err := checkBucketBound(ok, l); err != nil {
		t.Errorf("within the bound: %v", err)
	}
	// [0, 250ms] holds 6 > 3 + ⌊250/100⌋ = 5.
	bad := append(ok, Event{At(250 * ms), 1})
	err := checkBucketBound(bad, l)
	if err == nil || !strings.Contains(err.Error(), "6 events admitted in [+0s, +250ms] (t = 250ms), over the bound B + ⌊t/T⌋ = 5 by 1") {
		t.Errorf("over the bound: %v", err)
	}
	// Events at one instant count together.
	if err := checkBucketBound([]Event{{t0, 2}, {t0, 2}}, l); err == nil {
		t.Error("4 at one instant passed a burst of 3")
	}
	// The worst interval is reported, not the first.
	worst := []Event{{t0, 4}, {At(10 * sec), 3}, {At(10 * sec), 3}}
	if err := checkBucketBound(worst, l); err == nil || !strings.Contains(err.Error(), "[+10s, +10s]") {
		t.Errorf("worst interval: %v", err)
	}
	if err := checkBucketBound(bad, admit.Unlimited); err != nil {
		t.Errorf("unlimited: %v", err)
	}
	if err := checkBucketBound([]Event{{t0, 0}}, admit.Limit{}); err != nil {
		t.Errorf("zero limit, nothing admitted: %v", err)
	}
	if err := checkBucketBound([]Event{{t0, 1}}, admit.Limit{}); err == nil {
		t.Error("zero limit admitted an event unnoticed")
	}
}

func TestCheckFixedWindowBound(t *testing.T) {
	l := admit.PerSecond(3)
	edge := []Event{{At(999 * ms), 3}, {At(sec), 3}}
	if err := checkFixedWindowBound(edge, l); err != nil {
		t.Errorf("two full windows at an edge: %v", err)
	}
	if err := checkBucketBound(edge, l); err == nil {
		t.Error("two full windows at an edge passed the bucket bound")
	}
	// [999ms, 1.5s] meets two windows: at most 6.
	if err := checkFixedWindowBound(append(edge, Event{At(1500 * ms), 1}), l); err == nil || !strings.Contains(err.Error(), "B×(⌈t/W⌉+1) = 6") {
		t.Errorf("7 across two windows: %v", err)
	}
	if err := CheckBound(admit.AlgFixedWindow, edge, l); err != nil {
		t.Errorf("CheckBound(fixed window): %v", err)
	}
}

func TestCheckLogBound(t *testing.T) {
	l := admit.PerSecond(2) // W = 1s
	if err := checkLogBound([]Event{{t0, 2}, {At(sec), 2}}, l); err != nil {
		t.Errorf("a window apart: %v", err)
	}
	if err := checkLogBound([]Event{{t0, 2}, {At(sec - ns), 1}}, l); err == nil {
		t.Error("3 within 1s-1ns passed a burst of 2")
	}
	// 3/s burst 2: W = ⌈666666666⅔⌉ = 666666667.
	l = admit.PerSecond(3).WithBurst(2)
	if err := checkLogBound([]Event{{t0, 2}, {At(666666666 * ns), 1}}, l); err == nil {
		t.Error("3 within W-1ns passed")
	}
	if err := checkLogBound([]Event{{t0, 2}, {At(666666667 * ns), 2}}, l); err != nil {
		t.Errorf("a window apart: %v", err)
	}
}

// TestCheckBoundsAgainstBruteForce: the pruned search finds a violation iff
// checking every pair of instants in exact rationals does.
func TestCheckBoundsAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	found := 0
	for range 700 {
		l := admit.Limit{Rate: 1 + r.Int64N(7), Period: time.Duration(1 + r.Int64N(3000)), Burst: 1 + r.Int64N(4)}
		var evs []Event
		for range r.IntN(18) {
			evs = append(evs, Event{At(time.Duration(r.Int64N(4000))), r.Int64N(3)})
		}
		tr := big.NewRat(int64(l.Period), l.Rate)
		w := new(big.Rat).Mul(tr, big.NewRat(l.Burst, 1))
		bucket := func(dt *big.Rat, sum int64) bool { // sum <= B + ⌊dt/T⌋
			return big.NewRat(sum-l.Burst, 1).Cmp(new(big.Rat).SetInt64(floorRat(new(big.Rat).Quo(dt, tr)))) <= 0
		}
		fixed := func(dt *big.Rat, sum int64) bool { // sum <= B×(⌈dt/W⌉+1)
			return sum <= l.Burst*(ceilRat(new(big.Rat).Quo(dt, w))+1)
		}
		logb := func(dt *big.Rat, sum int64) bool { // sum <= B if dt < ⌈W⌉
			return dt.Cmp(ratInt(ceilRat(w))) >= 0 || sum <= l.Burst
		}
		for _, c := range []struct {
			check func([]Event, admit.Limit) error
			ok    func(*big.Rat, int64) bool
		}{{checkBucketBound, bucket}, {checkFixedWindowBound, fixed}, {checkLogBound, logb}} {
			want := true
			for _, a := range evs {
				for _, b := range evs {
					var sum int64
					for _, e := range evs {
						if !e.At.Before(a.At) && !e.At.After(b.At) && e.N > 0 {
							sum += e.N
						}
					}
					if !b.At.Before(a.At) && !c.ok(ratInt(int64(b.At.Sub(a.At))), sum) {
						want = false
					}
				}
			}
			if got := c.check(evs, l) == nil; got != want {
				t.Fatalf("%v %v: check passed=%v, brute force %v", l, evs, got, want)
			}
			if !want {
				found++
			}
		}
	}
	if found < 100 {
		t.Errorf("only %d violations among the random cases", found)
	}
}
