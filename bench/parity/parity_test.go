package parity

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// shapes are the limits the sequences run under. The exact ones (rates of
// 2^k per second, instants on a 1/512 s grid) leave x/time/rate's float64
// nothing to round, so every answer must be equal; the others are everyday
// limits, where x/time/rate's rounding is allowed for (see tolerance,
// sameDelay and the resyncs).
func shapes() []shape {
	sec, min := time.Second, time.Minute
	return []shape{
		{name: "exact 1/s burst 3", exact: true, start: pow2(0, 3), others: []limit{pow2(0, 0), pow2(-1, 0), pow2(-2, 0)}, bursts: []int{3, 1, 5, 2}},
		{name: "exact 64/s burst 10", exact: true, start: pow2(6, 10), others: []limit{pow2(6, 0), pow2(4, 0), pow2(1, 0)}, bursts: []int{10, 1, 4, 30}},
		{name: "exact 512/s burst 64", exact: true, start: pow2(9, 64), others: []limit{pow2(9, 0), pow2(7, 0)}, bursts: []int{64, 8, 100}},
		{name: "exact 1/4s burst 2", exact: true, start: pow2(-2, 2), others: []limit{pow2(-2, 0), pow2(-3, 0)}, bursts: []int{2, 1, 3}},
		{name: "exact inf burst 5", exact: true, start: limit{mode: unlimited, burst: 5}, others: []limit{pow2(3, 0), pow2(1, 0)}, bursts: []int{5, 2, 9}},
		{name: "exact zero", exact: true, start: limit{mode: zero}, others: []limit{pow2(2, 0), pow2(0, 0)}, bursts: []int{3, 1}},
		{name: "3/s burst 5", start: per(3, sec, 5), others: []limit{per(3, sec, 0), per(7, sec, 0), per(100, sec, 0)}, bursts: []int{5, 1, 3, 8}},
		{name: "100/s burst 20", start: per(100, sec, 20), others: []limit{per(100, sec, 0), per(30, sec, 0), per(1000, sec, 0)}, bursts: []int{20, 5, 50}},
		{name: "7/min burst 2", start: per(7, min, 2), others: []limit{per(7, min, 0), per(1, min, 0), per(60, min, 0)}, bursts: []int{2, 1, 7}},
		{name: "1e6/s burst 1000", start: per(1_000_000, sec, 1000), others: []limit{per(1_000_000, sec, 0), per(999_983, sec, 0)}, bursts: []int{1000, 10, 5000}},
		{name: "1000/s burst 1", start: per(1000, sec, 1), others: []limit{per(1000, sec, 0), per(10, sec, 0)}, bursts: []int{1, 2}},
		{name: "inf burst 3", start: limit{mode: unlimited, burst: 3}, others: []limit{per(3, sec, 0), per(250, sec, 0)}, bursts: []int{3, 1, 10}},
	}
}

// TestDifferential runs seeded random sequences of calls on a
// *rate.Limiter and an *admit.TokenBucket with the same limits and
// compares every answer: AllowN (n from 0 to burst+2), ReserveN's OK and
// delay, the delay and OK of the reservations held at later instants,
// TokensAt after every call, CancelAt of the latest reservation or of any,
// at any instant (their times to act included), SetBurstAt and SetLimitAt
// (to unlimited and zero limits and back). Instants move forward by steps
// around the emission interval or onto a reservation's time to act, and
// sometimes backward.
//
// A difference fails the test unless it is one of those TokenBucket's
// documentation lists, each of which is allowed here exactly where it
// arises, the sequence then going on from two fresh limiters (a resync):
//
//   - time going backwards: x/time/rate is given the instant admit judges
//     the call at (admit's latest instant), so that it does not move its
//     clock back (see TestBackwards);
//   - a second CancelAt is made on admit only, and changes nothing (see
//     TestDoubleCancel);
//   - a cancel that x/time/rate gives back more than n for, where admit
//     gives back n (see TestCancelGivesBackAtMostN);
//   - the cancel of a reservation made under an unlimited limit, which
//     took nothing (see TestCancelUnderInf);
//   - ReserveN(now, 0) under a zero limit while the tokens are below zero;
//   - on the inexact shapes, x/time/rate's float64 and its durations
//     rounded down: tokens within a tolerance, delays within 1ns, an AllowN
//     decided the other way less than 1ns of refill from the boundary, a
//     cancel between the two rounded times to act.
//
// Negative n and bursts or limits a Limit does not state are not generated
// (see TestNegativeN and the TokenBucket documentation).
func TestDifferential(t *testing.T) {
	runs, ops := 60, 1000
	if testing.Short() {
		runs, ops = 6, 1000
	}
	total := 0
	for i, sh := range shapes() {
		t.Run(sh.name, func(t *testing.T) {
			st := &stats{resyncs: map[string]int{}, bools: map[string][2]int{}}
			for run := range runs {
				h := &harness{t: t, sh: sh, st: st, cur: sh.start, rng: rand.New(rand.NewPCG(uint64(i), uint64(run)))}
				h.fresh()
				h.run(ops)
			}
			total += st.ops
			resynced := 0
			for _, n := range st.resyncs {
				resynced += n
			}
			// The allowed differences must stay rare, or the comparison
			// would mostly be between fresh limiters.
			if resynced*100 > st.ops {
				t.Errorf("%d resyncs in %d calls: %v", resynced, st.ops, st.resyncs)
			}
			t.Logf("%d calls, %d token comparisons; answers (true, false) %v; resyncs %s", st.ops, st.compared, st.bools, fmtCounts(st.resyncs))
		})
	}
	t.Logf("%d calls in all", total)
}

func fmtCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var ks []string
	for k, v := range m {
		ks = append(ks, fmt.Sprintf("%q: %d", k, v))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
