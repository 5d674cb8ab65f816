// Package redisstore keeps limiters' states in Redis, so that every process
// of a fleet enforces one limit per key: N replicas with a local limit of R
// would admit N×R, while N replicas sharing a Store admit R.
//
// # Which one should I use
//
// Use package keyed when one process decides alone: it is exact and costs
// about 100 ns. Use redisstore when several processes must share a limit:
// each check is a Redis round trip (batched with the other checks in flight,
// so under load many checks share one), and a key denied until T is answered
// locally until T. Wrap a Redis limiter in a failure policy from package
// compose to choose what happens when Redis is down.
//
// A Store makes three kinds of limiter:
//
//   - Store.Limiter: a rate limit per key, by any algorithm of package admit
//     but the Pacer (GCRA is the usual choice: one timestamp per key).
//   - Store.Concurrency: at most N in flight per key across the fleet, with
//     leases that expire, so a crashed holder cannot leak its slots (the
//     Redis version of package concurrency).
//   - Store.Quota: N per calendar hour, day, week, month or year in a time
//     zone, durable: the counts are in Redis and survive restarts (the Redis
//     version of package quota).
//
// # Semantics
//
// A Limiter decides exactly as keyed.Limiter does, by the same step
// functions: the Lua script (in lua/*.lua, embedded) mirrors them line for
// line with exact integer arithmetic, and the conformance suite of package
// admittest runs unchanged against a standalone Redis and a Redis Cluster.
// Allow reads Redis's clock (TIME) inside the script, so the clocks of the
// clients cannot change a decision; a Request with an explicit At takes the
// instant from the caller, for exact tests.
//
// # Keys
//
// A key of limiter name N for algorithm A is stored at
//
//	<prefix>{<16 hex digits>}:<A>:<N>:<key>
//
// where A is the algorithm's code (gcra, tb, lb, fw, sw, sl, swa; conc and
// concw for the two keys of a concurrency limit, and quota followed by the
// period and its start for a quota's count; admit serve's lease records,
// groups of leases saved under a name, are at <prefix>leases:<name>), the
// prefix defaults to "admit:v1:", and the hex digits are a hash of the key
// (or of the tag given to Store.AllowLayers): Redis Cluster hashes
// only what is between the braces, so a key may hold any bytes, braces
// included, without moving its slot, and every key one script call touches
// is in one slot. Each written key expires (PEXPIRE) when its state is full
// again, so idle keys vanish by themselves; Config.MinTTL sets a lower bound
// for callers passing their own instants (Request.At) whose instants are not on Redis's clock.
//
// # Speed
//
// Checks are pipelined automatically: a Store runs a few workers
// (Config.Pipelines); checks that arrive while the workers are busy go out
// together in the next pipeline, merged into one script call per instant
// (per slot in a cluster). AllowBatch sends many keys at once, and
// Store.AllowLayers decides several layers of one request (per IP, per
// tenant, global) in one script call, all or nothing.
//
// # The deny cache
//
// Every algorithm here only moves a key towards denial when requests are
// admitted: nothing but time (and Reset and Refund) gives capacity back. So
// a key that Redis denied one event until instant T stays denied until T,
// whatever other clients admit, and the store answers it from memory until
// then without a call to Redis (Config.DenyCacheKeys bounds the keys it
// remembers). This holds
// for GCRA, the token and leaky buckets, the fixed and sliding windows and
// the sliding log. Only requests of one event are cached: while one event
// does not fit, the whole decision (Remaining 0, RetryAfter, ResetAfter) is
// the one Redis would give, unless another client admits events for the key
// meanwhile, in which case Redis would give a longer wait; the denial
// itself is exact. A Reset or Refund by another process is seen once the
// cached denials end (until then this Store denies what Redis would admit,
// erring on the side of the limit). An admission, a Reset or a Refund
// through the same Store forgets the key's denial. The argument needs instants that do not go backwards between
// clients: a bucket treats an instant earlier than the latest it saw as
// that latest one, so with callers' own instants (Request.At) on skewed
// clocks, one client's admission at a later instant could end another's
// cached denial early. On Redis's clock this cannot happen (unless the
// server's wall clock is stepped back); disable the cache (a negative Config.DenyCacheKeys)
// for explicit instants on clocks that disagree.
//
// # Partial grants
//
// Limiter.AllowAtMost admits as many of r.N events as fit now, from 0 to
// r.N, and returns how many (admit.PartialAllower; go-redis/redis_rate's
// AllowAtMost): a batch consumer takes what it may process now, a
// prefetching cache takes capacity from the shared limit in blocks. A
// grant is one call of the same script, atomic: it reads what fits,
// admits it, and when fewer than r.N fit, asks for one more event, whose
// denial tells how long until it fits (the Decision's RetryAfter). It
// grants and decides exactly as keyed.Limiter.AllowAtMost does, for every
// algorithm, on Redis's clock or at the caller's instant. Grants are
// pipelined as checks are, merged into script calls of their own (a mode
// of the call, so the other checks' calls are unchanged). Quota.AllowAtMost
// grants what remains of a quota's period the same way, as
// quota.Quota.AllowAtMost does.
//
// For the deny cache, a grant of nothing is a denial of one event, and a
// grant of fewer than r.N leaves the key denied one more event until
// RetryAfter: the Store remembers both as it remembers Allow's denials,
// exact by the same argument (only admissions move a key towards denial),
// and grants nothing, without calling Redis, for a key it holds denied. A
// grant of all r.N forgets the key's denial, as an admission does.
//
// # When Redis fails
//
// Wrap a Limiter in a compose.Guard with the failure policy of your choice
// (fail open, fail closed, a local fallback, a circuit breaker). A check's
// pipeline gives up when the last of its callers' contexts ends (and after
// Config.Timeout at most), so the Guard's per-call timeout bounds what a dead
// Redis costs. Configure the client to fail fast as well: go-redis retries
// a refused connection DialerRetries times (5 by default, 100 ms apart),
// about 0.8 s per check when Redis is down, so set DialerRetries: 1,
// MaxRetries: -1 (a check is not idempotent: a retried check could consume
// twice), and a DialTimeout and ReadTimeout of a few times the usual
// latency. After a refused connection go-redis redials about once a
// second, so recovery after Redis is back takes up to a second.
//
// The deny cache keeps answering during an outage, exactly, for the keys it
// holds. Such answers say nothing of Redis's health, so Limiter.Healthy
// tells a Guard whether the Store's latest round trip got an answer, and a
// Guard switches back to Redis only on a success when it does. An open
// Breaker, which does not call the limiter, asks Limiter.Cached first, so
// known denials stay denials under any policy.
//
// # Layers
//
// Store.AllowLayers decides the layers of one request in one script call,
// all or nothing, when they all live in this Redis. To chain Redis limits
// with local ones (a per-IP keyed.Limiter before a per-tenant Limiter here,
// a concurrency cap after), use compose.All: a Limiter and a Quota are
// layers whose admission a refusal further down is refunded from (Refund:
// a refund mode of the same script), and
// ConcurrencyLimiter.Slots makes a concurrency layer whose leases are
// released.
//
// # Examples and tests
//
// The Examples and tests of this package run against real Redis: under
// `go test` the package's TestMain starts redis-server processes from PATH
// on free ports (a standalone server, a 3-node cluster, Sentinel) and stops
// them at the end; without redis-server the tests skip (they fail with
// ADMIT_REQUIRE_REDIS=1) and the Examples fail, saying how to install it.
//
// # Errors
//
// A denial is a Decision, not an error. Errors mean nothing was decided:
// bad input (admit.ErrInvalidCost, admit.ErrInvalidLimit, admit.ErrKeyTooLong),
// a failure of Redis (ErrStore: connection refused, timeout, an error reply
// such as a key holding another type, or a malformed reply, which is never
// a panic), the caller's context, or a closed Store (admit.ErrClosed).
package redisstore
