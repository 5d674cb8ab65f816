// Package prefetch spends a shared limit's capacity in memory: each
// instance of a fleet takes capacity from the shared store (Redis, through
// a redisstore.Limiter) in blocks, one atomic partial grant per block, and
// admits requests from its blocks without a round trip. The fleet never
// admits more than the limit.
//
// # When to choose it
//
// Use it for keys that each instance sees many times per Interval (tens of
// requests per key per 50ms): a hot tenant, a busy API key, a global
// limit. For such keys a block replaces tens of Redis calls with one, and
// the check costs what an in-memory limiter costs. Keys seen rarely gain
// nothing (a block would expire before it is spent) and go to the store
// request by request, exactly as without prefetching; so do requests with
// a per-call limit and requests larger than a block.
//
// # What it keeps, and what it costs
//
// The bound. With T = Period/Rate and B the burst, the events the whole
// fleet admits for a key over any interval of length t are at most
// B + ⌊t/T⌋ for GCRA and the token and leaky buckets, and at most B in any
// window for the fixed window; the sliding window keeps its estimate
// within B at every admission (below B+1 in its approximate form). That is the bound of the algorithm itself,
// as if one process decided every request. The argument, for GCRA: the
// shared state hands out slots of the schedule, each T long, and a block
// is m consecutive slots; a slot starting at v is spent only at an instant
// at or before v (an older slot has expired: spending it would let
// capacity pile up, which GCRA never allows) and only while the slots
// spent end within B×T of the instant, as GCRA admits. Every event of the
// fleet then has a slot of its own, no earlier than the event and no later
// than B×T after it, and distinct slots are T apart, which is the bound.
// The buckets are the same schedule (their time to full is GCRA's TAT).
// A window's block is a count taken in the store's current window, spent
// only until that window ends. Blocks are mapped onto each instance's
// clock from the instant the grant was asked (the store decided at or
// after it), so a block expires early rather than late.
//
// The price is early denial: a request may be denied while capacity sits
// in another instance's block. At any instant that is at most what the
// other instances hold (Stats.Held, at most MaxBlock each per key, MaxBlock
// being half the burst over Instances by default) plus what expired in
// their blocks unspent (Stats.Unspent), plus refunds dropped (below). An
// instance that found the store short also waits, before asking again,
// for a block's worth to come back (the capacity stays in the store, up to
// the burst, for whoever asks first), so one key's hot instance asks the
// store once per block rather than once per event that comes back; and a
// denial remembered from the store (a key denied one event until an
// instant) holds even if another instance gives capacity back meanwhile.
// Stats.Early counts the denials of that wait the store would have
// admitted, the early denials an instance can see; those the store
// answers while others hold capacity are bounded by the others' Held and
// Unspent.
//
// Refunds and instants. A Refund of a key's latest admission from a block
// goes back into that block; other refunds of a window go to the store,
// which takes them off its count; other refunds of GCRA or a bucket are
// dropped (counted in Stats.Dropped), because moving the shared state back
// could hand out slots that another instance's block already holds. At
// Close, what window blocks still hold is given back; GCRA's slots expire
// by themselves. A request's instant may go backwards: a slot's test is
// against the request's own instant, and a window's block is spent only
// from the instant its grant was answered.
//
// # Failure
//
// Blocks are spent whatever happens to the store: while Redis is away an
// instance keeps admitting what its blocks hold, then the next fetch fails
// and Allow returns the store's error, which a compose.Guard around the
// Limiter turns into the rule's failure policy, as without prefetching.
//
// # Figures
//
// Measured on a machine of 2 cores shared by Redis, the limiter and the
// load (bench/RESULTS.md, "Prefetched capacity on a quiet machine"):
//
//   - three processes on one key at ten times its limit (1000/s, burst
//     100): 1/37 of the Redis commands of strict checks, a median check of
//     0.45 µs instead of 230 µs, no window of any length over B + t/T, and
//     within 1.4-12.3 events of the ideal over 10 s (standalone and on a
//     3-node cluster);
//   - Zipf-skewed keys (s = 1.1 over 100,000 keys, 1000/s each): 3.0×
//     go-redis/redis_rate's checks per second and 1.5× strict admit's, at
//     half strict admit's Redis and process CPU per check; the third of the
//     checks that go to keys asked for under 40 times a second stay on
//     Redis and set the p99;
//   - admit serve's Envoy RLS on such keys: 1.6× envoyproxy/ratelimit at
//     0.55× its CPU per check (in memory, admit serve does 2.3×).
//
// # Sizing
//
// A key gets blocks of about Interval's worth of its local arrivals (at
// most MaxBlock; under a window, its arrivals until the window ends, when
// that is longer, since the block lasts that long), and the next block is fetched in the background when the
// current one is half spent, so a hot key's requests do not wait for the
// store. Instances (and SetInstances, for a count of the live instances
// that changes as a fleet scales, as admit serve keeps) only sizes blocks: an instance count that is wrong
// changes how much capacity an instance may hold, never the bound.
package prefetch
