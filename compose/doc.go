// Package compose builds limiters out of limiters: chains of layers that
// must all admit a request, and failure policies around a limiter whose
// store may fail.
//
// It knows the backends only through admit's contract (backend.go):
// a layer is an admit.KeyedLimiter (refunded if it is an admit.Refunder)
// or an admit.Slots, and a Guard finds its primary's health, cache and
// refunds through admit.HealthReporter, admit.Cacher and admit.Refunder.
// So compose depends on no backend: keyed, quota, concurrency, redisstore
// or any later store plug in unchanged.
//
// All chains layers (rate limits, quotas, concurrency caps; in memory or
// in Redis) into one limit that admits a request iff every layer admits
// it: per client address, per user, per tenant, a global cap. It asks the
// layers in order and stops at the first that refuses; the layers before
// it are undone (refunded, their slots released), so a refused request
// consumes nothing anywhere. The decision is the most restrictive one and
// its Rule names the layer that made it. Admit does the same for layers
// and requests chosen per check (each layer with its own key and cost),
// and can report each layer's decision.
//
// What the layers of an admitted request hold until it is done (the slots
// of concurrency caps) is recorded in a Held, which the caller releases
// when the request is done. Layers that learn from how requests went (the
// adaptive limiters of package adaptive) record Finishers there: the
// caller that knows the outcome calls Held.Finish(failed) instead of
// Release, so that a rate is cut, or a concurrency limit shrinks, when
// what it protects fails, and grows while it copes. Held.WantsOutcome
// says whether anything wants the outcome; httplimit and grpclimit report
// it when something does.
//
// The failure policies wrap any keyed limiter, typically a shared store
// such as redisstore.Limiter, and decide what happens when the store
// fails: a Guard asks its primary limiter, bounds each call with a
// timeout, and when the primary fails it fails open, fails closed, or
// falls back to a local limiter, optionally as a circuit breaker that
// stops calling a dead primary and probes it until it is back.
//
// A failure is a timeout or an error of the primary other than one about
// the request (see IsFailure); the caller's own cancellation is not a
// failure. Requests the primary fails on are decided by the policy, one by
// one; after a few consecutive failures (GuardConfig.Threshold) the Guard reports
// the switch to its policy, once, to an admit.Observer (FallbackChanged)
// and an optional slog.Logger, and once more when the primary is back.
// Decisions the policy makes carry a Rule ending in "fail-open",
// "fail-closed" or "fallback", and Stats counts them.
//
// # Which one should I use?
//
//   - All, for a request that several limits apply to. Put the cheap local
//     layers first (a keyed.Limiter per client address), then the shared
//     ones (a redisstore.Limiter per tenant), and the concurrency caps last
//     (concurrency.Limiter.Slots, redisstore.ConcurrencyLimiter.Slots), so
//     that a request refused early costs no round trip and slots are
//     rarely taken only to be given back. When every layer is a Redis limiter of one
//     Store, redisstore.Store.AllowLayers decides them all in one script
//     call instead, all or nothing. Wrap a Redis layer in a Guard to give
//     it a failure policy: a Guard is a layer like any other, refunded
//     through its primary or its Fallback (see Guard.Refund).
//
// And for a limiter whose store may fail:
//
//   - Fallback with a local share (keyed.LocalShare, or keyed.LiveShare
//     for a fleet that scales), as a Breaker, for most limits: when the store is down
//     each instance enforces its share of the limit on its own, so the
//     fleet keeps enforcing about the same limit, and no request waits on
//     the dead store.
//   - FailOpen where availability matters more than the limit: the limit
//     is a courtesy (fairness between clients), and its store must never
//     take the service down with it.
//   - FailClosed for abuse protection and cost control: login attempts,
//     sign-ups, SMS and paid upstream APIs, where admitting without a
//     limit costs more than refusing for a while.
//   - Breaker(p), whichever p: it stops hammering a store that is down (and
//     spending the timeout on each request while it is), lets one request
//     through per GuardConfig.ProbeInterval to find out whether it is back, and
//     switches back when it is. Without Breaker every request tries the
//     primary first, so each pays up to the timeout while the store does
//     not answer.
//
// Keep the timeout (GuardConfig.Timeout, default 50ms) a small multiple of the
// store's usual latency: a dead store must cost each request milliseconds,
// not seconds.
package compose
