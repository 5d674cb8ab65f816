// Package lua holds admit's Redis decision script and the Go helpers that
// build its arguments and parse its reply. The redisstore package runs it;
// use that package, not this one, to limit with Redis.
//
// The script decides exactly as the Go step functions of internal/algo do
// (GCRAStep, BucketStep, FixedWindowStep, SlidingWindowStep,
// SlidingWindowApproxStep and SlidingLog.SlidingLogStep; the root package
// and the keyed package use the same ones, the token bucket and the leaky
// bucket meter both BucketStep, the two sliding windows one state),
// and gives events back exactly as their undo functions do (GCRAUndo,
// BucketUndo, FixedWindowUndo, SlidingWindowUndo, SlidingLogUndo).
// Redis runs Lua 5.1, whose numbers are doubles, so no result may ever be
// computed in floating point; the script is built from these files:
//
//   - lib.lua: exact unsigned integers up to 2^128 (u128.go and the int64
//     operations): values below 9e15 are plain Lua numbers, larger ones
//     arrays of base-10^7 limbs; division is Knuth's algorithm D.
//   - params.lua, gcra.lua, bucket.lua, window.lua, fixedwindow.lua,
//     slidingwindow.lua, slidinglog.lua: one file per Go file of
//     internal/algo, mirroring its step function line for line (same
//     names, same order; each file's first comment names what it mirrors).
//   - fast.lua: exact fast paths, the same functions (and the undo
//     functions of GCRA, the buckets and the fixed window) specialized to
//     plain Lua numbers for limits and states whose values stay below 4e15 in the
//     step functions' units (so that every sum stays below 2^53), with
//     instants as pairs hi×10^7 + lo (or, in a sliding log, as offsets from
//     now): GCRA and the buckets for any T, the window algorithms when T is
//     a whole number of nanoseconds (Td = 1) and, for the fixed and sliding
//     windows, the window is at least 1 ms. Anything else (huge limits or
//     states, fractional T in a window algorithm, instants before 10 ms
//     after the epoch) takes the general path of the mirrors.
//   - main.lua and slow.lua: arguments, states, writes, reply; entry.lua:
//     the call of main.lua's run, errors made replies.
//   - partial.lua: the stages of the partial mode (below), a module that
//     only partial calls build; a normal call pays two tests per key.
//
// A differential test and a fuzz target (FuzzDecide) run random timelines
// (equal and backwards instants, requests of 0 and past the burst,
// fractional and extreme limits, unlimited and closed ones, stored states of
// any value) through the script and through the Go step functions and
// require every result and every stored state to agree; directed tests sweep
// the bounds of each fast path. EVALSHA runs the whole chunk on every call,
// so every file but fast.lua and main.lua is a module that a call runs only
// if it needs it: a call on the fast paths never builds the general one.
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
//	            keys, and the caller treats the call as denied). Refund
//	            ("2"): each key's n events, admitted at the call's instant,
//	            are given back by the algorithm's undo function, and each
//	            key is written on its own; its result is what a peek (n = 0)
//	            then gets at that instant (unlimited and closed limits reply
//	            as for a peek). GCRA, the buckets and the fixed window have
//	            undo fast paths in fast.lua; the sliding window and log take
//	            the general path. Partial ("3"): each key is granted, on its
//	            own, the largest m <= n events that fit: a peek gives what
//	            fits (a step's Remaining is exactly the largest n it would
//	            admit), m = min(n, Remaining) is admitted if m > 0, and if
//	            m < n one more event is asked for on the state after the
//	            grant, whose denial gives the wait for it; the key's result
//	            is the last of these decisions (allowed if m > 0, or for a
//	            peek, n = 0, what the peek said), and m follows it in the
//	            reply. This is keyed.Limiter.AllowAtMost's loop, in one
//	            call (main.lua decides the key once per stage, partial.lua
//	            says what to ask next); the script fails rather than reply
//	            if the admission were denied or the one more admitted.
//	ARGV[2]     the instant in ns since the Unix epoch, in decimal, or
//	            RedisTime ("") for Redis TIME (seconds×1e9 + microseconds×1e3).
//	            It is clamped to [0, algo.MaxTime] as algo.Clamp does.
//	ARGV[3]     the minimum TTL of written keys in ms, in decimal ("0": none).
//	ARGV[4]     L, the number of limits.
//	then 6 arguments per limit j (1-based), from ARGV[5+6(j-1)]:
//	            the algorithm code (Code) and the limit compiled by
//	            algo.Compile: Mode, Burst, Tn, Td, CapN (NewLimit formats
//	            them). Each is read and checked once per call.
//	then 2 arguments per key i (1-based), from ARGV[5+6L+2(i-1)]:
//	            the index j of its limit, and n >= 0 (Args.Add adds them).
//	Numbers are decimal int64s; below 9e15 the script reads them with Lua's
//	tonumber, which also takes forms such as 1e3.
//
// A call of many keys under one limit (the usual batch) thus sends 2
// arguments per key rather than 7, and the script checks the limit once.
//
// A key may appear more than once: each occurrence sees the state pending
// from the earlier ones. The reply is a flat array:
//
//	[now, then per key: allowed (1 or 0), remaining, retryAfter, resetAfter]
//
// and in Partial mode each key's four are followed by m, the events
// granted.
//
// now is the instant decided at (after clamping) as a decimal string; the
// other numbers (remaining, the durations in ns, m) are integer replies
// below 9e15 and decimal strings from there on, so that algo.Never
// (MaxInt64) round-trips exactly. ParseReply (ParsePartialReply in Partial
// mode) checks and converts the reply.
//
// Errors are Redis error replies whose message starts with "admit: ": a
// malformed argument, a limit algo.Compile could not have produced (the
// script checks Burst×Tn = CapN, CapN/Td <= algo.MaxSpan and, for the
// window algorithms, CapN >= Td; its exact arithmetic then agrees with Go's
// 64-bit arithmetic), a key holding another Redis type or a value the script
// did not write, or the state of another algorithm. The script checks
// everything before it writes, so a call that fails writes nothing. An
// unlimited or closed limit decides without reading its key, as the Go step
// functions decide without their state.
//
// # States and expiry
//
// Only an admission or a refund changes a state, so only they write, with
// one exception that mirrors Go: a sliding log drops its expired entries on
// every decision, denials and peeks included, and that change is stored too
// (it matters when a later instant falls back before them); a log left
// empty is deleted. Each state is a Redis string, set with SET ... PX, in a compact
// decimal form tagged by its first byte (fields are int64 >= 0; leading
// zeros are accepted):
//
//	GCRA            "g<At>" when Frac = 0 (always when Td = 1), else
//	                "g<At>:<Frac>"; At <= algo.MaxTime + 2×algo.MaxSpan
//	token bucket,   "b<Last>:<Level>", Last <= algo.MaxTime (the token bucket
//	leaky bucket    and the leaky bucket meter share it)
//	fixed window    "f<Win>:<Count>", Win <= algo.MaxTime
//	sliding window  "s<Win>:<Cur>:<Prev>", Win <= algo.MaxTime (both forms:
//	                codes "sw" and "swa")
//	sliding log     "l<At>:<N>" for the oldest entry, then ",<dt>:<N>" for
//	                each later one, dt being the gap (>= 1 ns) from the entry
//	                before; instants <= algo.MaxTime, N >= 1, ΣN <= MaxInt64
//
// The sliding log is one string rather than a Redis list: a decision needs
// the sum of the log's counts and the instant at which the oldest events
// leave the window, so a list would be read whole (LRANGE) anyway, and then
// trimmed and pushed in further calls; one GET and one SET are cheaper for
// the small logs the algorithm is meant for. Its cost grows with the entries
// (at most Burst; events at one instant share an entry): about 0.4 µs of
// script time per entry on the fast path, so keep its bursts small, as
// algo.SlidingLog's documentation advises.
//
// A written key expires after max(⌈ResetAfter/1ms⌉+1 ms, minimum TTL), the
// ResetAfter of the decision that wrote it. From ResetAfter on, every
// algorithm's state decides exactly as a missing key does (for the same
// limit; TestResetAfterForgets checks it), so expiry changes no decision;
// the extra millisecond covers Redis TIME's microseconds. With explicit
// instants, which need not follow real time, pass a minimum TTL longer than
// the span the instants cover.
//
// # Cost
//
// On the 2-core test machine, Redis 7.0 spends about 13-15 µs in the script
// for one key of any algorithm on its fast path with Redis TIME (a float
// GCRA script in the manner of go-redis/redis_rate: 10 µs; EVALSHA of an
// empty script with the same arguments: 3 µs), about 4 µs for each further
// key of the same call (2.2 µs when the key was met earlier in the call: its
// state is read and written once), about 30 µs on the general path, and
// 55 µs for a sliding log of 100 entries; a refund of one GCRA or fixed
// window key about 15-17 µs (44 and 90 µs without its fast path).
// BenchmarkDecide reports INFO commandstats' figure as server-µs/call.
package lua
