// Package admit provides exact rate limiters: GCRA, token bucket, leaky
// bucket (as a meter, and as a queue: the Pacer), fixed window, sliding
// window counter and sliding log. Each decides with integer arithmetic, so
// what it admits is what its formula says, to the nanosecond; each reports a
// whole Decision (remaining, retry-after, reset-after); none allocates on
// the decision path.
//
// This package limits one stream of events in one process. Limits per
// client (per IP, per user, per key) are in package keyed, limits shared by
// a fleet in package redisstore, and limits composed of several layers in
// package compose; all of them decide exactly as the limiters here.
//
// # Which limiter should I use?
//
//   - GCRA (NewGCRA) for almost everything: smooth, exact, one word of
//     state, lock-free when the interval between events is a whole number
//     of nanoseconds. It has Allow, Reserve and Wait.
//   - TokenBucket (NewTokenBucket) when you want golang.org/x/time/rate's
//     surface and vocabulary (tokens, SetBurst): it answers as a
//     *rate.Limiter does, reservations included, but for a few deliberate
//     differences its documentation lists. Its AllowN decides as GCRA's.
//   - NewLeakyBucket when you think in a bucket's level (a Decision's
//     Remaining is the room left in it). It decides as GCRA does.
//   - Pacer (NewPacer) to space events evenly, queueing callers in FIFO
//     order instead of refusing them (an outbound API client, a job
//     dispatcher): uber-go/ratelimit's Take, with a context, a queue bound
//     and a wait bound.
//   - NewFixedWindow when clients expect a count that resets on the clock
//     ("1000 per calendar minute"); it lets twice the burst through at a
//     window edge.
//   - NewSlidingWindow when you want window counting without the edge burst,
//     in two counters per key; New(AlgSlidingWindowApprox, l) for its
//     approximate form, which admits the full rate under overload (the
//     strict form loses one event per window: 3/s admits 2/s) at the cost
//     of one event over the bucket bound (see NewSlidingWindow).
//   - NewSlidingLog when every window must hold at most the limit, exactly,
//     and the burst is small enough to log each event.
//
// # Limits and bursts
//
// A Limit is Rate events per Period with a Burst: Limit{Rate: 100, Period:
// time.Second, Burst: 20}, written "100/s burst 20" (see ParseLimit). Its
// emission interval is T = Period/Rate, kept as an exact fraction (3 per
// second is 333333333⅓ns apart; nothing drifts).
//
// Burst B is the capacity: the number of events a limit that has been idle
// admits at once. A Burst of 0 means B = Rate. The two usual ways of stating
// a limit map onto Limit as follows:
//
//   - "N per window W": Limit{Rate: N, Period: W} (Burst = N). The bucket
//     algorithms then admit N at once and refill one every W/N; the window
//     algorithms count N per window of W.
//   - "capacity C, refilled at R per second": Limit{Rate: R, Period:
//     time.Second, Burst: C}.
//
// The bucket algorithms (GCRA, TokenBucket, NewLeakyBucket) admit, over any
// closed interval of length t,
//
//	at most B + ⌊t/T⌋ events,
//
// and exactly that many when requests keep coming (offered 10× the rate
// for 10 s, 100/s burst 20 admits 20 + 1000 = 1020). The window algorithms
// use windows of W = B×T (one Period when Burst = Rate), aligned on the Unix
// epoch: FixedWindow admits at most B per window, so at most B×(⌈t/W⌉+1) in
// any interval of length t; SlidingWindow admits n iff previous×(W-e)/W +
// current + n <= B (e is the time elapsed in the current window), which
// keeps it within the bucket bound too, and its approximate form iff
// ⌊previous×(W-e)/W⌋ + current + n <= B, at most B + ⌈t/T⌉; SlidingLog
// admits at most B in any interval shorter than W.
//
// Special cases, the same for every algorithm:
//
//   - n > B: denied, whatever the wait; the Decision's RetryAfter is
//     InfDuration, and WaitN returns an error wrapping ErrExceedsBurst.
//     A request is never partly admitted.
//   - n = 0: a peek. Allowed, consumes nothing, and reports Remaining
//     and ResetAfter. (TokenBucket, as x/time/rate, refuses it while
//     reservations hold the bucket below zero.)
//   - n < 0: denied (RetryAfter InfDuration; ErrInvalidCost from WaitN).
//   - The zero Limit (Rate 0): denies every request with n > 0.
//   - Unlimited (Rate Inf): admits every request.
//
// Limit.Validate reports limits outside the domain: a negative field, a
// positive Rate without a Period, a Burst with a zero Rate, or a capacity
// B×T longer than 36 years. Constructors and SetLimit return its error,
// which wraps ErrInvalidLimit; nothing in this package panics on input.
//
// # Decisions
//
// AllowN reports a yes or no; DecideN returns a Decision: Allowed, the
// Limit, Remaining (events that could still be admitted now), RetryAfter
// (how long until this same request would be admitted: 0 when allowed) and
// ResetAfter (how long until the limit is back to full capacity). Durations
// are exact and rounded up to the nanosecond, so a client that waits
// RetryAfter is admitted. A denial is a Decision, not an error.
//
// # Time
//
// Every decision method takes the instant as a parameter (AllowN(now, n)),
// as in golang.org/x/time/rate; the shorthands (Allow, Decide) read the
// limiter's Clock, and the blocking calls (WaitN, Pacer.Wait) use its timers
// (see Options.Clock). Instants read from time.Now carry a monotonic reading,
// which the limiters use, so a step of the wall clock neither refills nor
// drains a limit. Instants before 1970 count as 1970 and after 2116 as 2116.
// An instant earlier than one already seen is handled by a documented rule
// per algorithm (see each type); never by refilling.
//
// All limiters in this package are safe for concurrent use: many goroutines
// calling AllowN at the same instants admit exactly what one goroutine
// would.
package admit
