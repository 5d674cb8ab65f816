package policy

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/lanelimits"
)

// The fields of the rule kinds kept in memory only (see the package
// documentation).
var (
	adaptiveConcFields = []string{"min", "max", "initial", "tolerance", "smoothing", "queue_size", "long_window", "window_samples", "window_time"}
	adaptiveRateFields = []string{"min", "max", "initial", "step", "factor", "burst", "latency_threshold", "increase_interval", "decrease_interval"}
	lanesFields        = []string{"budget", "concurrency", "lane_key", "shares", "borrow", "default_lane", "reserve"}
)

// adaptiveConcurrency decodes a rule's adaptive_concurrency, recording the
// positions of its fields in src.
func (d *decoder) adaptiveConcurrency(n *yaml.Node, path string, src *source) (*AdaptiveConcurrency, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	a := &AdaptiveConcurrency{}
	good, hasMin, hasMax := true, false, false
	if !w.fields(n, path, adaptiveConcFields, func(key string, vn *yaml.Node, fpath string) {
		src.set("adaptive_concurrency."+key, fpath, w.pos(vn))
		var (
			ok bool
			v  int64
			f  float64
		)
		switch key {
		case "min":
			hasMin = true
			a.Min, ok = w.integer(vn, fpath, 1, maxExact)
		case "max":
			hasMax = true
			a.Max, ok = w.integer(vn, fpath, 1, maxExact)
		case "initial":
			a.Initial, ok = w.integer(vn, fpath, 1, maxExact)
		case "tolerance":
			if f, ok = w.number(vn, fpath); ok && f < 1 {
				w.fail(vn, fpath, "tolerance %v is below 1: requests may always take as long as without load", f)
				ok = false
			}
			a.Tolerance = f
		case "smoothing":
			if f, ok = w.number(vn, fpath); ok && !(f > 0 && f <= 1) {
				w.fail(vn, fpath, "smoothing %v is outside (0, 1]", f)
				ok = false
			}
			a.Smoothing = f
		case "queue_size":
			if f, ok = w.number(vn, fpath); ok && f < 0 {
				w.fail(vn, fpath, "queue_size %v is negative", f)
				ok = false
			}
			a.QueueSize = &f
		case "long_window":
			v, ok = w.integer(vn, fpath, 1, 1<<20)
			a.LongWindow = int(v)
		case "window_samples":
			v, ok = w.integer(vn, fpath, 1, 1<<20)
			a.WindowSamples = int(v)
		case "window_time":
			var dur time.Duration
			dur, ok = w.duration(vn, fpath, 0)
			a.WindowTime = &dur
		}
		good = good && ok
	}) {
		return nil, false
	}
	if good && (!hasMin || !hasMax) {
		w.fail(r, path, "adaptive_concurrency needs min and max, the bounds of the limit")
		good = false
	}
	if !good {
		return nil, false
	}
	return a, true
}

// adaptiveRate decodes a rule's adaptive_rate, recording the positions of
// its fields in src. Its rates (min, max, initial, and step if written as
// a rate) must share one period.
func (d *decoder) adaptiveRate(n *yaml.Node, path string, src *source) (*AdaptiveRate, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	a := &AdaptiveRate{}
	var rates []givenRate
	good := true
	hasMin, hasMax := false, false
	if !w.fields(n, path, adaptiveRateFields, func(key string, vn *yaml.Node, fpath string) {
		src.set("adaptive_rate."+key, fpath, w.pos(vn))
		ok := d.adaptiveRateField(a, &rates, key, vn, fpath)
		hasMin = hasMin || key == "min"
		hasMax = hasMax || key == "max"
		good = good && ok
	}) {
		return nil, false
	}
	if good && (!hasMin || !hasMax) {
		w.fail(r, path, "adaptive_rate needs min and max, the bounds of the rate (10/s, 1000/s)")
		good = false
	}
	if !good || !d.onePeriod(a, rates, path) {
		return nil, false
	}
	return a, true
}

// givenRate is a rate of adaptive_rate as written: its field, node, limit
// and text.
type givenRate struct {
	field string
	node  *yaml.Node
	limit admit.Limit
	text  string
}

// adaptiveRateField decodes one field of adaptive_rate into a, appending
// the rates given to rates; it reports whether the field is valid.
func (d *decoder) adaptiveRateField(a *AdaptiveRate, rates *[]givenRate, key string, vn *yaml.Node, fpath string) bool {
	w := d.w
	var ok bool
	switch key {
	case "min", "max", "initial":
		var l admit.Limit
		if l, ok = d.adaptiveRateValue(vn, fpath); ok {
			*rates = append(*rates, givenRate{key, vn, l, w.resolve(vn, fpath).Value})
			switch key {
			case "min":
				a.Min = l.Rate
			case "max":
				a.Max = l.Rate
			default:
				a.Initial = l.Rate
			}
		}
	case "step":
		if sn := w.resolve(vn, fpath); sn != nil && sn.Kind == yaml.ScalarNode && sn.ShortTag() == tagInt {
			a.Step, ok = w.integer(vn, fpath, 1, math.MaxInt64)
		} else {
			var l admit.Limit
			if l, ok = d.adaptiveRateValue(vn, fpath); ok {
				*rates = append(*rates, givenRate{key, vn, l, w.resolve(vn, fpath).Value})
				a.Step = l.Rate
			}
		}
	case "factor":
		var f float64
		if f, ok = w.number(vn, fpath); ok && !(f > 0 && f < 1) {
			w.fail(vn, fpath, "factor %v is outside (0, 1): a failure must cut the rate", f)
			ok = false
		}
		a.Factor = f
	case "burst":
		a.Burst, ok = w.integer(vn, fpath, 1, math.MaxInt64)
	case "latency_threshold":
		a.LatencyThreshold, ok = w.duration(vn, fpath, 0)
	case "increase_interval":
		a.IncreaseInterval, ok = w.duration(vn, fpath, 0)
	case "decrease_interval":
		a.DecreaseInterval, ok = w.duration(vn, fpath, 0)
	}
	return ok
}

// onePeriod gives a the period of the first of the rates given, and
// reports whether the others share it (reporting the first that does not).
func (d *decoder) onePeriod(a *AdaptiveRate, rates []givenRate, path string) bool {
	a.Period = rates[0].limit.Period
	for _, g := range rates[1:] {
		if g.limit.Period != a.Period {
			d.w.fail(g.node, keyPath(path, g.field), "%s %s is a rate per %v and %s %s one per %v: give the rates of adaptive_rate per the same period",
				g.field, truncate(g.text), g.limit.Period, rates[0].field, truncate(rates[0].text), a.Period)
			return false
		}
	}
	return true
}

// adaptiveRateValue decodes one rate of adaptive_rate: a whole number of
// events (at least 1) per period, without a burst.
func (d *decoder) adaptiveRateValue(n *yaml.Node, path string) (admit.Limit, bool) {
	rs, ok := d.rate(n, path)
	if !ok {
		return admit.Limit{}, false
	}
	l := rs.limit
	switch {
	case l.Rate == admit.Inf:
		d.w.fail(n, path, "an adaptive rate cannot be unlimited")
		return admit.Limit{}, false
	case l.Rate < 1:
		d.w.fail(n, path, "rate %v is below one event per period", l)
		return admit.Limit{}, false
	case rs.hasBurst:
		d.w.fail(n, path, "a burst here means nothing: the burst follows the rate (or give adaptive_rate a burst)")
		return admit.Limit{}, false
	}
	return l, true
}

// lanes decodes a rule's lanes, recording the positions of its fields in
// src.
func (d *decoder) lanes(n *yaml.Node, path string, src *source) (*Lanes, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	l := &Lanes{}
	good := true
	var budgetN, concN, sharesN *yaml.Node
	if !w.fields(n, path, lanesFields, func(key string, vn *yaml.Node, fpath string) {
		src.set("lanes."+key, fpath, w.pos(vn))
		var ok bool
		switch key {
		case "budget":
			budgetN = vn
			var rs rateSpec
			if rs, ok = d.rate(vn, fpath); ok {
				switch {
				case rs.limit.Rate == admit.Inf:
					w.fail(vn, fpath, "the budget of lanes cannot be unlimited")
					ok = false
				case rs.limit.Rate == 0:
					w.fail(vn, fpath, "the budget of lanes cannot be zero")
					ok = false
				default:
					b := rs.limit
					l.Budget = &b
				}
			}
		case "concurrency":
			concN = vn
			l.Concurrency, ok = w.integer(vn, fpath, 1, maxExact)
		case "lane_key":
			l.LaneKey, ok = w.nonEmpty(vn, fpath)
		case "shares":
			sharesN = vn
			l.Lanes, ok = d.shares(vn, fpath, src)
		case "borrow":
			var s string
			if s, ok = w.str(vn, fpath); ok {
				switch strings.ToLower(strings.TrimSpace(s)) {
				case "up":
					l.Borrow = fair.BorrowUp
				case "any":
					l.Borrow = fair.BorrowAny
				case "none":
					l.Borrow = fair.BorrowNone
				default:
					w.fail(vn, fpath, "unknown borrowing %q (want up, any or none)", truncate(s))
					ok = false
				}
			}
		case "default_lane":
			l.DefaultLane, ok = w.nonEmpty(vn, fpath)
		case "reserve":
			l.Reserve, ok = w.fraction(vn, fpath)
		}
		good = good && ok
	}) {
		return nil, false
	}
	switch {
	case budgetN != nil && concN != nil:
		w.fail(concN, keyPath(path, "concurrency"), "give lanes a budget (a rate) or concurrency (slots), not both")
		good = false
	case budgetN == nil && concN == nil:
		w.fail(r, path, "lanes need a budget (a rate, 100/s) or concurrency (slots in flight) to share")
		good = false
	}
	if sharesN == nil {
		w.fail(r, path, "lanes need shares: the lanes, highest priority first, and their shares (critical: 50%%)")
		good = false
	}
	if !good {
		return nil, false
	}
	return l, true
}

// shares decodes the lanes' shares: a mapping from lane names, highest
// priority first, to percentages adding up to 100% ("50%", "12.5%") or to
// weights (whole numbers).
func (d *decoder) shares(n *yaml.Node, path string, src *source) ([]fair.Lane, bool) {
	w := d.w
	var (
		lanes         []fair.Lane
		good          = true
		pct, weight   int
		sum           int64
		firstN, lastN *yaml.Node
	)
	if !w.mapping(n, path, func(name string, kn, vn *yaml.Node) {
		sp := keyPath(path, name)
		src.set("lanes.shares:"+name, sp, w.pos(kn))
		if firstN == nil {
			firstN = kn
		}
		lastN = kn
		if name == "" {
			w.fail(kn, sp, "a lane needs a name")
			good = false
			return
		}
		sn, ok := w.scalar(vn, sp, "a share (50%, or a weight)")
		if !ok {
			good = false
			return
		}
		var share int64
		if t := strings.TrimSpace(sn.Value); sn.ShortTag() == tagStr && strings.HasSuffix(t, "%") {
			bp, ok := parsePercent(t)
			if !ok || bp == 0 || bp > 10000 {
				w.fail(sn, sp, "want a percentage above 0 and at most 100%% with at most two decimals (50%%, 12.5%%), got %q", truncate(sn.Value))
				good = false
				return
			}
			pct++
			share = bp
		} else {
			if share, ok = w.integer(vn, sp, 1, lanelimits.MaxShare); !ok {
				good = false
				return
			}
			weight++
		}
		if pct > 0 && weight > 0 {
			w.fail(sn, sp, "give every share as a percentage (50%%) or every share as a weight (a whole number), not both")
			good = false
			return
		}
		sum += share
		lanes = append(lanes, fair.Lane{Name: name, Share: share})
	}) {
		return nil, false
	}
	switch {
	case !good:
		return nil, false
	case len(lanes) == 0:
		w.fail(w.resolve(n, path), path, "no lanes")
		return nil, false
	case len(lanes) > lanelimits.MaxLanes:
		w.fail(lastN, path, "%d lanes, the most is %d", len(lanes), lanelimits.MaxLanes)
		return nil, false
	case pct > 0 && sum != 10000:
		w.fail(firstN, path, "the shares add up to %s, want 100%% (or give weights: whole numbers without %%)", percentString(sum))
		return nil, false
	}
	return lanes, true
}

// percentString writes basis points as a percentage.
func percentString(bp int64) string {
	s := strconv.AppendInt(nil, bp/100, 10)
	if f := bp % 100; f != 0 {
		s = append(s, '.', byte('0'+f/10))
		if f%10 != 0 {
			s = append(s, byte('0'+f%10))
		}
	}
	return string(append(s, '%'))
}
