package admit

import (
	"math"
	"strconv"
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
	// was named (see Options.Name).
	Rule string

	// Kind says what sort of limit decided: a rate (the zero value), a
	// concurrency limit or a calendar quota. The meaning of Limit and
	// Remaining follows it (see Kind).
	Kind Kind

	// Delay is how long the caller must wait before acting on an admitted
	// request that was allowed to wait (Request.MaxDelay): its slot comes
	// then, and its events count from then. 0 for a request that may act
	// at once and for every denial. Remaining is then 0 and ResetAfter
	// counts the delayed events.
	Delay time.Duration

	// TimeToAct is, when Delay > 0, the instant the slot comes, on the
	// limiter's time line: Request.At plus Delay, or, for a request
	// without an instant, the limiter's clock plus Delay (Redis's TIME for
	// a Redis limiter, so it may differ from the local clock). It is the
	// zero Time when Delay is 0. A caller that will not use its slot gives
	// it back with a refund at that instant (Refunder.Refund with r.At =
	// TimeToAct, as Wait does): the events come back if no request
	// delayed after it relies on them (it is the key's latest delayed
	// admission), and otherwise the slot stays held until it passes.
	TimeToAct time.Time
}

// Kind is the sort of limit a Decision comes from.
type Kind uint8

const (
	// KindRate is a rate limit: Limit is Rate events per Period with a
	// Burst, and Remaining the events that could be admitted right now.
	KindRate Kind = iota
	// KindConcurrency is a limit on events in flight: Limit.Rate (and
	// Burst) is the number of slots, Limit.Period is 0, and Remaining the
	// slots free after this decision. Capacity comes back when holders
	// release it, not with time, so RetryAfter is an estimate at best (see
	// package concurrency).
	KindConcurrency
	// KindQuota is a calendar quota: Limit.Rate (and Burst) events per
	// calendar period, Limit.Period the length of the current period (a
	// day with a daylight-saving change lasts 23 or 25 hours), Remaining
	// what is left of it, and ResetAfter the time until the period ends
	// (see package quota).
	KindQuota
)

var kindNames = [...]string{KindRate: "rate", KindConcurrency: "concurrency", KindQuota: "quota"}

// String returns "rate", "concurrency" or "quota".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
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
