package adaptive

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/timeline"
)

// Gradient is a concurrency limiter whose limit follows the latency of the
// requests it admits, in the manner of Netflix's Gradient2 and TCP Vegas:
// it compares a short-term latency (the mean of the latest window of
// samples) with a long-term one (the latency without load, learnt slowly)
// and cuts the limit when requests take longer than usual, since a backend
// that queues is a backend at capacity. Latency rises before errors do, so
// a Gradient finds the capacity of what it protects without first
// overloading it, and follows it as it changes.
//
// A request takes n slots (usually 1) while it runs: it is admitted iff
//
//	in-flight + n <= limit
//
// and no caller of Acquire is waiting. Its Token gives the slots back and
// reports the outcome: the latency of a success is a sample; a drop (a
// timeout, an overloaded backend's refusal) counts as overload; an ignored
// request is no sample.
//
// # Model
//
// Samples are gathered in windows. A window closes at the first sample
// that gives it at least as many samples as were in flight when it opened,
// at least GradientConfig.WindowSamples samples of requests admitted since it
// opened (so that it sees the effect of the limit it opened under), and a
// duration of at least WindowTime (one second by default): about one
// round trip at full load, more when the traffic is light. Then, with
// short the mean latency of the window's successes and long the long-term
// latency:
//
//	gradient = clamp(tolerance × long / short, 0.5, 2)   (0.5 if a sample was dropped)
//	computed = limit × gradient                          (+ queue if gradient >= 1)
//	limit    = (1-smoothing) × limit + smoothing × computed, within [min, max]
//
// except that the limit does not grow in a window in which fewer than half
// its slots were ever in use: a limit that is not the bottleneck learns
// nothing about capacity (it would otherwise climb to max while the
// traffic is light). The queue allowance (QueueSize, √limit by
// default) keeps a limit whose latency is within the tolerance probing
// for more. The enforced limit is the estimate rounded down.
//
// So while requests take less than tolerance × long the limit grows (by up
// to a fifth per window at the default smoothing), and beyond it shrinks
// (by up to a tenth per window): it settles where requests take tolerance
// × long. In a server with C workers and a queue, that is about tolerance
// × C requests in flight: C being served and the rest queued briefly, the
// backend fully used. A dropped sample cuts the limit as the worst latency
// would, whatever the latencies.
//
// The long-term latency is the latency without load. It starts as the mean
// of the first windows and then moves by 1/LongWindow of the way to a
// window's latency, but only for windows that show no congestion: those
// whose latency is below (1+tolerance)/2 × long, and those closed while
// the limit is at its minimum (where the limiter cannot be the cause of
// any queueing; these move it by at least the smoothing). This is where a
// Gradient departs from Gradient2, whose long-term average follows every
// window: a backend that stays overloaded then makes its queueing the
// norm, and the limit creeps up without end. Here queueing never becomes
// the norm, at a price: a backend whose latency without load grows beyond
// tolerance times what it was (a dependency that became slower for good)
// drives the limit down to min, where the new latency is learnt, after
// which the limit grows again; so set min to what the backend can always
// serve. A backend that became faster is learnt when the traffic falls
// below the limit; until then the limit keeps latencies near tolerance ×
// the old baseline, queueing more than it needs to. For the same reason,
// start the limit (GradientConfig.Initial) at or below the backend's capacity, as the
// default, min, does: windows of a limit far above it teach their
// queueing as the baseline.
//
// # Time
//
// A Token records the instant its slots were granted, and DoneAt reports
// the instant the request ended, so a test drives a Gradient with explicit
// instants and converges it deterministically; DoneRTT takes a latency
// measured by the caller. The shorthands read the limiter's Clock.
//
// The zero Gradient is not usable; create one with NewGradient. A Gradient
// is safe for concurrent use; it starts no goroutine. Every Token must be
// released (Release, Done, DoneAt or DoneRTT), or its slots are lost.
type Gradient struct {
	mu       sync.Mutex
	est      float64 // the estimated limit
	lim      int64   // the enforced limit: est rounded down, within [min, max]
	inflight int64

	// The window being gathered.
	wn     int     // samples: successes and drops
	wfresh int     // samples of requests granted since the window opened
	wneed  int64   // samples the window needs: what was in flight when it opened
	wok    int     // successes
	wsum   float64 // sum of the successes' latencies, ns
	wdrop  bool
	wstart int64 // instant of the window's first sample
	wpeak  int64 // most slots in use during the window

	long    float64 // long-term latency, ns; 0 until the first window closes
	learnt  uint64  // windows the long-term latency learnt from
	windows uint64

	recs   []grant
	free   []int32
	nextID uint64

	whead, wtail *gwaiter
	nwait        int
	waits        uint64 // callers that waited and are done waiting
	waited       int64  // the time they waited in all, ns

	min, max   int64
	tolerance  float64
	smoothing  float64
	queue      float64 // < 0: √est
	alpha      float64
	calm       float64 // a window whose latency is under calm × long is not congested
	samples    int
	minTime    int64
	maxWaiters int
	clock      admit.Clock
	sys        bool
	name       string
}

// grant is the record of one Token's slots.
type grant struct {
	id    uint64 // 0: free
	start int64
	n     int64
	epoch uint64 // windows closed when it was granted
}

// NewGradient returns a Gradient whose limit starts at cfg.Initial
// (cfg.Min by default) and stays within [cfg.Min, cfg.Max]. It fails with
// an error wrapping admit.ErrInvalidConfig: naming the bounds unless
// 1 <= Min <= Initial <= Max, naming the field for another field outside
// its domain.
func NewGradient(cfg GradientConfig) (*Gradient, error) {
	c, err := cfg.check()
	if err != nil {
		return nil, err
	}
	min, max := cfg.Min, cfg.Max
	if min < 1 || min > max {
		return nil, badBounds("min %d, max %d: want 1 <= min <= max", min, max)
	}
	initial := c.initial
	if initial == 0 {
		initial = min
	}
	if initial < min || initial > max {
		return nil, badBounds("initial limit %d outside [%d, %d]", initial, min, max)
	}
	g := &Gradient{
		min: min, max: max,
		tolerance: c.tolerance, smoothing: c.smoothing, queue: c.queue,
		alpha: 1 / float64(c.longWindow), calm: 1 + (c.tolerance-1)/2, samples: c.samples, minTime: int64(c.minTime),
		maxWaiters: c.maxWaiters,
		clock:      c.clock, sys: c.clock == admit.SystemClock, name: c.name,
	}
	g.setEstimate(float64(initial))
	return g, nil
}

// setEstimate sets the estimate, within the bounds, and the enforced
// limit. It requires g.mu.
func (g *Gradient) setEstimate(e float64) {
	lo, hi := float64(g.min), float64(g.max)
	switch {
	case !(e > lo): // also NaN
		g.est, g.lim = lo, g.min
	case e >= hi:
		g.est, g.lim = hi, g.max
	default:
		g.est = e
		g.lim = min(max(int64(e), g.min), g.max)
	}
}

// now reads the clock on the time line.
func (g *Gradient) now() int64 {
	if g.sys {
		return timeline.Now()
	}
	return timeline.Nanos(g.clock.Now())
}

// TryAcquire is shorthand for TryAcquireN(clock.Now(), 1), reporting only
// whether the slot was granted.
func (g *Gradient) TryAcquire() (Token, bool) {
	tok, d, _ := g.tryAcquire(g.now(), 1)
	return tok, d.Allowed
}

// TryAcquireN takes n slots at instant now if they are free and no caller
// of Acquire waits; it never waits. If the request is admitted, the Token
// holds the slots until it is done, and its latency is counted from now;
// otherwise the Token is the zero Token. n = 0 is always admitted and
// holds nothing.
//
// The Decision has Kind admit.KindConcurrency: Limit is {Rate: limit,
// Burst: limit} for the current limit, Remaining the slots free after the
// decision (0 while callers wait), RetryAfter 0 when admitted or when
// unknown (slots come back when requests end). The error is non-nil only
// for invalid input, with a Decision that denies with RetryAfter
// admit.InfDuration: n < 0 (admit.ErrInvalidCost) or n > max, which can
// never be admitted (admit.ErrExceedsBurst).
func (g *Gradient) TryAcquireN(now time.Time, n int64) (Token, admit.Decision, error) {
	return g.tryAcquire(timeline.Nanos(now), n)
}

func (g *Gradient) tryAcquire(t, n int64) (Token, admit.Decision, error) {
	if err := g.check(n); err != nil {
		g.mu.Lock()
		d := g.decision(false, n)
		g.mu.Unlock()
		d.RetryAfter = admit.InfDuration
		return Token{}, d, err
	}
	g.mu.Lock()
	if n == 0 {
		d := g.decision(true, 0)
		g.mu.Unlock()
		return Token{}, d, nil
	}
	if g.whead != nil || n > g.lim-g.inflight {
		d := g.decision(false, n)
		g.mu.Unlock()
		return Token{}, d, nil
	}
	tok := g.grant(t, n)
	d := g.decision(true, n)
	g.mu.Unlock()
	return tok, d, nil
}

// check validates a request of n slots.
func (g *Gradient) check(n int64) error {
	switch {
	case n < 0:
		return fmt.Errorf("%w: %d slots requested", admit.ErrInvalidCost, n)
	case n > g.max:
		return fmt.Errorf("%w: %d slots requested, the maximum limit is %d", admit.ErrExceedsBurst, n, g.max)
	}
	return nil
}

// decision describes the limiter after a request of n was decided. It
// requires g.mu.
func (g *Gradient) decision(allowed bool, n int64) admit.Decision {
	rem := g.lim - g.inflight
	if rem < 0 || g.whead != nil {
		rem = 0
	}
	d := admit.Decision{
		Allowed:   allowed,
		Limit:     admit.Limit{Rate: g.lim, Burst: g.lim},
		Remaining: rem,
		Rule:      g.name,
		Kind:      admit.KindConcurrency,
	}
	if !allowed && n > g.max {
		d.RetryAfter = admit.InfDuration
	}
	return d
}

// grant gives n slots, from instant t. It requires g.mu.
func (g *Gradient) grant(t, n int64) Token {
	var i int32
	if k := len(g.free); k > 0 {
		i = g.free[k-1]
		g.free = g.free[:k-1]
	} else {
		g.recs = append(g.recs, grant{})
		i = int32(len(g.recs) - 1)
	}
	g.nextID++
	g.recs[i] = grant{id: g.nextID, start: t, n: n, epoch: g.windows}
	g.inflight += n
	g.wpeak = max(g.wpeak, g.inflight)
	return Token{g: g, idx: i, id: g.nextID}
}

// finish ends grant i (id): gives back its slots, records its sample, and
// serves the waiters. rtt is the latency if known, else it is t - start.
// It reports false if the grant had ended already.
func (g *Gradient) finish(i int32, id uint64, t int64, o Outcome, rtt int64, hasRTT bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if int(i) >= len(g.recs) || g.recs[i].id != id || id == 0 {
		return false
	}
	r := g.recs[i]
	g.recs[i] = grant{}
	g.free = append(g.free, i)
	g.inflight -= r.n
	if !hasRTT {
		rtt = t - r.start
	}
	if o == Succeeded && rtt < 0 {
		o = Ignored // time went backwards: no sample
	}
	if o == Succeeded || o == Dropped {
		g.sample(t, r.n, o, rtt, r.epoch == g.windows)
	}
	if g.whead != nil {
		g.serve(t)
	}
	return true
}

// sample adds a sample to the window, and closes the window if it is
// complete. It requires g.mu.
func (g *Gradient) sample(t, n int64, o Outcome, rtt int64, fresh bool) {
	if g.wn == 0 {
		g.wstart = t
		g.wpeak = max(g.wpeak, g.inflight)
		g.wneed = max(int64(g.samples), g.inflight+n)
	}
	g.wn++
	if fresh {
		g.wfresh++
	}
	if o == Dropped {
		g.wdrop = true
	} else {
		g.wok++
		g.wsum += float64(max(rtt, 1))
	}
	if g.wfresh >= g.samples && int64(g.wn) >= g.wneed && t-g.wstart >= g.minTime {
		g.update()
		g.wn, g.wfresh, g.wok, g.wsum, g.wdrop = 0, 0, 0, 0, false
		g.wpeak = g.inflight
	}
}

// update moves the limit at the close of a window. It requires g.mu.
func (g *Gradient) update() {
	g.windows++
	var short float64
	if g.wok > 0 {
		short = g.wsum / float64(g.wok)
		atMin := g.lim <= g.min
		if g.learnt == 0 || short <= g.long*g.calm || atMin {
			g.learnt++
			w := max(g.alpha, 1/float64(g.learnt))
			if atMin {
				w = max(w, g.smoothing)
			}
			g.long += (short - g.long) * w
		}
	}
	grad := 0.5
	if !g.wdrop {
		grad = min(max(g.tolerance*g.long/short, 0.5), 2)
	}
	computed := g.est * grad
	if grad >= 1 {
		q := g.queue
		if q < 0 {
			q = math.Sqrt(g.est)
		}
		computed += q
	}
	if g.wpeak*2 < g.lim && computed > g.est {
		computed = g.est // not the bottleneck: no growth
	}
	g.setEstimate(g.est*(1-g.smoothing) + computed*g.smoothing)
}

// Limit returns the current limit: the most slots that may be in flight,
// always within [GradientConfig.Min, GradientConfig.Max].
func (g *Gradient) Limit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lim
}

// GradientStats describes a Gradient at one instant.
type GradientStats struct {
	Limit    int64         // the enforced limit
	Min, Max int64         // the bounds of the limit (GradientConfig.Min and Max)
	Estimate float64       // the estimate the limit is rounded down from
	InFlight int64         // slots held by Tokens not yet done
	Waiting  int           // callers of Acquire waiting
	LongRTT  time.Duration // the long-term latency (0 before the first window)
	Windows  uint64        // windows closed so far
	// Waits is the number of callers of Acquire that waited since
	// NewGradient and are done waiting (granted, failed, or their context
	// ended); Waited is the time they waited in all, by the limiter's
	// Clock: Waited / Waits is their mean wait.
	Waits  uint64
	Waited time.Duration
}

// Stats returns the limiter's current state.
func (g *Gradient) Stats() GradientStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GradientStats{
		Limit:    g.lim,
		Min:      g.min,
		Max:      g.max,
		Estimate: g.est,
		InFlight: g.inflight,
		Waiting:  g.nwait,
		LongRTT:  time.Duration(g.long),
		Windows:  g.windows,
		Waits:    g.waits,
		Waited:   time.Duration(g.waited),
	}
}

// Token holds the slots a Gradient granted to one request until the
// request is done, and reports its outcome. It is a small value, so
// acquiring one does not allocate; copies of a Token are the same Token.
// Only the first of Release, Done, DoneAt and DoneRTT on a Token (or any
// copy) counts; later calls do nothing and report false, so they can never
// give back slots granted to someone else. The zero Token holds nothing.
// A Token is safe for concurrent use.
type Token struct {
	g   *Gradient
	idx int32
	id  uint64
}

// Release is shorthand for Done(Succeeded): the request succeeded, and its
// latency is measured by the limiter's Clock. It makes a Token a
// admit.Releaser.
func (t Token) Release() { t.Done(Succeeded) }

// Finish is Done(Dropped) if failed, else Done(Succeeded): the outcome as
// a middleware tells it. It makes a Token a compose.Finisher, so that a
// compose.Held's Finish reports the outcome of the request to the
// Gradient.
func (t Token) Finish(failed bool) {
	if failed {
		t.Done(Dropped)
	} else {
		t.Done(Succeeded)
	}
}

// Done is shorthand for DoneAt(clock.Now(), o).
func (t Token) Done(o Outcome) bool {
	if t.g == nil {
		return false
	}
	return t.done(t.g.now(), o, 0, false)
}

// DoneAt ends the request at instant now with outcome o and gives back its
// slots. A success's latency, now minus the instant the slots were
// granted, is a sample (none if it is negative); a drop counts as
// overload; Ignored, and any value that is not an Outcome, is no sample.
// It reports whether the Token held slots (false after the first call).
func (t Token) DoneAt(now time.Time, o Outcome) bool {
	if t.g == nil {
		return false
	}
	return t.done(timeline.Nanos(now), o, 0, false)
}

// DoneRTT is DoneAt(clock.Now(), o) with the latency rtt measured by the
// caller (such as the backend's own processing time) instead of the time
// since the slots were granted. A negative rtt is no sample; a zero one
// counts as 1ns.
func (t Token) DoneRTT(o Outcome, rtt time.Duration) bool {
	if t.g == nil {
		return false
	}
	if rtt < 0 && o == Succeeded {
		o = Ignored
	}
	return t.done(t.g.now(), o, int64(rtt), true)
}

func (t Token) done(now int64, o Outcome, rtt int64, hasRTT bool) bool {
	if t.g == nil {
		return false
	}
	if !o.valid() {
		o = Ignored
	}
	return t.g.finish(t.idx, t.id, now, o, rtt, hasRTT)
}
