package server

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/httplimit"
)

// The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers), as
// package httplimit writes them on HTTP responses, for Envoy's rate-limit
// service to hand to Envoy in response_headers_to_add: the same values a
// client of the gateway (httplimit) would see.
const (
	grpcFieldRateLimit       = "RateLimit"
	grpcFieldRateLimitPolicy = "RateLimit-Policy"
	grpcFieldRetryAfter      = "Retry-After"
	// grpcSFMax is the largest Integer of a structured field (RFC 9651).
	grpcSFMax = 999_999_999_999_999
)

// grpcRateLimitFields returns the values of the RateLimit-Policy and RateLimit
// fields for decision d, and of Retry-After (in seconds) when d refuses;
// ok is false when d names no finite limit (nothing to describe).
//
// RateLimit-Policy is `"name";q=Q;w=W`: Q is the burst (the slots of a
// concurrency limit, the events of a quota's period) and W the seconds the
// burst takes to come back (a quota's period), rounded up; a concurrency
// limit has `qu="concurrent-requests"` instead of w. RateLimit is
// `"name";r=R;t=T`: R is what remains, T the seconds until the limit is
// full again when d admits (absent for a concurrency limit), or until the
// request could be admitted when d refuses (at least 1, at most
// httplimit.MaxRetryAfter). The name is d.Rule ("default" when empty) as a
// structured-field String.
func grpcRateLimitFields(d *admit.Decision) (policyField, stateField, retryField string, ok bool) {
	l := d.Limit
	if l.IsUnlimited() || (l.Rate <= 0 && l.Burst <= 0 && l.Period <= 0) {
		return "", "", "", false
	}
	name := d.Rule
	if name == "" {
		name = "default"
	}
	q := l.Burst
	if q <= 0 {
		q = l.Rate
	}
	q = grpcClampSF(q)
	conc := d.Kind == admit.KindConcurrency

	var stack [256]byte
	b := grpcAppendSFString(stack[:0], name)
	head := len(b)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, q, 10)
	if conc {
		b = append(b, `;qu="concurrent-requests"`...)
	} else if w, ok := grpcWindowSeconds(l, q); ok {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, w, 10)
	}
	policyField = string(b)

	b = append(b[:head], ";r="...)
	b = strconv.AppendInt(b, grpcClampSF(d.Remaining), 10)
	switch {
	case !d.Allowed:
		secs := grpcRetrySeconds(d.RetryAfter)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, secs, 10)
		retryField = strconv.FormatInt(secs, 10)
	case !conc:
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, grpcCeilSeconds(min(max(d.ResetAfter, 0), httplimit.MaxRetryAfter)), 10)
	}
	return policyField, string(b), retryField, true
}

// grpcRetrySeconds is the wait a refusal announces, in whole seconds rounded
// up: at least 1 (a refusal that says nothing means "later"), at most
// httplimit.MaxRetryAfter (a request that can never be admitted).
func grpcRetrySeconds(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	return max(grpcCeilSeconds(min(d, httplimit.MaxRetryAfter)), 1)
}

// grpcCeilSeconds is d in seconds rounded up, for d >= 0.
func grpcCeilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

func grpcClampSF(v int64) int64 { return min(max(v, 0), grpcSFMax) }

// grpcWindowSeconds is the time the burst q of l takes to come back,
// q×Period/Rate, in whole seconds rounded up (at least 1, at most the
// largest structured-field Integer); ok is false if l has no rate over
// time.
func grpcWindowSeconds(l admit.Limit, q int64) (int64, bool) {
	if l.Rate <= 0 || l.Period <= 0 || q <= 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(q), uint64(l.Period))
	if hi >= uint64(l.Rate) {
		return grpcSFMax, true
	}
	ns, rem := bits.Div64(hi, lo, uint64(l.Rate))
	if rem != 0 {
		ns++
	}
	secs := ns / uint64(time.Second)
	if ns%uint64(time.Second) != 0 {
		secs++
	}
	return int64(min(max(secs, 1), grpcSFMax)), true
}

// grpcAppendSFString appends s as a structured-field String (RFC 9651):
// quoted, with '"' and '\' escaped; bytes outside printable ASCII, which a
// String cannot hold, become '?'.
func grpcAppendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
