package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/admit-go/admit"
)

// AIMDOption configures an AIMD. The zero set of options gives the
// defaults documented on each option.
type AIMDOption interface {
	applyAIMD(*aimdConfig)
}

// GradientOption configures a Gradient. The zero set of options gives the
// defaults documented on each option.
type GradientOption interface {
	applyGradient(*gradientConfig)
}

// Option configures either limiter: it is an AIMDOption and a
// GradientOption.
type Option interface {
	AIMDOption
	GradientOption
}

// common holds the options both limiters take.
type common struct {
	clock   admit.Clock
	name    string
	initial int64 // 0: min
	err     error
}

func (c *common) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

type commonOption func(*common)

func (f commonOption) applyAIMD(c *aimdConfig)         { f(&c.common) }
func (f commonOption) applyGradient(c *gradientConfig) { f(&c.common) }

type aimdOption func(*aimdConfig)

func (f aimdOption) applyAIMD(c *aimdConfig) { f(c) }

type gradientOption func(*gradientConfig)

func (f gradientOption) applyGradient(c *gradientConfig) { f(c) }

// WithClock sets the clock read by the shorthands that take no instant
// (Allow, Feedback, TryAcquire, Token.Release...) and whose timers bound
// waits. The default is admit.SystemClock; a nil c keeps it.
// admittest.ManualClock drives a limiter in tests without sleeping.
func WithClock(c admit.Clock) Option {
	return commonOption(func(o *common) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithName names the limiter; the name appears as Decision.Rule. The
// default is no name.
func WithName(name string) Option {
	return commonOption(func(o *common) { o.name = name })
}

// WithInitial sets the value the limit starts at: an AIMD's rate, a
// Gradient's limit. It must lie within the bounds given to the
// constructor. The default is the minimum: an adaptive limiter starts
// cautious and grows as the feedback allows.
func WithInitial(n int64) Option {
	return commonOption(func(o *common) {
		if n <= 0 {
			o.fail("WithInitial(%d): want a positive value", n)
			return
		}
		o.initial = n
	})
}

// aimdConfig is the configuration of an AIMD.
type aimdConfig struct {
	common
	period    time.Duration
	burst     int64 // 0: the rate
	step      int64
	factor    float64
	threshold time.Duration // 0: none
	incEvery  time.Duration
	decEvery  time.Duration
	gated     bool
}

// Defaults of the AIMD options.
const (
	// DefaultFactor is the factor an AIMD's rate is multiplied by on a
	// failure.
	DefaultFactor = 0.5
	// DefaultStep is what an AIMD's rate grows by on a success.
	DefaultStep = 1
)

// WithPeriod sets the period an AIMD's rates (min, max, the step) are
// counted over: a rate r is r events per d. The default is time.Second;
// d must be positive. A longer period gives a finer rate: bounds of 30 and
// 600 per minute are half an event to ten events per second, in steps of
// one per minute.
func WithPeriod(d time.Duration) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if d <= 0 {
			c.fail("WithPeriod(%v): want a positive period", d)
			return
		}
		c.period = d
	})
}

// WithBurst fixes an AIMD's burst at b events, whatever its rate. The
// default is a burst equal to the current rate (as for admit.Limit, whose
// Burst 0 means Burst = Rate), so that the burst moves with the rate; b
// must be positive.
func WithBurst(b int64) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if b <= 0 {
			c.fail("WithBurst(%d): want a positive burst", b)
			return
		}
		c.burst = b
	})
}

// WithStep sets how much an AIMD's rate grows on a success (events per
// period; see WithIncreaseInterval for how often). The default is
// DefaultStep (1); s must be positive.
func WithStep(s int64) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if s <= 0 {
			c.fail("WithStep(%d): want a positive step", s)
			return
		}
		c.step = s
	})
}

// WithFactor sets the factor an AIMD's rate is multiplied by on a failure
// (the result rounded down, and never below the minimum). The default is
// DefaultFactor (0.5); f must lie strictly between 0 and 1.
func WithFactor(f float64) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if !(f > 0 && f < 1) { // also refuses NaN
			c.fail("WithFactor(%v): want 0 < f < 1", f)
			return
		}
		c.factor = f
	})
}

// WithLatencyThreshold makes a success reported with a latency above d
// count as a failure: the backend answered, but too slowly. Latencies are
// those given to FeedbackAt; Feedback gives none. The default, d = 0, is
// no threshold; d must not be negative.
func WithLatencyThreshold(d time.Duration) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if d < 0 {
			c.fail("WithLatencyThreshold(%v): want a duration >= 0", d)
			return
		}
		c.threshold = d
	})
}

// WithIncreaseInterval makes an AIMD grow at most once per d: a success
// grows the rate by the step only if d has passed since the last change of
// the rate (up or down). The default, d = 0, grows on every success, as
// the classic AIMD does: the rate then grows with the traffic it admits
// (a limiter admitting r events per second grows by about r×step per
// second while they all succeed), which finds capacity fast but overshoots
// it by more. With d > 0 the growth is linear in time, step per d, as TCP
// grows by one segment per round trip. d must not be negative.
func WithIncreaseInterval(d time.Duration) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if d < 0 {
			c.fail("WithIncreaseInterval(%v): want a duration >= 0", d)
			return
		}
		c.incEvery = d
	})
}

// WithDecreaseInterval makes an AIMD cut its rate at most once per d: a
// failure within d of the last cut changes nothing (increases in between
// do not matter). Requests already in
// flight when a backend starts failing fail together; without an interval
// each of them cuts the rate again, so a burst of k failures multiplies it
// by factor^k. Set d to about the backend's timeout to cut once per
// episode. The default, d = 0, cuts on every failure; d must not be
// negative.
func WithDecreaseInterval(d time.Duration) AIMDOption {
	return aimdOption(func(c *aimdConfig) {
		if d < 0 {
			c.fail("WithDecreaseInterval(%v): want a duration >= 0", d)
			return
		}
		c.decEvery = d
	})
}

// WithIncreaseOnlyWhenLimited makes an AIMD grow only when its rate is what
// holds the traffic back: a success grows the rate only if, since the last
// change of the rate, the limiter refused a request or made one wait.
// Without it a limiter whose traffic stays well below its rate keeps
// growing on every success, up to the maximum, and the first burst of
// traffic then meets a rate that was never tried. The default is to grow
// on every success.
func WithIncreaseOnlyWhenLimited() AIMDOption {
	return aimdOption(func(c *aimdConfig) { c.gated = true })
}

// gradientConfig is the configuration of a Gradient.
type gradientConfig struct {
	common
	tolerance  float64
	smoothing  float64
	queue      float64 // < 0: the square root of the limit
	longWindow int
	samples    int
	minTime    time.Duration
	maxWaiters int // < 0: no bound
}

// Defaults of the Gradient options.
const (
	// DefaultTolerance is the ratio of short-term to long-term latency a
	// Gradient tolerates before it cuts its limit.
	DefaultTolerance = 1.5
	// DefaultSmoothing is the weight of each window's new limit.
	DefaultSmoothing = 0.2
	// DefaultLongWindow is the number of windows the long-term latency
	// averages over.
	DefaultLongWindow = 100
	// DefaultWindowSamples is the least number of samples in a window.
	DefaultWindowSamples = 10
	// DefaultWindowTime is the least duration of a window.
	DefaultWindowTime = time.Second
)

// WithTolerance sets how much slower than the long-term latency the
// short-term latency may be before a Gradient cuts its limit: the
// gradient is tolerance × long / short, so at the default, 1.5, the limit
// settles where requests take about one and a half times as long as
// without load: in a server with C workers, about 1.5×C requests in
// flight, C served and the rest queued. A lower tolerance queues less and
// tracks the capacity more closely, at the risk of cutting on noise. The
// default is DefaultTolerance; t must be at least 1 (and not NaN or
// infinite).
func WithTolerance(t float64) GradientOption {
	return gradientOption(func(c *gradientConfig) {
		if !(t >= 1) || math.IsInf(t, 1) {
			c.fail("WithTolerance(%v): want a finite tolerance >= 1", t)
			return
		}
		c.tolerance = t
	})
}

// WithSmoothing sets the weight s of each window's computed limit in the
// new limit: new = (1-s)×old + s×computed. A higher s reacts faster and
// oscillates more. The default is DefaultSmoothing (0.2); s must lie in
// (0, 1].
func WithSmoothing(s float64) GradientOption {
	return gradientOption(func(c *gradientConfig) {
		if !(s > 0 && s <= 1) {
			c.fail("WithSmoothing(%v): want 0 < s <= 1", s)
			return
		}
		c.smoothing = s
	})
}

// WithQueueSize sets the queue allowance: what a window adds to the limit
// on top of limit × gradient, so that the limit probes for more capacity
// and a few requests wait at the backend rather than none (an idle worker
// is lost throughput). The default is the square root of the current
// limit; q must be finite and not negative.
func WithQueueSize(q float64) GradientOption {
	return gradientOption(func(c *gradientConfig) {
		if !(q >= 0) || math.IsInf(q, 1) {
			c.fail("WithQueueSize(%v): want a finite q >= 0", q)
			return
		}
		c.queue = q
	})
}

// WithLongWindow sets the number of windows n the long-term latency
// averages over: each window it learns from moves it by 1/n of the way to
// the window's latency. The default is DefaultLongWindow (100); n must be
// positive.
func WithLongWindow(n int) GradientOption {
	return gradientOption(func(c *gradientConfig) {
		if n <= 0 {
			c.fail("WithLongWindow(%d): want a positive number of windows", n)
			return
		}
		c.longWindow = n
	})
}

// WithWindow sets when a Gradient's window of samples closes, updating the
// limit: at the first sample that brings it to at least samples samples
// (successes and drops) and at least d after the window's first sample.
// The defaults are DefaultWindowSamples (10) and DefaultWindowTime (1s);
// samples must be positive and d not negative. With d = 0 the limit moves
// every samples samples, whatever the traffic; with d > 0 at most once per
// d, so that a busy limiter does not react faster than a quiet one.
func WithWindow(samples int, d time.Duration) GradientOption {
	return gradientOption(func(c *gradientConfig) {
		if samples <= 0 || d < 0 {
			c.fail("WithWindow(%d, %v): want samples > 0 and d >= 0", samples, d)
			return
		}
		c.samples, c.minTime = samples, d
	})
}

// WithMaxWaiters bounds the number of callers of Acquire waiting for a
// slot; a caller that would be one more fails at once with ErrQueueFull.
// With n = 0 no caller ever waits. The default, or a negative n, is no
// bound (each waiter's context still bounds its wait).
func WithMaxWaiters(n int) GradientOption {
	return gradientOption(func(c *gradientConfig) { c.maxWaiters = n })
}
