package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// arrivals is a client's arrival process, in nanoseconds from the run's
// start: next returns the instant of the request after the one at t
// (-1: none before the client stops).
type arrivals struct {
	process     string
	start, stop int64   // [start, stop)
	gap         float64 // mean gap at Rate, in ns
	peakGap     float64 // diurnal: the mean gap at Peak
	trough      float64 // diurnal: Rate/Peak
	on, cycle   int64   // on_off: the on phase, and on+off
	period      float64 // diurnal's period, in ns
	lines       []replayLine
}

func newArrivals(c *Client, runEnd int64) arrivals {
	a := arrivals{process: c.Arrival.Process, start: int64(c.Start), stop: runEnd}
	if c.Stop > 0 && int64(c.Stop) < runEnd {
		a.stop = int64(c.Stop)
	}
	if a.process == "" {
		a.process = "poisson"
	}
	if c.Arrival.Rate > 0 {
		a.gap = float64(time.Second) / c.Arrival.Rate
	}
	switch a.process {
	case "on_off":
		a.on, a.cycle = int64(c.Arrival.On), int64(c.Arrival.On+c.Arrival.Off)
	case "diurnal":
		a.peakGap = float64(time.Second) / c.Arrival.Peak
		a.trough = c.Arrival.Rate / c.Arrival.Peak
		a.period = float64(c.Arrival.Period)
		if a.period == 0 {
			a.period = float64(24 * time.Hour)
		}
	}
	return a
}

// first returns the instant of the first request of the i-th of n clients
// alike (-1: none), and the state next continues from.
func (a *arrivals) first(rng *rand.Rand, i, n int) int64 {
	switch a.process {
	case "constant":
		// The clients of a Count are spread evenly over one gap.
		return a.within(a.start + int64(a.gap*float64(i)/float64(n)))
	case "replay":
		if len(a.lines) == 0 {
			return -1
		}
		return a.within(a.start + int64(a.lines[0].at))
	}
	return a.next(rng, a.start, 0)
}

// next returns the instant after t, k being the number of requests so far
// (constant and replay count them).
func (a *arrivals) next(rng *rand.Rand, t int64, k int) int64 {
	switch a.process {
	case "constant":
		return a.within(t + int64(math.Round(a.gap)))
	case "replay":
		if k >= len(a.lines) {
			return -1
		}
		return a.within(a.start + int64(a.lines[k].at))
	case "on_off":
		return a.within(a.onOff(rng, t))
	case "diurnal":
		return a.within(a.diurnal(rng, t))
	}
	return a.within(t + a.exp(rng, a.gap))
}

func (a *arrivals) within(t int64) int64 {
	if t < a.start || t >= a.stop {
		return -1
	}
	return t
}

// exp draws an exponential gap of mean m nanoseconds, at least 1ns (so
// that time moves).
func (a *arrivals) exp(rng *rand.Rand, m float64) int64 {
	g := rng.ExpFloat64() * m
	if g > float64(math.MaxInt64/4) {
		return math.MaxInt64 / 4
	}
	return max(int64(g), 1)
}

// onOff: Poisson at Rate while on; an arrival drawn in an off phase moves
// to the next on phase, where the (memoryless) process starts again.
func (a *arrivals) onOff(rng *rand.Rand, t int64) int64 {
	for {
		t += a.exp(rng, a.gap)
		if t >= a.stop {
			return t
		}
		phase := (t - a.start) % a.cycle
		if phase < a.on {
			return t
		}
		t += a.cycle - phase // the next on phase's start
		if t >= a.stop {
			return t
		}
		t-- // the next draw starts the phase afresh
	}
}

// diurnal: a Poisson process of rate Rate + (Peak-Rate)(1-cos(2πt/P))/2,
// by thinning one at Peak.
func (a *arrivals) diurnal(rng *rand.Rand, t int64) int64 {
	for {
		t += a.exp(rng, a.peakGap)
		if t >= a.stop {
			return t
		}
		x := float64(t-a.start) / a.period
		frac := a.trough + (1-a.trough)*(1-math.Cos(2*math.Pi*x))/2
		if rng.Float64() < frac {
			return t
		}
	}
}
