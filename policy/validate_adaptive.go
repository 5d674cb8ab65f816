package policy

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/lanelimits"
)

// memoryOnly checks the limits of rule r kept in memory only: adaptive
// ones and lanes. matchKeys are the keys of r's match entries.
func (v *validator) memoryOnly(r *Rule, src *source, matchKeys map[string]int) {
	l := &r.Limits
	if !l.adaptive() {
		return
	}
	kind := "lanes"
	switch {
	case l.AdaptiveConcurrency != nil:
		kind = "adaptive_concurrency"
	case l.AdaptiveRate != nil:
		kind = "adaptive_rate"
	}
	if !src.isBroken("store") {
		if r.Store != StoreLocal && r.Store != storeDefault {
			v.at(src, "store", "%s is kept in memory only (an adaptive limit learns from the requests of this instance, and a shared store holds no such state), and so is its rule: remove store: %s, or put the limits to keep in %s in a rule of their own", kind, r.Store, r.Store)
		} else if r.Failure != (Failure{}) {
			v.at(src, "failure", "a failure policy applies to rules kept in Redis, and this one is kept in memory, as every rule with %s is", kind)
		}
	}
	if a := l.AdaptiveConcurrency; a != nil {
		v.adaptiveConcurrency(a, src)
	}
	if a := l.AdaptiveRate; a != nil {
		v.adaptiveRate(a, src)
	}
	if ln := l.Lanes; ln != nil {
		v.lanes(r, ln, src, matchKeys)
	}
}

// config returns the configuration of the adaptive.Gradient of a, but its
// clock and name.
func (a *AdaptiveConcurrency) config() adaptive.GradientConfig {
	c := adaptive.GradientConfig{
		Min: a.Min, Max: a.Max, Initial: a.Initial,
		Tolerance: a.Tolerance, Smoothing: a.Smoothing,
		LongWindow: a.LongWindow, WindowSamples: a.WindowSamples,
	}
	if q := a.QueueSize; q != nil {
		c.QueueSize = *q
		if *q == 0 {
			c.QueueSize = -1 // none
		}
	}
	if t := a.WindowTime; t != nil {
		c.WindowTime = *t
		if *t == 0 {
			c.WindowTime = -1 // no least duration
		}
	}
	return c
}

// initial returns where the limit starts.
func (a *AdaptiveConcurrency) initial() int64 {
	if a.Initial > 0 {
		return a.Initial
	}
	return a.Min
}

// describe describes a, every field given: the definition that
// Config.Previous compares.
func (a *AdaptiveConcurrency) describe() string {
	q, t := "sqrt", "default"
	if a.QueueSize != nil {
		q = fmtFloat(*a.QueueSize)
	}
	if a.WindowTime != nil {
		t = a.WindowTime.String()
	}
	return "adaptive_concurrency min=" + itoa(a.Min) + " max=" + itoa(a.Max) + " initial=" + itoa(a.Initial) +
		" tolerance=" + fmtFloat(a.Tolerance) + " smoothing=" + fmtFloat(a.Smoothing) + " queue=" + q +
		" long=" + itoa(int64(a.LongWindow)) + " samples=" + itoa(int64(a.WindowSamples)) + " time=" + t
}

// config returns the configuration of the adaptive.AIMD of a, but its
// clock and name.
func (a *AdaptiveRate) config() adaptive.AIMDConfig {
	return adaptive.AIMDConfig{
		Min: a.Min, Max: a.Max, Initial: a.Initial, Period: a.Period,
		Step: a.Step, Factor: a.Factor, Burst: a.Burst,
		LatencyThreshold: a.LatencyThreshold,
		IncreaseInterval: a.IncreaseInterval, DecreaseInterval: a.DecreaseInterval,
	}
}

// limit returns the initial rate as a limit.
func (a *AdaptiveRate) limit() admit.Limit {
	p, r := a.Period, a.Initial
	if p == 0 {
		p = time.Second
	}
	if r == 0 {
		r = a.Min
	}
	b := a.Burst
	if b == 0 {
		b = r
	}
	return admit.Limit{Rate: r, Period: p, Burst: b}
}

// describe describes a, every field given: the definition that
// Config.Previous compares.
func (a *AdaptiveRate) describe() string {
	return "adaptive_rate period=" + a.Period.String() + " min=" + itoa(a.Min) + " max=" + itoa(a.Max) + " initial=" + itoa(a.Initial) +
		" step=" + itoa(a.Step) + " factor=" + fmtFloat(a.Factor) + " burst=" + itoa(a.Burst) +
		" threshold=" + a.LatencyThreshold.String() + " inc=" + a.IncreaseInterval.String() + " dec=" + a.DecreaseInterval.String()
}

// rateConfig returns the configuration of the fair.RateLanes of l, but
// their clock and name.
func (l *Lanes) rateConfig() fair.RateLanesConfig {
	return fair.RateLanesConfig{Budget: *l.Budget, Lanes: l.Lanes, Borrowing: l.Borrow, Reserve: l.Reserve, DefaultLane: l.defaultLane()}
}

// slotConfig returns the configuration of the fair.SlotLanes of l, but
// their name.
func (l *Lanes) slotConfig() fair.SlotLanesConfig {
	return fair.SlotLanesConfig{Max: l.Concurrency, Lanes: l.Lanes, Borrowing: l.Borrow, Reserve: l.Reserve, DefaultLane: l.defaultLane()}
}

// defaultLane returns the lane of the values that name none.
func (l *Lanes) defaultLane() string {
	if l.DefaultLane != "" || len(l.Lanes) == 0 {
		return l.DefaultLane
	}
	return l.Lanes[len(l.Lanes)-1].Name
}

// laneKey returns the key of the entry that picks the lane, among r's
// match entries.
func (l *Lanes) laneKey(r *Rule) string {
	if l.LaneKey != "" || len(r.Match) == 0 {
		return l.LaneKey
	}
	return r.Match[len(r.Match)-1].Key
}

// describe describes l, every field given: the definition that
// Config.Previous compares.
func (l *Lanes) describe() string {
	var b strings.Builder
	b.WriteString("lanes")
	if l.Budget != nil {
		b.WriteString(" budget=" + l.Budget.String())
	}
	b.WriteString(" concurrency=" + itoa(l.Concurrency) + " key=" + l.LaneKey + " borrow=" + l.Borrow.String() +
		" default=" + l.DefaultLane + " reserve=" + fmtFloat(l.Reserve) + " shares=")
	for _, ln := range l.Lanes {
		b.WriteString(appendValueString(ln.Name) + "=" + itoa(ln.Share) + ",")
	}
	return b.String()
}

func (v *validator) adaptiveConcurrency(a *AdaptiveConcurrency, src *source) {
	const f = "adaptive_concurrency."
	mark := len(v.errs.errs)
	switch {
	case a.Min < 1:
		v.at(src, f+"min", "min %d is below 1", a.Min)
	case a.Max > maxExact:
		v.at(src, f+"max", "max %d is above the maximum of %d", a.Max, int64(maxExact))
	case a.Min > a.Max:
		v.at(src, f+"max", "max %d is below min %d", a.Max, a.Min)
	case a.Initial != 0 && (a.Initial < a.Min || a.Initial > a.Max):
		v.at(src, f+"initial", "initial %d is outside [min, max] = [%d, %d]", a.Initial, a.Min, a.Max)
	}
	if t := a.Tolerance; t != 0 && !(t >= 1 && !math.IsInf(t, 1)) {
		v.at(src, f+"tolerance", "tolerance %v is not a finite number of at least 1", t)
	}
	if s := a.Smoothing; s != 0 && !(s > 0 && s <= 1) {
		v.at(src, f+"smoothing", "smoothing %v is outside (0, 1]", s)
	}
	if q := a.QueueSize; q != nil && !(*q >= 0 && !math.IsInf(*q, 1)) {
		v.at(src, f+"queue_size", "queue_size %v is not a finite number of at least 0", *q)
	}
	if a.LongWindow < 0 {
		v.at(src, f+"long_window", "long_window %d is negative", a.LongWindow)
	}
	if a.WindowSamples < 0 {
		v.at(src, f+"window_samples", "window_samples %d is negative", a.WindowSamples)
	}
	if t := a.WindowTime; t != nil && *t < 0 {
		v.at(src, f+"window_time", "window_time %v is negative", *t)
	}
	if len(v.errs.errs) == mark {
		if _, err := adaptive.NewGradient(a.config()); err != nil {
			v.at(src, "adaptive_concurrency", "%v", err)
		}
	}
}

func (v *validator) adaptiveRate(a *AdaptiveRate, src *source) {
	const f = "adaptive_rate."
	mark := len(v.errs.errs)
	switch {
	case a.Period < 0:
		v.at(src, "adaptive_rate", "period %v is negative", a.Period)
	case a.Min < 1:
		v.at(src, f+"min", "min %d is below one event per period", a.Min)
	case a.Max >= admit.Inf:
		v.at(src, f+"max", "max cannot be unlimited")
	case a.Min > a.Max:
		v.at(src, f+"max", "max %d is below min %d", a.Max, a.Min)
	case a.Initial != 0 && (a.Initial < a.Min || a.Initial > a.Max):
		v.at(src, f+"initial", "initial %d is outside [min, max] = [%d, %d]", a.Initial, a.Min, a.Max)
	}
	if a.Step < 0 {
		v.at(src, f+"step", "step %d is negative", a.Step)
	}
	if x := a.Factor; x != 0 && !(x > 0 && x < 1) {
		v.at(src, f+"factor", "factor %v is outside (0, 1)", x)
	}
	if a.Burst < 0 {
		v.at(src, f+"burst", "burst %d is negative", a.Burst)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"latency_threshold", a.LatencyThreshold}, {"increase_interval", a.IncreaseInterval}, {"decrease_interval", a.DecreaseInterval}} {
		if d.d < 0 {
			v.at(src, f+d.name, "%s %v is negative", d.name, d.d)
		}
	}
	if len(v.errs.errs) == mark {
		if _, err := adaptive.NewAIMD(a.config()); err != nil {
			v.at(src, "adaptive_rate", "%v", err)
		}
	}
}

func (v *validator) lanes(r *Rule, l *Lanes, src *source, matchKeys map[string]int) {
	const f = "lanes."
	mark := len(v.errs.errs)
	switch {
	case l.Budget != nil && l.Concurrency != 0:
		v.at(src, f+"concurrency", "give lanes a budget (a rate) or concurrency (slots), not both")
	case l.Budget == nil && l.Concurrency == 0:
		v.at(src, "lanes", "lanes need a budget (a rate) or concurrency (slots in flight) to share")
	case l.Budget != nil:
		b := *l.Budget
		if err := b.Validate(); err != nil {
			v.at(src, f+"budget", "invalid budget %v: %s", b, limitReason(err))
		} else if b.Rate == admit.Inf || b.Rate == 0 {
			v.at(src, f+"budget", "the budget of lanes cannot be unlimited or zero")
		}
	default:
		if err := checkCount(l.Concurrency, "the concurrency of lanes"); err != nil {
			v.at(src, f+"concurrency", "%v", err)
		}
	}
	names := map[string]bool{}
	switch {
	case len(l.Lanes) == 0:
		v.at(src, f+"shares", "no lanes")
	case len(l.Lanes) > lanelimits.MaxLanes:
		v.at(src, f+"shares", "%d lanes, the most is %d", len(l.Lanes), lanelimits.MaxLanes)
	}
	for _, ln := range l.Lanes {
		at := f + "shares:" + ln.Name
		switch {
		case ln.Name == "":
			v.at(src, f+"shares", "a lane needs a name")
		case names[ln.Name]:
			v.at(src, at, "two lanes named %q", truncate(ln.Name))
		case ln.Share < 1 || ln.Share > lanelimits.MaxShare:
			v.at(src, at, "lane %q has share %d, want 1 to %d", truncate(ln.Name), ln.Share, lanelimits.MaxShare)
		}
		names[ln.Name] = true
	}
	if l.Borrow > fair.BorrowNone {
		v.at(src, f+"borrow", "unknown borrowing %v", l.Borrow)
	}
	if l.DefaultLane != "" && !names[l.DefaultLane] {
		v.at(src, f+"default_lane", "default_lane %q is not a lane (lanes: %s)", truncate(l.DefaultLane), strings.Join(sortedKeys(names), ", "))
	}
	if x := l.Reserve; x != 0 && !(x > 0 && x <= 1) {
		v.at(src, f+"reserve", "reserve %v is outside (0, 1]", x)
	}
	if k := l.laneKey(r); len(r.Match) > 0 && !src.isBroken("match") {
		if _, ok := matchKeys[k]; !ok {
			v.at(src, f+"lane_key", "no match entry has key %q, whose value would pick the lane", truncate(k))
		}
	}
	if len(v.errs.errs) > mark {
		return
	}
	var err error
	field := f + "budget"
	if l.Budget != nil {
		_, err = fair.NewRateLanes(l.rateConfig())
	} else {
		field = f + "concurrency"
		_, err = fair.NewSlotLanes(l.slotConfig())
	}
	if err != nil {
		v.at(src, field, "%s", strings.TrimPrefix(err.Error(), admit.ErrInvalidConfig.Error()+": fair: invalid lanes: "))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// appendValueString returns s length-prefixed (see appendValue).
func appendValueString(s string) string { return string(appendValue(nil, s)) }
