// Package adaptive holds limiters whose limit is not fixed in advance but
// follows the health of what they protect: AIMD, a rate that grows while
// requests succeed and halves when they fail, and Gradient, a concurrency
// limit that follows the latency of the requests it admits. Both stay
// within a minimum and a maximum given by the caller, so a bug in the
// feedback can neither open the gates wide nor close them.
//
// A fixed limit is brittle: too low in good times, too high in bad ones.
// An adaptive limit finds the capacity of a backend whose capacity is
// unknown or changes (a database under varying load, a dependency shared
// with other services, autoscaled instances) and keeps in front of it only
// what it can serve, so that its latency stays low and it does not fall
// over when it is asked for too much.
//
//	lim, err := adaptive.NewGradient(adaptive.GradientConfig{Min: 5, Max: 500})
//	...
//	tok, err := lim.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	resp, err := backend.Call(ctx, req)
//	switch {
//	case err == nil:
//		tok.Release() // a success: its latency is a sample
//	case isOverload(err): // a timeout, a 503
//		tok.Done(adaptive.Dropped)
//	default:
//		tok.Done(adaptive.Ignored)
//	}
//
// # Which one should I use?
//
//   - Gradient, for calls to a backend whose latency you can measure:
//     latency rises as soon as the backend queues, before anything fails,
//     so a Gradient settles at the backend's capacity without overloading
//     it. It limits requests in flight, which fits services whose cost is
//     per request in progress (threads, connections, memory). Set min to
//     what the backend can always serve and max to what it must never see.
//   - AIMD, when the only signal is success or failure (a third-party API
//     that answers 429 or 503 when you go too fast, a queue that rejects),
//     or when the limit must be a rate: requests per second rather than in
//     flight. Failures are what it learns from, so it overshoots the
//     capacity until one comes; set max to the rate you could live with.
//     AIMDConfig.DecreaseInterval stops a burst of failures from cutting it to
//     the minimum; AIMDConfig.IncreaseInterval makes it grow with time rather
//     than traffic.
//   - Neither, if the backend publishes its limit (a third party's rate
//     limit is a contract: use admit.GCRA at that rate), if the limit is
//     there to cap a cost (a fixed ceiling is what you want), or if the
//     capacity is known and stable: use package concurrency or a rate
//     limiter of package admit, which are simpler to reason about.
//
// Both can be layers of a compose.Chain: AIMD.Layer is an admit.KeyedLimiter
// (and admit.Refunder), Gradient.Layer an admit.Slots, each sharing one limit
// among all keys. Both learn through the chain's compose.Held: the
// Gradient's Token and the grant AIMD.Layer records (it is a
// compose.Learner) are compose.Finishers, so Held.Finish(failed) reports
// each request's outcome to them, which httplimit's and grpclimit's
// middleware do from the response's status. As layers of a policy
// (package policy), they are the rule kinds adaptive_concurrency and
// adaptive_rate.
//
// # Time
//
// Time is a parameter: AIMD.AllowN and FeedbackAt take the instant,
// Gradient.TryAcquireN and Token.DoneAt too (DoneRTT takes a latency the
// caller measured), so tests drive the limiters through explicit instants
// and converge them deterministically. The shorthands and the blocking
// calls read the Clock of their Config (admittest.ManualClock in tests).
// The limiters start no goroutines and need no Close.
package adaptive
