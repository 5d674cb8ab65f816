package policy

// Decoding of limits as written: rates, quotas, concurrency caps, and the limits of a rule or tier built from them.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admit-go/admit"
)

// rateSpec is a rate as written: the limit, and whether its text gave a
// burst.
type rateSpec struct {
	limit    admit.Limit
	hasBurst bool
}

func (d *decoder) rate(n *yaml.Node, path string) (rateSpec, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return rateSpec{}, false
	}
	l, err := ParseRate(s)
	if err != nil {
		d.w.fail(n, path, "%s", strings.Replace(err.Error(), admit.ErrInvalidLimit.Error(), "invalid rate", 1))
		return rateSpec{}, false
	}
	return rateSpec{l, strings.Contains(strings.ToLower(s), "burst")}, true
}

func (d *decoder) quota(n *yaml.Node, path string) (*Quota, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	q := &Quota{WeekStart: time.Monday}
	if r.Kind == yaml.ScalarNode && r.ShortTag() != tagNull {
		s, _ := w.str(n, path)
		lim, per, err := parseQuota(s)
		if err != nil {
			w.fail(n, path, "invalid quota %q: %v", truncate(s), err)
			return nil, false
		}
		q.Limit, q.Period = lim, per
		return q, true
	}
	good, hasLimit, hasPeriod := true, false, false
	w.fields(n, path, quotaFields, func(key string, vn *yaml.Node, fpath string) {
		var ok bool
		switch key {
		case "limit":
			hasLimit = true
			q.Limit, ok = w.integer(vn, fpath, 1, maxExact)
		case "period":
			hasPeriod = true
			var s string
			if s, ok = w.str(vn, fpath); ok {
				if q.Period, ok = quotaPeriods[strings.ToLower(strings.TrimSpace(s))]; !ok {
					w.fail(vn, fpath, "unknown period %q (want hour, day, week, month or year)", truncate(s))
				}
			}
		case "timezone":
			var s string
			if s, ok = w.nonEmpty(vn, fpath); ok {
				loc, err := time.LoadLocation(s)
				if err != nil || strings.ContainsAny(s, "\x00") {
					w.fail(vn, fpath, "unknown time zone %q", truncate(s))
					ok = false
				} else {
					q.Location = loc
				}
			}
		case "week_start":
			var s string
			if s, ok = w.str(vn, fpath); ok {
				if q.WeekStart, ok = parseWeekday(s); !ok {
					w.fail(vn, fpath, "unknown day %q (want monday ... sunday)", truncate(s))
				}
			}
		}
		good = good && ok
	})
	if good && (!hasLimit || !hasPeriod) {
		w.fail(r, path, "a quota needs limit and period (or write it as \"1000/day\")")
		good = false
	}
	if !good {
		return nil, false
	}
	return q, true
}

func parseWeekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	return 0, false
}

func (d *decoder) concurrency(n *yaml.Node, path string) (*Concurrency, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	if r.Kind == yaml.ScalarNode {
		m, ok := w.integer(n, path, 1, maxExact)
		if !ok {
			return nil, false
		}
		return &Concurrency{Max: m}, true
	}
	c := &Concurrency{}
	good, hasMax := true, false
	w.fields(n, path, concFields, func(key string, vn *yaml.Node, fpath string) {
		var ok bool
		switch key {
		case "max":
			hasMax = true
			c.Max, ok = w.integer(vn, fpath, 1, maxExact)
		case "lease":
			c.Lease, ok = w.duration(vn, fpath, time.Millisecond)
		}
		good = good && ok
	})
	if good && !hasMax {
		w.fail(r, path, "a concurrency cap needs max")
		good = false
	}
	if !good {
		return nil, false
	}
	return c, true
}

// limitsSpec is a rule's or tier's limits as written, with what was given
// (for tier inheritance and the checks of presence).
type limitsSpec struct {
	rate                 *rateSpec
	burst                *int64
	algorithm            *admit.Algorithm
	quota                *Quota
	concurrency          *Concurrency
	unlimited            *bool
	adaptiveConc         *AdaptiveConcurrency
	adaptiveRate         *AdaptiveRate
	lanes                *Lanes
	rateN, burstN, algoN *yaml.Node
	ratePath, burstPath  string
	algoPath             string
	// more are the rates after the first of a list (rate: [10/s, 300/min]),
	// items the positions of the list's items (nil for one rate).
	more  []rateSpec
	items []fieldSource
}

// maxRates is the most rates a rule or tier has (Limits.Rates and Rate).
const maxRates = 8

// field decodes one limits field; it reports whether key is one.
func (d *decoder) limitsField(s *limitsSpec, key string, vn *yaml.Node, fpath string) bool {
	w := d.w
	switch key {
	case "rate":
		s.rateN, s.ratePath = vn, fpath
		if rn := w.resolve(vn, fpath); rn != nil && rn.Kind == yaml.SequenceNode {
			d.rateList(s, rn, fpath)
		} else if r, ok := d.rate(vn, fpath); ok {
			s.rate = &r
		}
	case "burst":
		s.burstN, s.burstPath = vn, fpath
		if b, ok := w.integer(vn, fpath, 0, math.MaxInt64); ok {
			s.burst = &b
		}
	case "algorithm":
		s.algoN, s.algoPath = vn, fpath
		if a, ok := d.algorithm(vn, fpath); ok {
			s.algorithm = &a
		}
	case "quota":
		s.quota, _ = d.quota(vn, fpath)
	case "concurrency":
		s.concurrency, _ = d.concurrency(vn, fpath)
	case "unlimited":
		if b, ok := w.boolean(vn, fpath); ok {
			s.unlimited = &b
		}
	default:
		return false
	}
	return true
}

// rateList decodes a list of rates (rate: [10/s burst 20, 300/min]) into
// s: the first as its rate, the others as more. An empty list, more than
// maxRates and an item that is not a rate are errors, and leave s without
// a rate.
func (d *decoder) rateList(s *limitsSpec, n *yaml.Node, path string) {
	w := d.w
	if len(n.Content) == 0 || len(n.Content) > maxRates {
		w.fail(n, path, "a list of %d rates: give 1 to %d", len(n.Content), maxRates)
		return
	}
	var rates []rateSpec
	good := true
	w.list(n, path, false, func(i int, item *yaml.Node, ipath string) {
		s.items = append(s.items, fieldSource{ipath, w.pos(item)})
		r, ok := d.rate(item, ipath)
		good = good && ok
		rates = append(rates, r)
	})
	if good && len(rates) > 0 {
		s.rate, s.more = &rates[0], rates[1:]
	}
}

// setRateItems records in src the positions of the items of a list of
// rates of spec s, as fields field[0], field[1]... ("rate[1]").
func setRateItems(src *source, field string, s *limitsSpec) {
	for i, it := range s.items {
		src.set(fmt.Sprintf("%s[%d]", field, i), it.path, it.pos)
	}
}

// build turns a spec into Limits, checking burst against rate.
func (d *decoder) build(s *limitsSpec, alg admit.Algorithm) Limits {
	w := d.w
	var l Limits
	l.Algorithm = alg
	if s.algorithm != nil {
		l.Algorithm = *s.algorithm
	}
	if s.rate != nil {
		r := s.rate.limit
		l.Rate = &r
	}
	for _, m := range s.more {
		l.Rates = append(l.Rates, m.limit)
	}
	if s.burst != nil {
		switch {
		case s.items != nil:
			w.fail(s.burstN, s.burstPath, "burst with a list of rates: give each rate its burst in its text (rate: [10/s burst 20, 300/min])")
		case s.rate == nil:
			w.fail(s.burstN, s.burstPath, "burst without a rate")
		case s.rate.hasBurst:
			w.fail(s.burstN, s.burstPath, "burst given twice: in the rate %q and here", l.Rate.String())
		default:
			l.Rate.Burst = *s.burst
			if err := l.Rate.Validate(); err != nil {
				w.fail(s.burstN, s.burstPath, "burst %d with rate %v: %s", *s.burst, admit.Limit{Rate: l.Rate.Rate, Period: l.Rate.Period}, limitReason(err))
				l.Rate.Burst = l.Rate.Rate
			}
		}
	}
	l.Quota, l.Concurrency = s.quota, s.concurrency
	l.AdaptiveConcurrency, l.AdaptiveRate, l.Lanes = s.adaptiveConc, s.adaptiveRate, s.lanes
	if s.unlimited != nil {
		l.Unlimited = *s.unlimited
	}
	return l
}
