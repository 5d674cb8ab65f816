package promlimit

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/adaptivehook"
	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/prefetch"
	"github.com/prometheus/client_golang/prometheus"
)

// Watch makes the Observer report, at each scrape, the state of the
// limiter v under the label limiter=name: how many callers wait for it and
// how long they waited, the slots held, its adaptive limit, its failure
// policy's counts, or its prefetching counts, in the metrics
// <namespace>_limiter_*, as Observer lists them. (The "limiter_" keeps
// them apart from admit serve's metrics by rule, such as
// admit_adaptive_limit{rule,stat}, which share its registry.) v is
// one of *admit.Pacer, *concurrency.Limiter, *fair.Queue, *fair.SlotLanes,
// *adaptive.Gradient, *adaptive.AIMD, *compose.Guard and
// *prefetch.Limiter. The limiter is read by its Stats (for an AIMD, its
// Limit) when the registry is scraped, never on its own calls, so watching
// costs its decisions nothing.
//
// A name is watched once: to watch another limiter under it, stop watching
// it first. Watch(name, nil) stops watching name, and the series of name
// go at the next scrape; the Observer keeps a watched limiter (and its
// memory) until then. The name is a label value as the limiters' names
// are (see Observer): invalid UTF-8 becomes U+FFFD, and a name longer
// than 256 bytes, the name "other", and the names watched beyond
// Config.MaxSeries (counting those watched now) have no series of their
// own: their limiters are added up under limiter="other" (all but
// <namespace>_limiter_adaptive_limit, whose values do not add up).
//
// The error wraps admit.ErrInvalidConfig, and nothing changes, for an
// empty name, a name watched already (or one whose label is that of a
// name watched already), a v of another type or a nil pointer, and
// Watch(name, nil) of a name that is not watched. Watch on a nil or zero
// Observer checks its arguments and then records nothing, as the
// Observer's other methods do. Watch is safe for concurrent use, with
// scrapes too.
func (o *Observer) Watch(name string, v any) error {
	if name == "" {
		return invalid("Watch: empty name: the name is the limiter label of the watched limiter's series")
	}
	if v == nil {
		if o == nil || o.watch == nil {
			return nil
		}
		return o.watch.remove(name)
	}
	read, err := reader(v)
	if err != nil {
		return invalid("Watch(%s): %v", shown(name), err)
	}
	if o == nil || o.watch == nil {
		return nil
	}
	return o.watch.add(name, read)
}

// shown returns name quoted for an error message, cut after 64 bytes.
func shown(name string) string {
	if len(name) > 64 {
		return fmt.Sprintf("%q...", name[:64])
	}
	return fmt.Sprintf("%q", name)
}

// The metrics of the watched limiters, indexes of watcher.metrics.
const (
	wWaiting = iota
	wInFlight
	wWaits
	wWaitSeconds
	wAdaptive // labelled stat too
	wGuardActive
	wGuardFailures
	wGuardTimeouts
	wGuardDecisions
	wGuardProbes
	wPrefetch // the first of enginehook.PrefetchMetrics
)

// watchMetric is a metric of the watched limiters.
type watchMetric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

// emitFunc receives a value of a watched limiter: of metric m (a w*
// constant), its stat label (wAdaptive only), and the value.
type emitFunc func(m int, stat string, v float64)

// watched is a limiter an Observer watches.
type watched struct {
	label string // its limiter label: "other" unless own
	own   bool   // it has series of its own
	read  func(emitFunc)
}

// watcher is the collector of the limiters an Observer watches. Scrapes
// read list, an immutable slice that Watch replaces under mu.
type watcher struct {
	metrics []watchMetric
	max     int // the most names with series of their own

	mu     sync.Mutex
	byName map[string]*watched
	labels map[string]bool // the labels of the own names
	list   atomic.Pointer[[]*watched]
}

// newWatcher returns the collector of the watched limiters of an Observer
// of options o.
func newWatcher(o *options) *watcher {
	w := &watcher{max: o.maxSeries, byName: map[string]*watched{}, labels: map[string]bool{}}
	w.list.Store(&[]*watched{})
	add := func(name, help string, typ prometheus.ValueType, labels ...string) {
		fq := prometheus.BuildFQName(o.namespace, "limiter", name)
		d := prometheus.NewDesc(fq, help, append([]string{"limiter"}, labels...), o.constLabels)
		w.metrics = append(w.metrics, watchMetric{d, typ})
	}
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	add("waiting", "Callers waiting now for a watched limiter (Observer.Watch): its queue depth.", g)
	add("in_flight", "Slots held now at a watched limiter.", g)
	add("waits_total", "Callers that waited for a watched limiter and are done waiting, admitted or not (a caller decided at once did not wait).", c)
	add("wait_seconds_total", "Seconds the callers counted in _waits_total waited, in all, by the limiter's clock: the rate of this over the rate of _waits_total is the mean wait.", c)
	add("adaptive_limit", "The current limit of a watched adaptive limiter (events per second for an AIMD, slots for a Gradient; stat=\"current\"), and its bounds (stat=\"floor\" and \"ceiling\").", g, "stat")
	add("guard_active", "1 while a watched failure policy (compose.Guard) decides instead of its store, 0 otherwise.", g)
	add("guard_failures_total", "Calls of a watched failure policy's store that failed: timeouts and errors that are failures.", c)
	add("guard_timeouts_total", "Of the failures of a watched failure policy's store, the timeouts.", c)
	add("guard_policy_decisions_total", "Requests a watched failure policy decided instead of its store, after a failure or under an open breaker.", c)
	add("guard_probes_total", "Calls of its store that a watched failure policy's open breaker let through to find out whether the store was back.", c)
	for _, m := range enginehook.PrefetchMetrics {
		typ := g
		if m.Counter {
			typ = c
		}
		add("prefetch_"+m.Name, m.Help, typ)
	}
	return w
}

// add watches the limiter read reads under name.
func (w *watcher) add(name string, read func(emitFunc)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byName[name]; ok {
		return invalid("Watch(%s): a limiter is watched under this name already (Watch(name, nil) stops watching it)", shown(name))
	}
	e := &watched{label: other, read: read}
	if label := labelValue(name); fits(name) && label != other && len(w.labels) < w.max {
		if w.labels[label] {
			return invalid("Watch(%s): its label %s, once made valid UTF-8, is that of a name watched already", shown(name), shown(label))
		}
		e.label, e.own = label, true
		w.labels[label] = true
	}
	w.byName[name] = e
	w.publish()
	return nil
}

// remove stops watching name.
func (w *watcher) remove(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.byName[name]
	if !ok {
		return invalid("Watch(%s, nil): no limiter is watched under this name", shown(name))
	}
	delete(w.byName, name)
	if e.own {
		delete(w.labels, e.label)
	}
	w.publish()
	return nil
}

// publish makes the watched limiters those scrapes read. It requires w.mu.
func (w *watcher) publish() {
	list := slices.Collect(maps.Values(w.byName))
	w.list.Store(&list)
}

// Describe sends the descriptions of the watched limiters' metrics.
func (w *watcher) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range w.metrics {
		ch <- m.desc
	}
}

// Collect reads each watched limiter and sends its metrics; those without
// series of their own are added up under limiter="other".
func (w *watcher) Collect(ch chan<- prometheus.Metric) {
	var others map[int]float64
	for _, e := range *w.list.Load() {
		if e.own {
			e.read(func(m int, stat string, v float64) { w.send(ch, m, v, e.label, stat) })
			continue
		}
		if others == nil {
			others = map[int]float64{}
		}
		e.read(func(m int, _ string, v float64) {
			if m != wAdaptive {
				others[m] += v
			}
		})
	}
	for m, v := range others {
		w.send(ch, m, v, other, "")
	}
}

// send sends the value v of metric m for a limiter label (and a stat).
func (w *watcher) send(ch chan<- prometheus.Metric, m int, v float64, label, stat string) {
	labels := []string{label}
	if m == wAdaptive {
		labels = append(labels, stat)
	}
	if mt, err := prometheus.NewConstMetric(w.metrics[m].desc, w.metrics[m].typ, v, labels...); err == nil {
		ch <- mt
	}
}

// supported names the types Watch takes, for its errors.
const supported = "*admit.Pacer, *concurrency.Limiter, *fair.Queue, *fair.SlotLanes, *adaptive.Gradient, *adaptive.AIMD, *compose.Guard or *prefetch.Limiter"

// reader returns the function that reads the state of the limiter v at a
// scrape, or an error if v is not a limiter Watch takes or a nil one.
func reader(v any) (func(emitFunc), error) {
	if isNil(v) {
		return nil, fmt.Errorf("a nil %T: want a limiter, a %s (nil alone stops watching the name)", v, supported)
	}
	switch l := v.(type) {
	case *admit.Pacer:
		return func(emit emitFunc) {
			s := l.Stats()
			waits(emit, s.Waiting, s.Waits, s.Waited)
		}, nil
	case *concurrency.Limiter:
		return slots(func() queueStats {
			s := l.Stats()
			return queueStats{s.InFlight, s.Waiting, s.Waits, s.Waited}
		}), nil
	case *fair.Queue:
		return slots(func() queueStats {
			s := l.Stats()
			return queueStats{s.InFlight, s.Waiting, s.Waits, s.Waited}
		}), nil
	case *fair.SlotLanes:
		return func(emit emitFunc) {
			var held int64
			for _, s := range l.Stats() {
				held += s.Used + s.Borrowed
			}
			emit(wInFlight, "", float64(held))
		}, nil
	case *adaptive.Gradient:
		return func(emit emitFunc) {
			s := l.Stats()
			emit(wInFlight, "", float64(s.InFlight))
			waits(emit, s.Waiting, s.Waits, s.Waited)
			limits(emit, float64(s.Limit), float64(s.Min), float64(s.Max))
		}, nil
	case *adaptive.AIMD:
		return aimdReader(l), nil
	case *compose.Guard:
		return func(emit emitFunc) {
			s := l.Stats()
			active := 0.0
			if s.Active {
				active = 1
			}
			emit(wGuardActive, "", active)
			emit(wGuardFailures, "", float64(s.Failures))
			emit(wGuardTimeouts, "", float64(s.Timeouts))
			emit(wGuardDecisions, "", float64(s.Decided))
			emit(wGuardProbes, "", float64(s.Probes))
		}, nil
	case *prefetch.Limiter:
		return func(emit emitFunc) {
			s := l.Stats()
			for i, m := range enginehook.PrefetchMetrics {
				emit(wPrefetch+i, "", m.Value(&s))
			}
		}, nil
	}
	return nil, fmt.Errorf("cannot watch a %T: want a %s", v, supported)
}

// aimdReader reads an AIMD's rate and bounds, in events per second.
func aimdReader(a *adaptive.AIMD) func(emitFunc) {
	var lo, hi int64
	if adaptivehook.AIMDBounds != nil {
		lo, hi, _ = adaptivehook.AIMDBounds(a)
	}
	return func(emit emitFunc) {
		l := a.Limit()
		if l.Period <= 0 {
			return
		}
		perSecond := float64(time.Second) / float64(l.Period)
		limits(emit, float64(l.Rate)*perSecond, float64(lo)*perSecond, float64(hi)*perSecond)
	}
}

// queueStats are what the Stats of a limiter of slots with a queue tell.
type queueStats struct {
	inFlight int64
	waiting  int
	waits    uint64
	waited   time.Duration
}

// slots returns the reader of a limiter of slots with a queue, whose
// state stats reads.
func slots(stats func() queueStats) func(emitFunc) {
	return func(emit emitFunc) {
		s := stats()
		emit(wInFlight, "", float64(s.inFlight))
		waits(emit, s.waiting, s.waits, s.waited)
	}
}

// waits emits a limiter's callers waiting now, and those done waiting
// with the time they waited.
func waits(emit emitFunc, waiting int, n uint64, waited time.Duration) {
	emit(wWaiting, "", float64(waiting))
	emit(wWaits, "", float64(n))
	emit(wWaitSeconds, "", waited.Seconds())
}

// limits emits an adaptive limit and its bounds.
func limits(emit emitFunc, current, floor, ceiling float64) {
	emit(wAdaptive, "current", current)
	emit(wAdaptive, "floor", floor)
	emit(wAdaptive, "ceiling", ceiling)
}
