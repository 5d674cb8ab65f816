package admittest

import (
	"math/big"
	"time"
)

// Epoch is the instant every timeline of this package starts from:
// 2025-01-01T00:00:00Z, a wall-clock instant without a monotonic reading.
// It is a whole number of days after the Unix epoch, so the windows of
// second, minute, hour and day limits (which are aligned on the Unix epoch)
// start at it.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// At returns the instant d after Epoch.
func At(d time.Duration) time.Time { return Epoch.Add(d) }

// Tick is the spacing of the step instants of the built-in scenarios, as
// in golang.org/x/time/rate's tests: step n is At(n * Tick).
const Tick = 100 * time.Millisecond

// The step instants of the built-in scenarios, unexported as in
// golang.org/x/time/rate's tests: tn is n ticks (n×100ms) after Epoch, so
// t0 is Epoch and t9 is 900ms after it (t7 is not used).
var (
	t0 = At(0 * Tick)
	t1 = At(1 * Tick)
	t2 = At(2 * Tick)
	t3 = At(3 * Tick)
	t4 = At(4 * Tick)
	t5 = At(5 * Tick)
	t6 = At(6 * Tick)
	t8 = At(8 * Tick)
	t9 = At(9 * Tick)
)

// offset formats t as its distance from Epoch: "+200ms", "-1ns".
func offset(t time.Time) string {
	d := t.Sub(Epoch)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// maxInstant is the latest instant, in ns since the Unix epoch, that
// package admit distinguishes (2^62 ns, in 2116); it documents that instants
// before 1970 count as 1970 and after 2116 as 2116.
const maxInstant = int64(1) << 62

// unixNanos returns t in nanoseconds since the Unix epoch, clamped to
// [0, maxInstant], computed without overflow for any t.
func unixNanos(t time.Time) int64 {
	ns := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(int64(time.Second)))
	ns.Add(ns, big.NewInt(int64(t.Nanosecond())))
	switch {
	case ns.Sign() < 0:
		return 0
	case ns.Cmp(big.NewInt(maxInstant)) > 0:
		return maxInstant
	}
	return ns.Int64()
}
