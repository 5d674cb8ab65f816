// Package status is admit serve's status page: what its engine decided
// lately, by rule (decisions per second, the share denied, five minutes
// of sparkline), the keys denied most often (a space-saving sketch of
// fixed size), and the state of the layers and the store, served as JSON
// (/status.json) and as a page that reads it (/status; assets/, embedded).
// It is core: the standard library and admit only; server wires it in
// and exports its counts to Prometheus.
package status

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
)

// MaxRules is the most rules a Recorder keeps series for; the decisions
// of rules beyond it count under the rule "other".
const MaxRules = 256

// TopKeys is the number of counters of the sketch of denied keys.
const TopKeys = 256

// RemainingBounds are the upper bounds of the buckets of the remaining
// capacity of decisions, as a share of the burst (the last is +Inf).
var RemainingBounds = [...]float64{0, 0.1, 0.25, 0.5, 0.75, 1}

// Recorder is an admit.Observer that counts decisions by rule and by
// second, and denials by key in a sketch, then passes every event on to
// Next. It is safe for concurrent use, starts no goroutine, and its
// memory is bounded (MaxRules series, TopKeys counters) whatever it is
// told.
type Recorder struct {
	admit.NopObserver
	next  admit.Observer
	now   func() time.Time
	rules atomic.Pointer[map[string]*ruleStats]
	mu    sync.Mutex // serializes adding to rules
	keys  *sketch
	store series // 0: calls, 1: errors, 2: nanoseconds
}

// ruleStats is what a Recorder counts of one rule.
type ruleStats struct {
	name      string
	s         series // 0: allowed, 1: denied
	remaining [len(RemainingBounds) + 1]atomic.Uint64
	remSum    atomic.Uint64 // the shares, in millionths
}

// NewRecorder returns a Recorder passing events on to next (nil for
// none), reading the time from now (nil: time.Now).
func NewRecorder(next admit.Observer, now func() time.Time) *Recorder {
	if next == nil {
		next = admit.NopObserver{}
	}
	if now == nil {
		now = time.Now
	}
	r := &Recorder{next: next, now: now, keys: newSketch(TopKeys)}
	m := map[string]*ruleStats{}
	r.rules.Store(&m)
	return r
}

// rule returns the stats of name, adding them if new.
func (r *Recorder) rule(name string) *ruleStats {
	if rs := (*r.rules.Load())[name]; rs != nil {
		return rs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.rules.Load()
	if rs := old[name]; rs != nil {
		return rs
	}
	if len(old) >= MaxRules {
		name = "other"
		if rs := old[name]; rs != nil {
			return rs
		}
	}
	m := make(map[string]*ruleStats, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	rs := &ruleStats{name: name}
	m[name] = rs
	r.rules.Store(&m)
	return rs
}

// Decided counts d under its rule (Decision.Rule, or the limiter's name),
// and its key if denied, then passes it on.
func (r *Recorder) Decided(ev admit.DecisionEvent) {
	r.next.Decided(ev)
	name := ev.Decision.Rule
	if name == "" {
		name = ev.Limiter
	}
	rs := r.rule(name)
	sec := r.now().Unix()
	d := &ev.Decision
	if d.Allowed {
		rs.s.add(sec, 0, 1)
	} else {
		rs.s.add(sec, 1, 1)
		r.keys.add(name, ev.Key)
	}
	if b := d.Limit.Burst; b > 0 && d.Remaining >= 0 && d.Remaining != math.MaxInt64 {
		share := min(float64(d.Remaining)/float64(b), 1)
		i := 0
		for i < len(RemainingBounds) && share > RemainingBounds[i] {
			i++
		}
		rs.remaining[i].Add(1)
		rs.remSum.Add(uint64(share * 1e6))
	}
}

// StoreCalled counts the call, then passes it on.
func (r *Recorder) StoreCalled(ev admit.StoreEvent) {
	r.next.StoreCalled(ev)
	sec := r.now().Unix()
	r.store.add(sec, 0, 1)
	if ev.Err != nil {
		r.store.add(sec, 1, 1)
	}
	r.store.add(sec, 2, uint64(max(ev.Duration, 0)))
}

// Evicted passes ev on.
func (r *Recorder) Evicted(ev admit.EvictionEvent) { r.next.Evicted(ev) }

// Tracked passes the count on.
func (r *Recorder) Tracked(limiter string, keys int) { r.next.Tracked(limiter, keys) }

// FallbackChanged passes ev on.
func (r *Recorder) FallbackChanged(ev admit.FallbackEvent) { r.next.FallbackChanged(ev) }

// Remaining calls f with each rule's histogram of the remaining capacity
// of its decisions (cumulative counts by RemainingBounds, then +Inf) and
// the sum of the shares, for Prometheus.
func (r *Recorder) Remaining(f func(rule string, cum []uint64, sum float64)) {
	var cum [len(RemainingBounds) + 1]uint64
	for name, rs := range *r.rules.Load() {
		var n uint64
		for i := range rs.remaining {
			n += rs.remaining[i].Load()
			cum[i] = n
		}
		if n > 0 {
			f(name, cum[:], float64(rs.remSum.Load())/1e6)
		}
	}
}
