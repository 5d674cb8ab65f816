// Package keyed limits each key — a client IP, a user, an API key, a
// tenant — separately, in memory, with any of admit's algorithms, for
// millions of keys in bounded memory.
//
// A keyed Limiter decides for every key exactly as its own single-key
// limiter of package admit would (the admittest conformance suite checks
// it), without one object per key: states live in a sharded open-addressing
// table, keys in byte arenas the garbage collector does not scan, about 35
// bytes per key for GCRA plus the key's bytes. Deciding on a key that is
// already held does not allocate.
//
// # Which one should I use?
//
//   - keyed.Limiter (this package) when one process enforces the limit: per
//     client limits in a single service instance, or per instance limits in
//     a fleet. It replaces the map[string]*rate.Limiter that users build by
//     hand, without its leak: keys back at full capacity are forgotten,
//     which changes no decision, and a hard cap (Config.MaxKeys) bounds the
//     rest.
//   - redisstore when several instances must share one limit.
//   - admit's single-key limiters for one stream of events (a dependency, a
//     worker pool).
//   - concurrency for limits on requests in flight rather than a rate, and
//     quota for allowances per calendar day or month.
//
// A Limiter meets admit's contract for keyed limiters (admit.KeyedLimiter,
// admit.Refunder, admit.Resetter): every call takes one admit.Request, so
// the same code runs against this package, redisstore, or any other
// backend.
//
// Tiers: give the limit per call (Request.Limit) and one Limiter serves
// free, standard and enterprise clients alike.
//
// Refunds: Refund gives back events that were admitted for nothing, as
// when a later limit refused the request; it is what compose.All calls to
// undo the layers before the one that refused.
//
// Time: a Request without At is decided on the limiter's Clock; one with
// At is decided at that instant, as golang.org/x/time/rate's AllowN(t, n)
// does, for exact tests and for deciding several limits at one instant.
//
// Fleets: LocalShare and LiveShare make the local limiter a fleet falls
// back to when its shared store is down, holding this instance's share
// (admit.Limit.Share) of the shared limit.
package keyed
