package httplimit

import (
	"strconv"
	"time"

	"github.com/admit-go/admit"
)

// FieldValues returns the values the middleware writes for decision d in the
// RateLimit-Policy and RateLimit fields, and in Retry-After (whole
// seconds) when d refuses: for servers that hand these fields to others,
// such as a rate-limit service answering a proxy, so that its clients see
// exactly what this package's clients see. ok is false when d names no
// finite limit (the middleware then writes no field).
//
// RateLimit-Policy is `"name";q=Q;w=W`: Q is the burst (the slots of a
// concurrency limit, the events of a quota's period) and W the seconds
// the burst takes to come back, rounded up; a concurrency limit has
// `qu="concurrent-requests"` instead of w. RateLimit is `"name";r=R;t=T`:
// R is what remains, T the seconds until the limit is full again when d
// admits (absent for a concurrency limit), or the seconds until the
// request could be admitted when d refuses (at least 1, at most a year:
// 31536000). A request that can never be admitted (admit.InfDuration)
// gets neither T nor a retry. The name is d.Rule ("default" when empty) as a
// structured-field String.
func FieldValues(d *admit.Decision) (policy, state, retry string, ok bool) {
	if !hasLimit(d) {
		return "", "", "", false
	}
	q := d.Limit.Burst
	if q <= 0 {
		q = d.Limit.Rate
	}
	q = clamp(q)
	conc := d.Kind == admit.KindConcurrency

	var stack [256]byte
	b := appendSFString(stack[:0], policyName(d.Rule))
	head := len(b)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, q, 10)
	if conc {
		b = append(b, `;qu="concurrent-requests"`...)
	} else if w, ok := window(d.Limit, q); ok {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, w, 10)
	}
	policy = string(b)

	b = append(b[:head], ";r="...)
	b = strconv.AppendInt(b, clamp(d.Remaining), 10)
	switch {
	case never(d):
		// No t and no Retry-After: waiting does not help.
	case !d.Allowed:
		secs := ceilDiv(retryAfter(d.RetryAfter), time.Second)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, secs, 10)
		retry = strconv.FormatInt(secs, 10)
	case !conc:
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, ceilDiv(capDuration(d.ResetAfter), time.Second), 10)
	}
	return policy, string(b), retry, true
}
