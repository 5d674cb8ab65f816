package compose

import "github.com/admit-go/admit"

// Policy is what a Guard does with a request its primary cannot decide:
// admit it (FailOpen), deny it (FailClosed), or ask a local limiter
// (Fallback); and, wrapped in Breaker, whether it stops calling a primary
// that keeps failing. The zero Policy is not a policy: NewGuard refuses it.
type Policy struct {
	kind    policyKind
	local   admit.KeyedLimiter
	slots   admit.Slots // FallbackSlots's
	breaker bool
}

type policyKind uint8

const (
	noPolicy policyKind = iota
	failOpen
	failClosed
	fallback
)

var (
	// FailOpen admits each request the primary cannot decide. Its decision
	// is the one an admit.Unlimited limit gives: Allowed, Limit
	// admit.Unlimited, Remaining math.MaxInt64, no RetryAfter nor
	// ResetAfter. Use it where availability matters more than the limit:
	// an outage of the limit's store must not become an outage of the
	// service.
	FailOpen = Policy{kind: failOpen}

	// FailClosed denies each request the primary cannot decide (a request
	// of n = 0, a peek, is allowed, as always). Its decision has a zero
	// Limit, Remaining 0, and RetryAfter and ResetAfter both the Guard's
	// retry delay (GuardConfig.RetryAfter, default 1s). Use it where the limit
	// protects money or abuse-prone resources: SMS, paid APIs, sign-ups,
	// password attempts.
	FailClosed = Policy{kind: failClosed}
)

// Fallback returns the policy that asks local to decide each request the
// primary cannot decide. local is usually a keyed.Limiter holding this
// instance's share of the shared limit (see keyed.LocalShare and
// keyed.LiveShare), so
// that a fleet whose store is down still enforces about the same limit,
// each instance on its own. local is called with the caller's context,
// without the Guard's timeout, and its errors are returned as they are. The
// Guard reports local's decisions to its Observer (see GuardConfig.Observer), so
// give the Observer to the Guard rather than to local. A nil local makes
// NewGuard fail with an error wrapping admit.ErrInvalidConfig.
func Fallback(local admit.KeyedLimiter) Policy {
	return Policy{kind: fallback, local: local}
}

// FallbackSlots is Fallback for concurrency layers (GuardSlots): local,
// usually this instance's share of the shared slots in memory, grants the
// slots of each request the primary cannot decide. A nil local makes
// GuardSlots fail with an error wrapping admit.ErrInvalidConfig.
func FallbackSlots(local admit.Slots) Policy {
	return Policy{kind: fallback, slots: local}
}

// Breaker returns p as a circuit breaker: once the primary has failed
// GuardConfig.Threshold times in a row (default 5) the Guard stops calling it, and
// p decides every request without waiting on the primary, except one
// request every GuardConfig.ProbeInterval (default 1s), the probe, which calls the
// primary: if it succeeds the Guard switches back to the primary, if it
// fails p decides it too and the breaker stays open. Use it to stop
// hammering a dead store (and spending the timeout on each request) and to
// let it recover. Breaker(Breaker(p)) is Breaker(p).
func Breaker(p Policy) Policy {
	p.breaker = true
	return p
}

// String returns the policy's name: "fail-open", "fail-closed",
// "fallback", with "breaker/" in front for a Breaker.
func (p Policy) String() string {
	s := "none"
	switch p.kind {
	case failOpen:
		s = "fail-open"
	case failClosed:
		s = "fail-closed"
	case fallback:
		s = "fallback"
	}
	if p.breaker {
		s = "breaker/" + s
	}
	return s
}

// suffix is the end of the Rule of the decisions the policy makes.
func (p Policy) suffix() string {
	switch p.kind {
	case failOpen:
		return "fail-open"
	case failClosed:
		return "fail-closed"
	}
	return "fallback"
}
