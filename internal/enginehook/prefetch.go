package enginehook

import "github.com/admit-go/admit/prefetch"

// Prefetch calls visit with the counts of each prefetching limiter
// (package prefetch) of engine (a *policy.Engine; nothing for a closed
// one or any other value) and the label of its layer (rule[/tier][/kind],
// or domain/override/limit), for admit serve's metrics. It is set by
// package policy when it is linked in, and nil before.
var Prefetch func(engine any, visit func(label string, s prefetch.Stats))

// SetInstances tells each prefetching limiter of engine (a *policy.Engine)
// that n instances share its store (prefetch.Limiter.SetInstances), for
// admit serve's count of live instances. It is set by package policy when
// it is linked in, and nil before.
var SetInstances func(engine any, n int)

// PrefetchMetric is one metric of a prefetch.Limiter's counts, described
// once for admit serve (admit_prefetch_*{rule}) and promlimit's
// Observer.Watch (<namespace>_limiter_prefetch_*{limiter}).
type PrefetchMetric struct {
	Name    string // after the prefix: blocks_total, keys...
	Help    string
	Counter bool // a counter; else a gauge
	Value   func(*prefetch.Stats) float64
}

// PrefetchMetrics are the metrics of prefetch.Stats, in a fixed order.
var PrefetchMetrics = []PrefetchMetric{
	{"blocks_total", "Blocks of capacity taken from the shared store.", true, func(s *prefetch.Stats) float64 { return float64(s.Blocks) }},
	{"taken_events_total", "Events the blocks taken from the shared store held.", true, func(s *prefetch.Stats) float64 { return float64(s.Taken) }},
	{"local_events_total", "Events admitted from blocks, in memory.", true, func(s *prefetch.Stats) float64 { return float64(s.Local) }},
	{"strict_requests_total", "Requests sent to the shared store as they were (cold keys, per-call limits, requests larger than a block).", true, func(s *prefetch.Stats) float64 { return float64(s.Strict) }},
	{"cached_denials_total", "Denials answered from memory (a key the store denied until an instant).", true, func(s *prefetch.Stats) float64 { return float64(s.Cached) }},
	{"early_denials_total", "Denials answered from memory that the store would have admitted: while waiting for a block's worth to come back before asking the store again.", true, func(s *prefetch.Stats) float64 { return float64(s.Early) }},
	{"held_events", "Events this instance's blocks hold now: capacity other instances cannot have.", false, func(s *prefetch.Stats) float64 { return float64(s.Held) }},
	{"unspent_events", "Events blocks held and neither spent nor gave back (expired, dropped with their key), since the limiter was built.", false, func(s *prefetch.Stats) float64 { return float64(s.Unspent) }},
	{"refunded_events_total", "Refunded events given back into a block or to the store.", true, func(s *prefetch.Stats) float64 { return float64(s.Refunded) }},
	{"dropped_events_total", "Refunded events dropped (of GCRA or a bucket, not the latest admission of a key from a block).", true, func(s *prefetch.Stats) float64 { return float64(s.Dropped) }},
	{"keys", "Keys this instance keeps local state for.", false, func(s *prefetch.Stats) float64 { return float64(s.Keys) }},
}
