// Package concurrency limits how many requests are in flight at once: at
// most N at a time, globally or per key (per client, per tenant, per
// backend), each request weighing n slots. Where a rate limit (package
// admit) bounds how many requests start per unit of time, a concurrency
// limit bounds how many run at the same time; the two are complementary,
// and a service often wants both: a fast endpoint lives with a rate limit,
// a slow or expensive one (a report, an upload, a call to a fragile
// dependency) needs its concurrency bounded too.
//
//	lim, err := concurrency.New(concurrency.Config{Max: 10, Lease: time.Minute})
//	...
//	p, d, err := lim.TryAcquire(ctx, admit.Request{Key: tenant, N: 1})
//	if err != nil {
//		return err // invalid input: a key too long, too many keys...
//	}
//	if !d.Allowed {
//		http.Error(w, "too many requests in flight", http.StatusTooManyRequests)
//		return
//	}
//	defer p.Release()
//
// # Which one should I use?
//
//   - Limiter.TryAcquire to refuse at once when the key is full: the usual
//     choice in a server, where a refused client retries later and holding
//     its request costs memory.
//   - Limiter.Acquire to wait for a slot, in FIFO order, bounded by the
//     context, the queue length (Config.MaxWaiters) and the wait
//     (Config.MaxWait): for clients of a dependency, job workers, and servers
//     that would rather queue a short burst than refuse it.
//   - The empty key for a single, global limit; other keys for one limit
//     per key, with memory bounded by what is in flight. A Request's
//     Limit.Rate gives the limit per call, for tiers.
//   - Limiter.Slots for a concurrency layer of a compose chain (an
//     admit.Slots, the contract every backend of slots meets).
//   - Config.Lease whenever a holder could fail to release: across process
//     boundaries, in code with many exits, or with callbacks you do not
//     control. A slot not released within the lease is reclaimed.
//   - golang.org/x/sync/semaphore.Weighted for one weighted semaphore
//     inside a program, where leases, keys, decisions and observers are of
//     no use: it has the same strict FIFO order and costs less per call.
//   - package admit (GCRA, TokenBucket...) when the limit is a rate ("100
//     per second"), not a number in flight; a rate limiter never needs to
//     be told that a request has ended.
//
// # Model
//
// A key's in-flight count is the sum of the weights of the Permits granted
// for it and not yet released (or reclaimed). A request of n slots under a
// limit of max is admitted iff in-flight + n <= max and no caller waits for
// the key; it is never partly admitted. Its Permit gives the n slots back on
// Release, exactly once, whatever the number of calls. n = 0 is always
// admitted and holds nothing; n > max can never be admitted (its Decision
// has RetryAfter admit.InfDuration, with an error wrapping
// admit.ErrExceedsBurst, as admit's WaitN reports it).
//
// Waiting callers of a key are served in strict FIFO order: the first one
// is granted its slots as soon as they are free, and nobody behind it is
// served before it, so a heavy request cannot be starved by light ones.
// Cancelling a waiter's context takes it out of the queue at once.
//
// Decisions are admit.Decisions of Kind admit.KindConcurrency; Limiter
// documents the meaning of each field. A denial is a Decision, not an
// error.
//
// # Time
//
// Time matters only to leases and bounded waits, and is read from the
// Limiter's Clock (Config.Clock): admittest.ManualClock drives a Limiter in
// tests without sleeping. Without leases or Config.MaxWait, a Limiter never
// reads the clock.
package concurrency
