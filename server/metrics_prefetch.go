package server

import (
	"strings"

	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/prefetch"
	"github.com/prometheus/client_golang/prometheus"
)

// prefetchMetrics is the collector of the counts of the prefetching
// limiters of the engine in force (prefetch.Stats), one series per rule
// that prefetches (its label as in Decision.Rule: rule[/tier][/kind], or
// domain/override/limit for inline limits), read at each scrape:
//
//	admit_prefetch_blocks_total{rule}           counter (blocks taken from the store)
//	admit_prefetch_taken_events_total{rule}     counter (events those blocks held)
//	admit_prefetch_local_events_total{rule}     counter (events admitted from blocks)
//	admit_prefetch_strict_requests_total{rule}  counter (requests sent to the store as they were)
//	admit_prefetch_cached_denials_total{rule}   counter (denials answered from memory)
//	admit_prefetch_early_denials_total{rule}    counter (of those, denials the store would have admitted)
//	admit_prefetch_held_events{rule}            gauge (events the blocks hold now)
//	admit_prefetch_unspent_events{rule}         gauge (events blocks held and neither spent nor gave back, since the rule's limiter was built)
//	admit_prefetch_refunded_events_total{rule}  counter (refunded events given back into a block or to the store)
//	admit_prefetch_dropped_events_total{rule}   counter (refunded events dropped)
//	admit_prefetch_keys{rule}                   gauge (keys with local state)
//
// A rule whose definition changes at a reload starts its counts afresh.
// Should two limiters have one label (a rule named as an inline limit),
// the first has the series.
type prefetchMetrics struct {
	engine func() *policy.Engine
}

// prefetchMetric is one metric of prefetchMetrics: its description, type
// and value.
type prefetchMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*prefetch.Stats) float64
}

var prefetchDescs = func() []prefetchMetric {
	ms := make([]prefetchMetric, len(enginehook.PrefetchMetrics))
	for i, m := range enginehook.PrefetchMetrics {
		typ := prometheus.GaugeValue
		if m.Counter {
			typ = prometheus.CounterValue
		}
		ms[i] = prefetchMetric{prometheus.NewDesc("admit_prefetch_"+m.Name, m.Help, []string{"rule"}, nil), typ, m.Value}
	}
	return ms
}()

func (m *prefetchMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range prefetchDescs {
		ch <- d.desc
	}
}

func (m *prefetchMetrics) Collect(ch chan<- prometheus.Metric) {
	e := m.engine()
	if e == nil || enginehook.Prefetch == nil {
		return
	}
	seen := map[string]bool{}
	enginehook.Prefetch(e, func(label string, s prefetch.Stats) {
		label = strings.ToValidUTF8(label, "\uFFFD")
		if seen[label] {
			return
		}
		seen[label] = true
		for _, d := range prefetchDescs {
			if mt, err := prometheus.NewConstMetric(d.desc, d.typ, d.value(&s), label); err == nil {
				ch <- mt
			}
		}
	})
}
