package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
)

// apiMaxDuration caps the durations the API reports: a year. (A request
// that can never be admitted, RetryAfter admit.InfDuration, says so with
// "never": true and no retry_after_ms or Retry-After.)
const apiMaxDuration = 365 * 24 * time.Hour

// apiCeilMillis returns d in milliseconds, rounded up, within [0, a year].
func apiCeilMillis(d time.Duration) int64 {
	d = min(max(d, 0), apiMaxDuration)
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// apiCeilSeconds returns d in seconds, rounded up, within [0, a year].
func apiCeilSeconds(d time.Duration) int64 {
	d = min(max(d, 0), apiMaxDuration)
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// apiAppendMillis appends d in milliseconds, exactly: "1000", "0.5",
// "0.000001".
func apiAppendMillis(b []byte, d time.Duration) []byte {
	b = strconv.AppendInt(b, int64(d/time.Millisecond), 10)
	frac := int64(d % time.Millisecond)
	if frac == 0 {
		return b
	}
	var digits [6]byte
	for i := 5; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 6
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// apiAppendJSONString appends s as a JSON string. Control characters are
// escaped; invalid UTF-8 becomes U+FFFD.
func apiAppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func apiAppendBool(b []byte, name string, v bool) []byte {
	if !v {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, `":true`...)
}

func apiAppendInt(b []byte, name string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// apiFinite reports whether l is a limit worth describing: not the zero
// Limit (no limit asked) and not unlimited.
func apiFinite(l admit.Limit) bool { return l != (admit.Limit{}) && l.Rate != admit.Inf }

// apiAppendLimit appends ,"kind":..,"limit":{..},"remaining":..,
// "retry_after_ms":..,"reset_after_ms":.. for a finite limit; for a
// request that can never be admitted, "never":true instead of
// retry_after_ms.
func apiAppendLimit(b []byte, kind admit.Kind, l admit.Limit, remaining int64, retry, reset time.Duration) []byte {
	b = append(b, `,"kind":"`...)
	b = append(b, kind.String()...)
	b = append(b, `","limit":{"rate":`...)
	b = strconv.AppendInt(b, l.Rate, 10)
	if l.Period > 0 {
		b = append(b, `,"period_ms":`...)
		b = apiAppendMillis(b, l.Period)
	}
	burst := l.Burst
	if burst == 0 {
		burst = l.Rate
	}
	b = append(b, `,"burst":`...)
	b = strconv.AppendInt(b, burst, 10)
	b = append(b, '}')
	b = apiAppendInt(b, "remaining", max(remaining, 0))
	never := retry == admit.InfDuration
	if !never {
		b = apiAppendInt(b, "retry_after_ms", apiCeilMillis(retry))
	}
	b = apiAppendInt(b, "reset_after_ms", apiCeilMillis(reset))
	return apiAppendBool(b, "never", never)
}

// apiAppendDecision appends the decision object.
func apiAppendDecision(b []byte, d *admit.Decision) []byte {
	b = append(b, `{"allowed":`...)
	b = strconv.AppendBool(b, d.Allowed)
	if d.Rule != "" {
		b = append(b, `,"rule":`...)
		b = apiAppendJSONString(b, d.Rule)
	}
	if apiFinite(d.Limit) {
		b = apiAppendLimit(b, d.Kind, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
	} else if d.Limit.Rate == admit.Inf {
		b = apiAppendBool(b, "unlimited", true)
	}
	return append(apiAppendDelay(b, d.Delay), '}')
}

// apiAppendDelay appends ,"delay_ms":.. for an admission with a delay (a
// rule's delay: the caller should wait that long before acting, rounded
// up to the millisecond).
func apiAppendDelay(b []byte, d time.Duration) []byte {
	if d <= 0 {
		return b
	}
	return apiAppendInt(b, "delay_ms", apiCeilMillis(d))
}

// apiAppendStatus appends a descriptor's status object.
func apiAppendStatus(b []byte, st *policy.Status) []byte {
	b = append(b, `{"code":"`...)
	b = append(b, st.Code.String()...)
	b = append(b, '"')
	if st.Rule != "" {
		b = append(b, `,"rule":`...)
		b = apiAppendJSONString(b, st.Rule)
	}
	if st.Tier != "" {
		b = append(b, `,"tier":`...)
		b = apiAppendJSONString(b, st.Tier)
	}
	if d := &st.Decision; apiFinite(d.Limit) {
		b = apiAppendLimit(b, d.Kind, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
		b = apiAppendDelay(b, d.Delay)
	}
	b = apiAppendBool(b, "shadow", st.Shadow)
	b = apiAppendBool(b, "would_refuse", st.WouldRefuse)
	b = apiAppendBool(b, "exempt", st.Exempt)
	b = apiAppendBool(b, "unlimited", st.Unlimited)
	b = apiAppendBool(b, "replaced", st.Replaced)
	b = apiAppendBool(b, "override", st.Override)
	b = apiAppendBool(b, "skipped", st.Skipped)
	if st.Err != nil {
		b = append(b, `,"error":"`...)
		b = append(b, apiErrorKind(st.Err)...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// apiErrorKind describes a limit's error without its text (which may name
// addresses of the store): "store failure" for policy.ErrStoreFailed (the
// store failed and the rule's failure policy decided), "key too long", or
// for another error "store failure" if it is one (compose.IsFailure), else
// "error".
func apiErrorKind(err error) string {
	switch {
	case errors.Is(err, policy.ErrStoreFailed):
		return "store failure"
	case errors.Is(err, admit.ErrKeyTooLong):
		return "key too long"
	case compose.IsFailure(err):
		return "store failure"
	}
	return "error"
}

// apiAppendResult appends the members of a check's answer after "allowed":
// "decision" and "statuses".
func apiAppendResult(b []byte, res *policy.Result) []byte {
	if res.ShadowRefused {
		b = append(b, `,"shadow_refused":true`...)
	}
	b = append(b, `,"decision":`...)
	b = apiAppendDecision(b, &res.Decision)
	b = append(b, `,"statuses":[`...)
	for i := range res.Statuses {
		if i > 0 {
			b = append(b, ',')
		}
		b = apiAppendStatus(b, &res.Statuses[i])
	}
	return append(b, ']')
}

// The canonical keys of the rate-limit fields.
const (
	apiKeyRateLimit       = "Ratelimit"
	apiKeyRateLimitPolicy = "Ratelimit-Policy"
	apiKeyRetryAfter      = "Retry-After"
	apiKeyContentType     = "Content-Type"
)

var apiJSONContentType = []string{"application/json"}

// apiSetFields sets the IETF RateLimit-Policy and RateLimit fields of
// decision d (httplimit.FieldValues: the values package httplimit
// writes), and Retry-After on a refusal when retry is set.
func apiSetFields(h http.Header, d *admit.Decision, retry bool) {
	pol, state, ra, ok := httplimit.FieldValues(d)
	if !ok {
		if retry && !d.Allowed && d.RetryAfter != admit.InfDuration {
			h[apiKeyRetryAfter] = []string{strconv.FormatInt(max(apiCeilSeconds(d.RetryAfter), 1), 10)}
		}
		return
	}
	h[apiKeyRateLimitPolicy] = []string{pol}
	h[apiKeyRateLimit] = []string{state}
	if retry && ra != "" {
		h[apiKeyRetryAfter] = []string{ra}
	}
}
