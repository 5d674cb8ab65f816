package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// AIMDConfig configures an AIMD (NewAIMD). Set Min and Max; every other
// field's zero value is its default. A field outside its domain is an
// error wrapping admit.ErrInvalidConfig that names it.
type AIMDConfig struct {
	// Options are the clock and name (see admit.Options). The clock is
	// read by the shorthands that take no instant (Allow, Feedback,
	// Layer's calls for a Request whose At is zero) and its timers bound
	// waits; admittest.ManualClock drives an AIMD in tests without
	// sleeping. The name is the Rule of the AIMD's decisions. The Observer
	// is not called: an AIMD reports nothing.
	admit.Options

	// Min and Max bound the rate, in events per Period: 1 <= Min <= Max
	// < admit.Inf, or NewAIMD fails with an error wrapping
	// admit.ErrInvalidConfig ("adaptive: invalid bounds"). Required.
	Min, Max int64

	// Initial is the rate the AIMD starts at, in [Min, Max] (outside, an
	// error wrapping admit.ErrInvalidConfig). 0 means Min: an adaptive limiter
	// starts cautious and grows as the feedback allows. A negative value
	// is an error.
	Initial int64

	// Period is the period the rates (Min, Max, Initial, Step) are
	// counted over: a rate r is r events per Period. 0 means one second;
	// a negative value is an error. A longer period gives a finer rate:
	// bounds of 30 and 600 per minute are half an event to ten events per
	// second, in steps of one per minute.
	Period time.Duration

	// Burst fixes the burst at Burst events, whatever the rate. 0 means a
	// burst equal to the current rate (as for admit.Limit, whose Burst 0
	// means Burst = Rate), so that the burst moves with the rate; a
	// negative value is an error.
	Burst int64

	// Step is how much the rate grows on a success, in events per Period
	// (see IncreaseInterval for how often). 0 means 1; a negative value is
	// an error.
	Step int64

	// Factor is what the rate is multiplied by on a failure (the result
	// rounded down, and never below Min). 0 means 0.5; any other value
	// must lie strictly between 0 and 1.
	Factor float64

	// LatencyThreshold, if positive, makes a success reported with a
	// latency above it count as a failure: the backend answered, but too
	// slowly. Latencies are those given to FeedbackAt; Feedback gives
	// none. 0 means no threshold; a negative value is an error.
	LatencyThreshold time.Duration

	// IncreaseInterval, if positive, makes the AIMD grow at most once per
	// interval: a success grows the rate by Step only if the interval has
	// passed since the last change of the rate (up or down). 0 grows it on
	// every success, as the classic AIMD does: the rate then grows with
	// the traffic it admits (a limiter admitting r events per second grows
	// by about r×Step per second while they all succeed), which finds
	// capacity fast but overshoots it by more. With an interval the growth
	// is linear in time, Step per interval, as TCP grows by one segment
	// per round trip. A negative value is an error.
	IncreaseInterval time.Duration

	// DecreaseInterval, if positive, makes the AIMD cut its rate at most
	// once per interval: a failure within it of the last cut changes
	// nothing (increases in between do not matter). Requests already in
	// flight when a backend starts failing fail together; without an
	// interval each of them cuts the rate again, so a burst of k failures
	// multiplies it by Factor^k. Set it to about the backend's timeout to
	// cut once per episode. 0 cuts on every failure; a negative value is
	// an error.
	DecreaseInterval time.Duration

	// IncreaseOnlyWhenLimited makes the AIMD grow only when its rate is
	// what holds the traffic back: a success grows the rate only if,
	// since the last change of the rate, the limiter refused a request or
	// made one wait. Without it a limiter whose traffic stays well below
	// its rate keeps growing on every success, up to Max, and the first
	// burst of traffic then meets a rate that was never tried. False (the
	// default) grows on every success.
	IncreaseOnlyWhenLimited bool
}

// aimdConfig is an AIMDConfig checked, with its defaults filled in.
type aimdConfig struct {
	clock     admit.Clock
	name      string
	initial   int64
	period    time.Duration
	burst     int64 // 0: the rate
	step      int64
	factor    float64
	threshold time.Duration // 0: none
	incEvery  time.Duration
	decEvery  time.Duration
	gated     bool
}

// orDefault returns v, or def if v is 0, or neg if v is negative (the
// fields whose negative values check refuses pass def again).
func orDefault[T int | int64 | float64 | time.Duration](v, def, neg T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return neg
	}
	return v
}

// invalid returns an error wrapping admit.ErrInvalidConfig for field.
func invalid(field string, v any, want string) error {
	return fmt.Errorf("%w: adaptive: %s %v: want %s", admit.ErrInvalidConfig, field, v, want)
}

// check checks cfg's fields but the bounds and fills in their defaults.
func (cfg *AIMDConfig) check() (aimdConfig, error) {
	c := aimdConfig{
		clock: defaults.Clock(cfg.Options), name: cfg.Name, initial: cfg.Initial,
		period: cfg.Period, burst: cfg.Burst, step: cfg.Step, factor: cfg.Factor,
		threshold: cfg.LatencyThreshold, incEvery: cfg.IncreaseInterval, decEvery: cfg.DecreaseInterval,
		gated: cfg.IncreaseOnlyWhenLimited,
	}
	for _, f := range []struct {
		name string
		v    any
		neg  bool
	}{
		{"Initial", cfg.Initial, cfg.Initial < 0},
		{"Period", cfg.Period, cfg.Period < 0},
		{"Burst", cfg.Burst, cfg.Burst < 0},
		{"Step", cfg.Step, cfg.Step < 0},
		{"LatencyThreshold", cfg.LatencyThreshold, cfg.LatencyThreshold < 0},
		{"IncreaseInterval", cfg.IncreaseInterval, cfg.IncreaseInterval < 0},
		{"DecreaseInterval", cfg.DecreaseInterval, cfg.DecreaseInterval < 0},
	} {
		if f.neg {
			return c, invalid(f.name, f.v, ">= 0")
		}
	}
	if f := cfg.Factor; f != 0 && !(f > 0 && f < 1) { // also refuses NaN
		return c, invalid("Factor", f, "0 < Factor < 1 (or 0 for 0.5)")
	}
	c.period = orDefault(c.period, time.Second, time.Second)
	c.step = orDefault(c.step, 1, 1)
	c.factor = orDefault(c.factor, 0.5, 0.5)
	return c, nil
}

// GradientConfig configures a Gradient (NewGradient). Set Min and Max;
// every other field's zero value is its default. A field outside its
// domain is an error wrapping admit.ErrInvalidConfig that names it.
type GradientConfig struct {
	// Options are the clock and name (see admit.Options). The clock is
	// read by the shorthands that take no instant (TryAcquire,
	// Token.Release, Layer's calls for a Request whose At is zero...), its
	// timers bound waits, and it times the waits GradientStats counts;
	// admittest.ManualClock drives a Gradient in tests without sleeping.
	// The name is the Rule of the Gradient's decisions. The Observer is
	// not called: a Gradient reports nothing.
	admit.Options

	// Min and Max bound the limit, in requests (slots) in flight:
	// 1 <= Min <= Max, or NewGradient fails with an error wrapping
	// admit.ErrInvalidConfig ("adaptive: invalid bounds"). Required.
	Min, Max int64

	// Initial is the limit the Gradient starts at, in [Min, Max]
	// (outside, an error wrapping admit.ErrInvalidConfig). 0 means Min: an
	// adaptive limiter starts cautious and grows as the feedback allows.
	// A negative value is an error.
	Initial int64

	// Tolerance is how much slower than the long-term latency the
	// short-term latency may be before the Gradient cuts its limit: the
	// gradient is Tolerance × long / short, so at the default, 1.5, the
	// limit settles where requests take about one and a half times as
	// long as without load: in a server with C workers, about 1.5×C
	// requests in flight, C served and the rest queued. A lower tolerance
	// queues less and tracks the capacity more closely, at the risk of
	// cutting on noise. 0 means 1.5; any other value must be finite and at
	// least 1.
	Tolerance float64

	// Smoothing is the weight s of each window's computed limit in the new
	// limit: new = (1-s)×old + s×computed. A higher s reacts faster and
	// oscillates more. 0 means 0.2; any other value must lie in (0, 1].
	Smoothing float64

	// QueueSize is the queue allowance: what a window adds to the limit on
	// top of limit × gradient, so that the limit probes for more capacity
	// and a few requests wait at the backend rather than none (an idle
	// worker is lost throughput). 0 means the square root of the current
	// limit; a negative value means none (an allowance of 0). It must be
	// finite (not NaN).
	QueueSize float64

	// LongWindow is the number of windows n the long-term latency averages
	// over: each window it learns from moves it by 1/n of the way to the
	// window's latency. 0 means 100; a negative value is an error.
	LongWindow int

	// WindowSamples and WindowTime say when a window of samples closes,
	// updating the limit: at the first sample that brings it to at least
	// WindowSamples samples (successes and drops) and at least WindowTime
	// after the window's first sample. WindowSamples 0 means 10, and a
	// negative value is an error. WindowTime 0 means one second, and a
	// negative value means no least duration: the limit then moves every
	// WindowSamples samples, whatever the traffic; with a duration, at
	// most once per duration, so that a busy limiter does not react
	// faster than a quiet one.
	WindowSamples int
	WindowTime    time.Duration

	// MaxWaiters bounds the number of callers of Acquire waiting for a
	// slot; a caller that would be one more fails at once with an error
	// wrapping admit.ErrQueueFull. 0 means no bound (each waiter's context still bounds
	// its wait); a negative value means that no caller ever waits.
	MaxWaiters int
}

// gradientConfig is a GradientConfig checked, with its defaults filled in.
type gradientConfig struct {
	clock      admit.Clock
	name       string
	initial    int64
	tolerance  float64
	smoothing  float64
	queue      float64 // < 0: the square root of the limit
	longWindow int
	samples    int
	minTime    time.Duration
	maxWaiters int // < 0: no bound
}

// check checks cfg's fields but the bounds and fills in their defaults.
func (cfg *GradientConfig) check() (gradientConfig, error) {
	c := gradientConfig{
		clock: defaults.Clock(cfg.Options), name: cfg.Name, initial: cfg.Initial,
		tolerance: cfg.Tolerance, smoothing: cfg.Smoothing, queue: cfg.QueueSize,
		longWindow: cfg.LongWindow, samples: cfg.WindowSamples, minTime: cfg.WindowTime,
		maxWaiters: cfg.MaxWaiters,
	}
	switch t, s, q := cfg.Tolerance, cfg.Smoothing, cfg.QueueSize; {
	case cfg.Initial < 0:
		return c, invalid("Initial", cfg.Initial, ">= 0")
	case t != 0 && (!(t >= 1) || math.IsInf(t, 1)):
		return c, invalid("Tolerance", t, "a finite tolerance >= 1 (or 0 for 1.5)")
	case s != 0 && !(s > 0 && s <= 1):
		return c, invalid("Smoothing", s, "0 < Smoothing <= 1 (or 0 for 0.2)")
	case math.IsNaN(q) || math.IsInf(q, 0):
		return c, invalid("QueueSize", q, "a finite number")
	case cfg.LongWindow < 0:
		return c, invalid("LongWindow", cfg.LongWindow, ">= 0")
	case cfg.WindowSamples < 0:
		return c, invalid("WindowSamples", cfg.WindowSamples, ">= 0")
	}
	c.tolerance = orDefault(c.tolerance, 1.5, 1.5)
	c.smoothing = orDefault(c.smoothing, 0.2, 0.2)
	c.queue = orDefault(c.queue, -1, 0) // -1: the square root of the limit
	c.longWindow = orDefault(c.longWindow, 100, 100)
	c.samples = orDefault(c.samples, 10, 10)
	c.minTime = orDefault(c.minTime, time.Second, 0)
	c.maxWaiters = orDefault(c.maxWaiters, -1, 0) // -1: no bound
	return c, nil
}
