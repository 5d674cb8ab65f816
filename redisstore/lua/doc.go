// Package lua holds admit's Redis decision script and the Go helpers that
// build its arguments and parse its reply. The redisstore package runs it;
// use that package, not this one, to limit with Redis.
//
// The script decides exactly as the Go step functions of internal/algo do
// (GCRAStep, BucketStep, FixedWindowStep, SlidingWindowStep and
// SlidingLog.SlidingLogStep): one file per algorithm mirrors its Go file line
// for line, and a differential test and a fuzz target compare the two on
// random timelines (equal and backwards instants, requests of 0 and past the
// burst, fractional and extreme limits, unlimited and closed ones), result
// for result and state for state. Redis runs Lua 5.1, whose numbers are
// doubles, so lib.lua implements the exact 64- and 128-bit integer
// arithmetic the step functions need (numbers below 9e15 stay plain Lua
// numbers, larger ones become base-10^7 limb arrays; division is Knuth's
// algorithm D). No result is rounded, anywhere.
//
// # Calling convention
//
// Decide is one script; run it with EVALSHA (go-redis's Script does, with
// an EVAL fallback on NOSCRIPT):
//
//	KEYS[1..N]  the Redis keys, one per request (or per layer of a request),
//	            used as given: the script never parses them, so they may hold
//	            any bytes. In a cluster they must share one hash slot.
//	ARGV[1]     Independent ("0"): each key is decided and written on its
//	            own, in order. AllOrNothing ("1"): every key is decided, and
//	            the changed states are written only if every key was allowed;
//	            otherwise nothing is written (the results are still those
//	            computed, each against the states pending from the earlier
//	            keys, and the caller treats the call as denied).
//	ARGV[2]     the instant in ns since the Unix epoch, in decimal, or
//	            RedisTime ("") for Redis TIME (seconds×1e9 + microseconds×1e3).
//	            It is clamped to [0, algo.MaxTime] as algo.Clamp does.
//	ARGV[3]     the minimum TTL of written keys in ms, in decimal ("0": none).
//	then 7 arguments per key i (0-based), from ARGV[4+7i]:
//	            the algorithm code (Code), n >= 0, and the limit compiled by
//	            algo.Compile: Mode, Burst, Tn, Td, CapN, all in decimal
//	            (AppendArgs appends them).
//
// A key may appear more than once: each occurrence sees the state pending
// from the earlier ones. The reply is a flat array:
//
//	[now, then per key: allowed (integer 1 or 0), remaining, retryAfter,
//	 resetAfter]
//
// with now (the instant decided at, after clamping) and the three durations
// (ns) as decimal strings, so that values such as algo.Never (MaxInt64)
// round-trip exactly. ParseReply checks and converts it.
//
// Errors are Redis error replies whose message starts with "admit: ": a
// malformed argument, a limit algo.Compile could not have produced (the
// script checks Burst×Tn = CapN, CapN/Td <= algo.MaxSpan and, for the
// window algorithms, CapN >= Td; its exact arithmetic then agrees with Go's
// 64-bit arithmetic), a key holding another Redis type or a value the script
// did not write, or the state of another algorithm. The script checks
// everything before it writes, so a call that fails writes nothing.
//
// An unlimited or closed limit decides without reading its key, as the Go
// step functions do without looking at their state.
//
// # States and expiry
//
// Only an admission changes a state, so only admissions write, with one
// exception that mirrors Go: a sliding log drops its expired entries on every
// decision, denials and peeks included, and that change is stored too (it
// matters when a later instant falls back before them); a log left empty is
// deleted. Each state is a Redis string, set with SET ... PX, in a compact
// decimal form tagged by its first byte (all fields are int64 >= 0):
//
//	GCRA            "g<At>" when Frac = 0 (always when Td = 1), else
//	                "g<At>:<Frac>"; At <= algo.MaxTime + 2×algo.MaxSpan
//	token bucket,   "b<Last>:<Level>", Last <= algo.MaxTime (the token bucket
//	leaky bucket    and the leaky bucket meter share it)
//	fixed window    "f<Win>:<Count>", Win <= algo.MaxTime
//	sliding window  "s<Win>:<Cur>:<Prev>", Win <= algo.MaxTime
//	sliding log     "l<At>:<N>" for the oldest entry, then ",<dt>:<N>" for
//	                each later one, dt being the gap (>= 1 ns) from the entry
//	                before; instants <= algo.MaxTime, N >= 1, ΣN <= MaxInt64
//
// The sliding log is one string rather than a Redis list: a decision needs
// the sum of the log's counts and the instant at which the oldest events
// leave the window, so a list would be read whole (LRANGE) anyway, and then
// trimmed and pushed in further calls; one GET and one SET are cheaper for
// the small logs the algorithm is meant for (at most Burst entries). Entries
// store the gap to the previous instant, which keeps them short and, in the
// common case, small enough for plain Lua numbers.
//
// A written key expires after max(⌈ResetAfter/1ms⌉+1 ms, minimum TTL), the
// ResetAfter of the decision that wrote it. From ResetAfter on, every
// algorithm's state decides exactly as a missing key does (for the same
// limit), so expiry changes no decision; the extra millisecond covers Redis
// TIME's microseconds. With explicit instants, which need not follow real
// time, pass a minimum TTL longer than the span the instants cover.
package lua
