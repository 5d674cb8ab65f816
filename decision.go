package admit

import (
	"math"
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// InfDuration is the RetryAfter of a request that can never be admitted:
// more events than the burst, or any request under a zero limit.
const InfDuration = time.Duration(math.MaxInt64)

// Decision is the outcome of one request against a limit. A denial is not an
// error: it is a Decision with Allowed false, saying when to come back.
//
// All durations are exact and rounded up to the nanosecond, so a client that
// waits RetryAfter and asks again is admitted (if nothing else consumed the
// capacity meanwhile).
type Decision struct {
	// Allowed reports whether the request was admitted (and its events
	// consumed). A request of n = 0 is always allowed and consumes nothing.
	Allowed bool

	// Limit is the limit that decided, with Burst filled in.
	Limit Limit

	// Remaining is how many events could still be admitted right now,
	// after this decision.
	Remaining int64

	// RetryAfter is how long until this request (the same n) would be
	// admitted: 0 when allowed, InfDuration when it never can be.
	RetryAfter time.Duration

	// ResetAfter is how long until the limit is back to full capacity (0
	// when it is full).
	ResetAfter time.Duration

	// Rule names the limiter, rule or layer that decided; empty unless one
	// was named (see WithName).
	Rule string
}

// decision builds a Decision from a step function's result.
func decision(r algo.Result, l Limit, rule string) Decision {
	return Decision{
		Allowed:    r.Allowed,
		Limit:      l,
		Remaining:  r.Remaining,
		RetryAfter: time.Duration(r.RetryAfter),
		ResetAfter: time.Duration(r.ResetAfter),
		Rule:       rule,
	}
}

// invalidCost is the decision for a negative n.
func invalidCost(l Limit, rule string) Decision {
	return Decision{Limit: l, RetryAfter: InfDuration, Rule: rule}
}
