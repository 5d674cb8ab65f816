package admit

import "time"

// Observer receives what limiters decide and do, for metrics and logs. It is
// the one hook between admit's limiters and the outside world: package
// promlimit implements it for Prometheus, and a few lines implement it for
// any other system.
//
// The limiters call an Observer synchronously, on the request's goroutine,
// so its methods must be fast, must not block and must be safe for
// concurrent use. Implementations should embed NopObserver, so that methods
// added in later versions have a default and the implementation keeps
// compiling.
//
// The single-key limiters of this package do not call an Observer (their
// caller sees every decision already); the keyed, Redis, composed,
// concurrency and quota limiters take one as an option.
type Observer interface {
	// Decided is called after each decision.
	Decided(DecisionEvent)
	// Evicted is called when a limiter forgets the state of keys.
	Evicted(EvictionEvent)
	// Tracked reports how many keys a limiter holds state for. It is
	// called from time to time, not on every decision: the module's
	// keyed, quota and concurrency limiters call it when they are made
	// (with 0), whenever keys are evicted, and as the number of keys
	// moves (by an eighth of it at most between calls: see their
	// WithObserver options).
	Tracked(limiter string, keys int)
	// StoreCalled is called after each call to a remote store (Redis).
	StoreCalled(StoreEvent)
	// FallbackChanged is called when a failure policy starts or stops
	// deciding without its store.
	FallbackChanged(FallbackEvent)
}

// DecisionEvent describes one decision.
type DecisionEvent struct {
	Limiter  string   // the limiter's name (see Options.Name)
	Key      string   // the key decided on; empty for a single-key limiter
	N        int64    // the cost of the request
	Decision Decision // the decision
}

// EvictReason says why a limiter forgot keys.
type EvictReason uint8

const (
	// EvictIdle: the keys were back at full capacity, so forgetting them
	// changes no decision (a new key starts full too).
	EvictIdle EvictReason = iota
	// EvictPressure: the limiter held its maximum number of keys, none of
	// them idle, and forgot the least recently used ones. A key forgotten
	// this way starts full when it comes back, so this can admit requests
	// its state would have denied: a limit has been loosened. Raise the
	// maximum if this happens in normal operation.
	EvictPressure
)

// String returns "idle" or "pressure".
func (r EvictReason) String() string {
	if r == EvictIdle {
		return "idle"
	}
	return "pressure"
}

// EvictionEvent describes keys forgotten at once.
type EvictionEvent struct {
	Limiter string
	Reason  EvictReason
	Keys    int
}

// StoreEvent describes one call to a remote store.
type StoreEvent struct {
	Limiter  string
	Op       string        // what was called, such as redisstore's "decide" or "quota"
	Keys     int           // keys the call decided on
	Duration time.Duration // how long the call took
	Err      error         // nil if it succeeded
}

// FallbackEvent describes a failure policy switching to or from its
// fallback (fail open, fail closed, a local limiter).
type FallbackEvent struct {
	Limiter string
	Active  bool  // true: deciding without the store from now on
	Reason  error // why it switched on; nil when switching off
}

// NopObserver is an Observer that does nothing. Embed it in an Observer to
// implement only the methods you need.
type NopObserver struct{}

// Decided does nothing.
func (NopObserver) Decided(DecisionEvent) {}

// Evicted does nothing.
func (NopObserver) Evicted(EvictionEvent) {}

// Tracked does nothing.
func (NopObserver) Tracked(string, int) {}

// StoreCalled does nothing.
func (NopObserver) StoreCalled(StoreEvent) {}

// FallbackChanged does nothing.
func (NopObserver) FallbackChanged(FallbackEvent) {}

var _ Observer = NopObserver{}
