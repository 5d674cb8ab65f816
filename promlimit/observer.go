package promlimit

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/admit-go/admit"
	"github.com/prometheus/client_golang/prometheus"
)

// Observer is an admit.Observer that records what limiters decide and do
// as Prometheus metrics. Give it to the limiters as the Observer of their
// Config (admit.Options.Observer). The metrics, named here with the
// default namespace (see Config.Namespace), are:
//
//	admit_decisions_total{limiter,rule,kind,decision}   counter (requests)
//	admit_store_duration_seconds{limiter,op}            histogram (seconds)
//	admit_store_errors_total{limiter,op}                counter (calls)
//	admit_store_keys_total{limiter,op}                  counter (keys)
//	admit_fallback_active{limiter}                      gauge
//	admit_fallback_changes_total{limiter}               counter (switches)
//	admit_keys_tracked{limiter}                         gauge (keys)
//	admit_evictions_total{limiter,reason}               counter (keys)
//	admit_delay_seconds{limiter,rule}                   histogram (seconds)
//
// and, for the limiters given to Watch, read from them at each scrape:
//
//	admit_limiter_waiting{limiter}                      gauge (callers waiting)
//	admit_limiter_in_flight{limiter}                    gauge (slots held)
//	admit_limiter_waits_total{limiter}                  counter (callers done waiting)
//	admit_limiter_wait_seconds_total{limiter}           counter (seconds they waited)
//	admit_limiter_adaptive_limit{limiter,stat}          gauge (events/s or slots)
//	admit_limiter_guard_active{limiter}                 gauge
//	admit_limiter_guard_failures_total{limiter}         counter (calls)
//	admit_limiter_guard_timeouts_total{limiter}         counter (calls)
//	admit_limiter_guard_policy_decisions_total{limiter} counter (requests)
//	admit_limiter_guard_probes_total{limiter}           counter (calls)
//	admit_limiter_prefetch_*{limiter}                   as admit serve's admit_prefetch_*
//
// A decision counts once in admit_decisions_total, whatever its cost (n),
// under its limiter (DecisionEvent.Limiter), its rule (Decision.Rule: the
// limiter, rule or layer that decided), its kind ("rate", "concurrency" or
// "quota") and decision "allowed" or "denied"; Config.KeyLabel adds its key.
// Each call to a remote store (Redis) is observed in
// admit_store_duration_seconds, whose _count counts the calls, and in
// admit_store_keys_total (the keys it decided on, so keys_total / _count is
// the mean batch of a pipeline); a failed one counts in
// admit_store_errors_total too. admit_fallback_active is 1 while the
// failure policy of the named limiter (compose.Guard) decides instead of
// its store, and 0 once the store is back; if several failure policies
// share a name, it is the number of them that are active.
// admit_fallback_changes_total counts the switches either way.
// admit_keys_tracked is the number of keys the limiter last reported
// holding state for, and admit_evictions_total counts the keys it forgot,
// by reason "idle" (back at full capacity: no decision changes) or
// "pressure" (at its cap of keys: a limit was loosened; raise the cap if
// this grows in normal operation). A series appears with the first event
// that concerns it: for admit_keys_tracked, the limiter's creation (the
// module's keyed, quota and concurrency limiters report 0 then, and follow
// their keys as they come), so that their growth can be watched before the
// cap. admit_delay_seconds observes the Delay of each admission made with
// one (the delay mode: admit.Request.MaxDelay, a policy rule's delay), by
// limiter and rule, never by key: its _count counts the requests delayed,
// its _sum the time they were held, and its buckets run from 1ms to 10m.
//
// A watched limiter has the series that its type has state for.
// admit_limiter_waiting is the callers waiting now (a Pacer's Len; those
// of a concurrency.Limiter, a fair.Queue or an adaptive.Gradient, over all
// keys); admit_limiter_waits_total counts the callers that waited and are
// done waiting, admitted or not, and admit_limiter_wait_seconds_total the
// time they waited in all, by the limiter's Clock (so
// rate(..._wait_seconds_total) / rate(..._waits_total) is the mean wait;
// a caller decided at once did not wait and is not counted).
// admit_limiter_in_flight is the slots held (of a concurrency.Limiter over
// all keys, a fair.Queue, the lanes of a fair.SlotLanes together, or a
// Gradient). admit_limiter_adaptive_limit is an adaptive limiter's current
// limit (stat="current": an AIMD's rate in events per second, a
// Gradient's limit in slots) and its bounds (stat="floor" and "ceiling",
// the Min and Max of its Config), so that a limit held at its floor shows.
// The admit_limiter_guard_ metrics are a compose.Guard's Stats: 1 while it
// is switched to its policy, and the counts of its store's failures and
// timeouts, of the requests its policy decided, and of its breaker's
// probes. The admit_limiter_prefetch_ metrics are a prefetch.Limiter's
// Stats, with the names and meanings of admit serve's admit_prefetch_
// metrics (blocks_total, taken_events_total, local_events_total,
// strict_requests_total, cached_denials_total, early_denials_total,
// held_events, unspent_events, refunded_events_total,
// dropped_events_total, keys).
//
// Label values are the limiters' names (and the names given to Watch),
// rules and operations as given, except that invalid UTF-8 is replaced by U+FFFD. So that they cannot
// grow without bound, each metric gives at most Config.MaxSeries label
// combinations a series of their own, and only to values of at most 256
// bytes. Any other combination is counted under "other" from its most
// specific label on: the decisions of a rule beyond the cap are counted
// under rule="other" of their limiter if that limiter has a series of its
// own, and under limiter="other", rule="other" if not (under Config.KeyLabel,
// a new key is counted under key="other" of its rule first). The memory an
// Observer holds is so bounded by the cap, whatever the limiters report.
//
// Once a label combination has been seen, each method costs a comparison
// with the combinations used lately (or, failing that, a map lookup) and
// the updates of the metrics, without an allocation, and without a lock
// but in FallbackChanged (once per switch): the metrics of each combination
// are resolved once and kept, so the hot path never calls WithLabelValues.
// A combination counted under "other" costs a few map lookups more.
//
// An Observer is also the prometheus.Collector of its metrics, which New
// registers; unregister it with the registry's Unregister. The zero
// Observer, and a nil *Observer, record nothing; create one with New. An
// Observer is safe for concurrent use. It starts no goroutine and needs no
// Close.
type Observer struct {
	// NopObserver gives a default to the methods that later versions of
	// admit.Observer may add, so that an Observer keeps satisfying it.
	admit.NopObserver

	keyLabel bool
	dec      *table[decKey, prometheus.Counter]
	store    *table[storeKey, *storeSeries]
	tracked  *table[limKey, prometheus.Gauge]
	evict    *table[limKey, *[2]prometheus.Counter]
	fallback *table[limKey, *fallbackSeries]
	delay    *table[storeKey, prometheus.Observer] // op: the rule
	watch    *watcher                              // the limiters given to Watch

	collectors []prometheus.Collector
}

var (
	_ admit.Observer       = (*Observer)(nil)
	_ prometheus.Collector = (*Observer)(nil)
)

// New returns an Observer configured by cfg (the zero Config gives the
// defaults) whose metrics are registered on reg. It never uses the global
// registry unless it is given it (reg = prometheus.DefaultRegisterer).
// The error wraps admit.ErrInvalidConfig (reg is nil: the message says
// "promlimit: nil prometheus.Registerer"; or a field of cfg out of its
// domain), or else the registry's error, with a message that says
// "promlimit: cannot register the metrics": a
// prometheus.AlreadyRegisteredError when an Observer of the same namespace
// and const labels is registered on reg already (share that one, or tell
// them apart with Config.Namespace or Config.ConstLabels).
func New(reg prometheus.Registerer, cfg Config) (*Observer, error) {
	if isNil(reg) {
		return nil, fmt.Errorf("%w: promlimit: nil prometheus.Registerer: New needs the registry to register the metrics on (prometheus.NewRegistry(), or prometheus.DefaultRegisterer for the global one)", admit.ErrInvalidConfig)
	}
	o, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	obs := newObserver(&o)
	if err := reg.Register(obs); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
			return nil, fmt.Errorf("%s: an Observer with namespace %q and the same const labels is registered on this registry already (share it, or set Config.Namespace or Config.ConstLabels): %w", cannotRegister, o.namespace, err)
		}
		return nil, fmt.Errorf("%s (namespace %q): %w", cannotRegister, o.namespace, err)
	}
	return obs, nil
}

// cannotRegister begins the errors of a registry that refuses the metrics.
const cannotRegister = "promlimit: cannot register the metrics"

// newObserver builds an Observer from valid options.
func newObserver(o *options) *Observer {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: o.namespace, Name: name, Help: help, ConstLabels: o.constLabels}
	}
	decLabels := decisionLabels(o.keyLabel)
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts(opts("decisions_total",
		"Requests decided by admit limiters, by limiter, rule (the limiter, rule or layer that decided), kind of limit (rate, concurrency, quota) and decision (allowed, denied); each request counts once whatever its cost.")),
		decLabels)
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace:   o.namespace,
		Name:        "store_duration_seconds",
		Help:        "Duration in seconds of the calls of admit limiters to a remote store (Redis), failed or not; _count counts the calls.",
		ConstLabels: o.constLabels,
		Buckets:     o.buckets,
	}, []string{"limiter", "op"})
	storeErrors := prometheus.NewCounterVec(prometheus.CounterOpts(opts("store_errors_total",
		"Calls of admit limiters to a remote store (Redis) that failed.")),
		[]string{"limiter", "op"})
	storeKeys := prometheus.NewCounterVec(prometheus.CounterOpts(opts("store_keys_total",
		"Keys decided on by the calls of admit limiters to a remote store (Redis); divided by admit_store_duration_seconds_count, the mean keys per call.")),
		[]string{"limiter", "op"})
	active := prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("fallback_active",
		"1 while the failure policy of the limiter decides instead of its store, 0 once the store is back (the number of such policies if several share the name).")),
		[]string{"limiter"})
	changes := prometheus.NewCounterVec(prometheus.CounterOpts(opts("fallback_changes_total",
		"Switches of failure policies to deciding without their store and back.")),
		[]string{"limiter"})
	tracked := prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("keys_tracked",
		"Keys the limiter holds state for, as it last reported.")),
		[]string{"limiter"})
	evictions := prometheus.NewCounterVec(prometheus.CounterOpts(opts("evictions_total",
		"Keys forgotten by limiters: idle (back at full capacity, no decision changes) or pressure (at the cap of keys, a limit was loosened).")),
		[]string{"limiter", "reason"})
	delays := newDelays(o)
	watch := newWatcher(o)
	obs := &Observer{
		keyLabel:   o.keyLabel,
		watch:      watch,
		collectors: []prometheus.Collector{decisions, duration, storeErrors, storeKeys, active, changes, tracked, evictions, delays, watch},
	}
	obs.delay = delayTable(delays, o.maxSeries)
	levels := 2
	if o.keyLabel {
		levels = 3
	}
	obs.dec = newTable(levels, o.maxSeries, func(k decKey) prometheus.Counter {
		outcome := "denied"
		if k.allowed {
			outcome = "allowed"
		}
		values := []string{labelValue(k.limiter), labelValue(k.rule), k.kind.String(), outcome}
		if o.keyLabel {
			values = append(values, labelValue(k.key))
		}
		return decisions.WithLabelValues(values...)
	})
	obs.store = newTable(2, o.maxSeries, func(k storeKey) *storeSeries {
		l, op := labelValue(k.limiter), labelValue(k.op)
		return &storeSeries{
			duration: duration.WithLabelValues(l, op),
			errors:   storeErrors.WithLabelValues(l, op),
			keys:     storeKeys.WithLabelValues(l, op),
		}
	})
	obs.tracked = newTable(1, o.maxSeries, func(k limKey) prometheus.Gauge {
		return tracked.WithLabelValues(labelValue(k.limiter))
	})
	obs.evict = newTable(1, o.maxSeries, func(k limKey) *[2]prometheus.Counter {
		l := labelValue(k.limiter)
		return &[2]prometheus.Counter{
			evictions.WithLabelValues(l, admit.EvictIdle.String()),
			evictions.WithLabelValues(l, admit.EvictPressure.String()),
		}
	})
	obs.fallback = newTable(1, o.maxSeries, func(k limKey) *fallbackSeries {
		l := labelValue(k.limiter)
		return &fallbackSeries{active: active.WithLabelValues(l), changes: changes.WithLabelValues(l)}
	})
	return obs
}

// Decided counts a decision in admit_decisions_total, and observes its
// Delay, if it has one, in admit_delay_seconds.
func (o *Observer) Decided(e admit.DecisionEvent) {
	if o == nil || o.dec == nil {
		return
	}
	k := decKey{limiter: e.Limiter, rule: e.Decision.Rule, kind: e.Decision.Kind, allowed: e.Decision.Allowed}
	if o.keyLabel {
		k.key = e.Key
	}
	o.dec.get(k).Inc()
	if e.Decision.Delay > 0 {
		o.delay.get(storeKey{limiter: e.Limiter, op: e.Decision.Rule}).Observe(e.Decision.Delay.Seconds())
	}
}

// decisionLabels returns the labels of admit_decisions_total.
func decisionLabels(keyLabel bool) []string {
	if keyLabel {
		return []string{"limiter", "rule", "kind", "decision", "key"}
	}
	return []string{"limiter", "rule", "kind", "decision"}
}

// newDelays returns admit_delay_seconds.
func newDelays(o *options) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace:   o.namespace,
		Name:        "delay_seconds",
		Help:        "Delay in seconds of the requests admitted with one (the delay mode: the wait for their slot), by limiter and rule; _count counts the requests delayed.",
		ConstLabels: o.constLabels,
		Buckets:     delayBuckets,
	}, []string{"limiter", "rule"})
}

// delayTable returns the series of admit_delay_seconds, by limiter and rule
// (storeKey's op).
func delayTable(delays *prometheus.HistogramVec, maxSeries int) *table[storeKey, prometheus.Observer] {
	return newTable(2, maxSeries, func(k storeKey) prometheus.Observer {
		return delays.WithLabelValues(labelValue(k.limiter), labelValue(k.op))
	})
}

// delayBuckets are the buckets of admit_delay_seconds: 1ms to 10 minutes,
// the longest delay a policy allows.
var delayBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// StoreCalled observes a call to a remote store in
// admit_store_duration_seconds and admit_store_keys_total, and counts it in
// admit_store_errors_total if it failed. A negative Duration counts as 0,
// a negative number of Keys as none.
func (o *Observer) StoreCalled(e admit.StoreEvent) {
	if o == nil || o.store == nil {
		return
	}
	s := o.store.get(storeKey{limiter: e.Limiter, op: e.Op})
	if e.Keys > 0 {
		s.keys.Add(float64(e.Keys))
	}
	if e.Err != nil {
		s.errors.Inc()
	}
	s.duration.Observe(max(e.Duration.Seconds(), 0))
}

// Evicted adds the keys forgotten to admit_evictions_total. An event of no
// keys (or a negative number) changes nothing.
func (o *Observer) Evicted(e admit.EvictionEvent) {
	if o == nil || o.evict == nil || e.Keys <= 0 {
		return
	}
	c := o.evict.get(limKey{limiter: e.Limiter})
	i := 1
	if e.Reason == admit.EvictIdle {
		i = 0
	}
	c[i].Add(float64(e.Keys))
}

// Tracked sets admit_keys_tracked of the limiter to keys.
func (o *Observer) Tracked(limiter string, keys int) {
	if o == nil || o.tracked == nil {
		return
	}
	o.tracked.get(limKey{limiter: limiter}).Set(float64(keys))
}

// FallbackChanged counts a switch in admit_fallback_changes_total and sets
// admit_fallback_active: up by one when the policy starts deciding
// (Active), down by one, but not below 0, when it stops.
func (o *Observer) FallbackChanged(e admit.FallbackEvent) {
	if o == nil || o.fallback == nil {
		return
	}
	o.fallback.get(limKey{limiter: e.Limiter}).change(e.Active)
}

// Describe sends the descriptions of the Observer's metrics to ch, for
// prometheus.Collector.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	if o == nil {
		return
	}
	for _, c := range o.collectors {
		c.Describe(ch)
	}
}

// Collect sends the Observer's metrics to ch, for prometheus.Collector.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	if o == nil {
		return
	}
	for _, c := range o.collectors {
		c.Collect(ch)
	}
}

// storeSeries are the metrics of one limiter and operation of a store.
type storeSeries struct {
	duration prometheus.Observer
	errors   prometheus.Counter
	keys     prometheus.Counter
}

// fallbackSeries are the fallback metrics of one limiter name, with the
// number of its failure policies that are active.
type fallbackSeries struct {
	active  prometheus.Gauge
	changes prometheus.Counter
	mu      sync.Mutex // orders the updates of n and active
	n       int
}

func (f *fallbackSeries) change(active bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if active {
		f.n++
	} else if f.n > 0 {
		f.n--
	}
	f.active.Set(float64(f.n))
	f.changes.Inc()
}

// decKey is the label values of a series of admit_decisions_total (key is
// empty unless Config.KeyLabel).
type decKey struct {
	limiter, rule, key string
	kind               admit.Kind
	allowed            bool
}

func (k decKey) fold(level int) decKey {
	if level <= 0 {
		k.limiter = other
	}
	if level <= 1 {
		k.rule = other
	}
	if level <= 2 {
		k.key = other
	}
	return k
}

func (k decKey) group(level int) decKey {
	k = k.fold(level)
	k.kind, k.allowed = 0, false
	return k
}

func (k decKey) fits() bool { return fits(k.limiter) && fits(k.rule) && fits(k.key) }

func (k decKey) quick() uint64 {
	return mix(quick(k.limiter), quick(k.rule), quick(k.key)^uint64(k.kind)<<56^uint64(b2u(k.allowed))<<63)
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (k decKey) clone() decKey {
	k.limiter, k.rule, k.key = clone(k.limiter), clone(k.rule), clone(k.key)
	return k
}

// storeKey is the label values of the store metrics.
type storeKey struct{ limiter, op string }

func (k storeKey) fold(level int) storeKey {
	if level <= 0 {
		k.limiter = other
	}
	if level <= 1 {
		k.op = other
	}
	return k
}

func (k storeKey) group(level int) storeKey { return k.fold(level) }
func (k storeKey) fits() bool               { return fits(k.limiter) && fits(k.op) }
func (k storeKey) clone() storeKey          { return storeKey{clone(k.limiter), clone(k.op)} }
func (k storeKey) quick() uint64            { return mix(quick(k.limiter), quick(k.op), 0) }

// limKey is the label value of the metrics labelled by limiter only.
type limKey struct{ limiter string }

func (k limKey) fold(int) limKey  { return limKey{other} }
func (k limKey) group(int) limKey { return limKey{other} }
func (k limKey) fits() bool       { return fits(k.limiter) }
func (k limKey) clone() limKey    { return limKey{clone(k.limiter)} }
func (k limKey) quick() uint64    { return quick(k.limiter) }

// clone copies s, but not the label value "other" or the empty string.
func clone(s string) string {
	if s == "" || s == other {
		return s
	}
	return strings.Clone(s)
}

// isNil reports whether r is nil or holds a nil pointer (such as a nil
// *prometheus.Registry, on which Register would panic), map, func,
// channel or slice.
func isNil(r any) bool {
	if r == nil {
		return true
	}
	switch v := reflect.ValueOf(r); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
