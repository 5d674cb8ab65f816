// Package enginehook reaches into a policy engine from admit serve
// without a method on policy.Engine's public surface: the state of its
// layers, for the status page and metrics (concurrency in flight and
// waiting, adaptive limits' current values, failure policies' state;
// Layers), and its prefetching limiters, for their metrics and the count
// of live instances (Prefetch, SetInstances). Package policy sets these
// hooks when it is linked in. PrefetchMetrics describes the metrics of a
// prefetching limiter's counts once, for admit serve and for promlimit's
// Observer.Watch.
package enginehook

// Layers calls visit with the state of each layer of engine (a
// *policy.Engine; nothing for a closed one or any other value), those of
// inline limits included, in no particular order. It reads each layer's
// state under that layer's locks, one layer at a time. It is set by
// package policy when it is linked in, and nil before.
var Layers func(engine any, visit func(*Layer))

// Layer is the state of one layer of an engine. The Layer given to visit
// is reused: copy what is kept.
type Layer struct {
	// Label is the layer's name as in Decision.Rule: rule[/tier][/kind],
	// or domain/override/limit for inline limits.
	Label string
	// Kind is "rate", "quota", "concurrency", "adaptive_rate",
	// "adaptive_concurrency", "lanes" or "lanes_concurrency".
	Kind string
	// Shared says the layer is kept in a shared store (Redis), behind a
	// failure policy.
	Shared bool
	// Rate, Burst and Period are the layer's configured limit (the
	// initial one of an adaptive layer): Rate events per Period, or Rate
	// slots of concurrency.
	Rate, Burst int64
	PeriodNanos int64
	// Text is the layer's limit as a policy file writes it, where Rate,
	// Burst and PeriodNanos cannot say it: a quota's calendar period,
	// time zone and first day of the week ("1000/day (Europe/Paris)");
	// "" for the other kinds.
	Text string

	// Slots says InFlight and Waiting are known: for concurrency kept in
	// memory, adaptive concurrency and concurrency lanes, all of them;
	// for concurrency kept in a shared store (Shared), this instance's
	// (the slots its grants hold: redisstore counts them locally, see
	// internal/leases.Tally, plus those of its fallback).
	Slots    bool
	InFlight int64
	Waiting  int64

	// Keys is the number of keys with a limiter of their own (adaptive
	// and lanes layers); Current summarizes their current limits (events
	// per Period for adaptive rates, slots for adaptive concurrency).
	Keys    int
	Current Summary
	// Floor is the lowest an adaptive layer's limits may go (its Min), in
	// Current's unit.
	Floor float64

	// Guarded says the layer has a failure policy whose state follows
	// (a shared rate or quota: compose.Guard).
	Guarded bool
	// Fallback is true while the failure policy decides instead of the
	// store (the breaker open, or the last calls failed).
	Fallback bool
	// Failures and Timeouts count the store's failed calls since the
	// layer's limiter was built.
	Failures, Timeouts int64
}

// Summary is a bounded summary of many values: their count, minimum,
// median and maximum. The zero Summary has no values.
type Summary struct {
	N                int
	Min, Median, Max float64
}

// SlotCounter is what a store's concurrency limiter implements so that
// Layers can read its slots in use and its callers waiting, over all
// keys: internal/stores' local slots do, and redisstore's counted ones
// (internal/leases.Countable) for the slots held through this instance.
type SlotCounter interface {
	SlotCounts() (inFlight int64, waiting int64)
}
