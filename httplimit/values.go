package httplimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/admit-go/admit"
)

// fieldValues are the values of the fields that change from one decision
// to the next (RateLimit, X-RateLimit-Remaining, X-RateLimit-Reset,
// Retry-After), substrings of one string, and the numbers they were built
// from (-1: absent; on a refusal, Retry-After's is t).
type fieldValues struct {
	r, t, reset int64
	n           int
	keys        [4]uint8 // indexes in fieldNames
	vals        [4]string
}

// The keys of the fields of fieldValues, by index.
const (
	fRateLimit = iota
	fRemaining
	fReset
	fRetry
)

var fieldNames = [...]string{fRateLimit: keyRateLimit, fRemaining: keyRemaining, fReset: keyReset, fRetry: keyRetry}

// values fills v with the values of a's fields for remaining r, the
// RateLimit field's t, X-RateLimit-Reset's reset and Retry-After's retry
// (t, reset and retry are left out when negative). The legacy fields and
// Retry-After reuse the digits of the IETF fields where the numbers are
// the same.
func (a *answer) values(v *fieldValues, r, t, reset, retry int64) {
	var stack [256]byte
	var start, end [4]int
	v.r, v.t, v.reset = r, t, reset
	b := stack[:0]
	n := 0
	add := func(key uint8, s, e int) {
		v.keys[n], start[n], end[n] = key, s, e
		n++
	}
	// The spans of r's, t's and reset's digits in b (-1: not there yet).
	rs, re, ts, te, xs, xe := -1, -1, -1, -1, -1, -1
	if a.fields {
		if a.policy != nil {
			b = append(b, a.rlHead...)
			rs = len(b)
			b = strconv.AppendInt(b, r, 10)
			re = len(b)
			if t >= 0 {
				b = append(b, ";t="...)
				ts = len(b)
				b = strconv.AppendInt(b, t, 10)
				te = len(b)
			}
			add(fRateLimit, 0, len(b))
		}
		if a.limitV != nil {
			if rs < 0 {
				rs = len(b)
				b = strconv.AppendInt(b, r, 10)
				re = len(b)
			}
			add(fRemaining, rs, re)
			if reset >= 0 {
				if ts >= 0 && t == reset {
					xs, xe = ts, te
				} else {
					xs = len(b)
					b = strconv.AppendInt(b, reset, 10)
					xe = len(b)
				}
				add(fReset, xs, xe)
			}
		}
	}
	if retry >= 0 {
		switch {
		case ts >= 0 && t == retry:
			add(fRetry, ts, te)
		case xs >= 0 && reset == retry:
			add(fRetry, xs, xe)
		default:
			s := len(b)
			b = strconv.AppendInt(b, retry, 10)
			add(fRetry, s, len(b))
		}
	}
	s := string(b)
	for i := range n {
		v.vals[i] = s[start[i]:end[i]]
	}
	v.n = n
}

// setShared sets a's fields with values v on h, sharing their slices.
func (a *answer) setShared(h http.Header, v *fieldValues) {
	if a.policy != nil {
		h[keyPolicy] = a.policy
	}
	if a.limitV != nil {
		h[keyLimit] = a.limitV
	}
	for i := range v.n {
		h[fieldNames[v.keys[i]]] = v.vals[i : i+1 : i+1]
	}
}

// setFresh sets a's fields with values v on h, in one new []string: for
// responses that code of the caller's writes (the handler, a
// RefusalHandler), which may write into the slices.
func (a *answer) setFresh(h http.Header, v *fieldValues) {
	vals := make([]string, 2+v.n)
	n := 0
	if a.policy != nil {
		vals[n] = a.policy[0]
		h[keyPolicy] = vals[n : n+1 : n+1]
		n++
	}
	if a.limitV != nil {
		vals[n] = a.limitV[0]
		h[keyLimit] = vals[n : n+1 : n+1]
		n++
	}
	for i := range v.n {
		vals[n] = v.vals[i]
		h[fieldNames[v.keys[i]]] = vals[n : n+1 : n+1]
		n++
	}
}

// hasLimit reports whether d names a finite limit worth describing.
func hasLimit(d *admit.Decision) bool {
	l := d.Limit
	return l.Rate != admit.Inf && (l.Rate > 0 || l.Burst > 0 || l.Period > 0)
}

// setFields sets the rate-limit fields of an admitted request's decision.
func (m *Middleware) setFields(h http.Header, d *admit.Decision) {
	if !hasLimit(d) {
		return
	}
	a := m.answerFor(d, 0)
	var (
		v        fieldValues
		t, reset int64 = -1, -1
	)
	if !a.conc {
		reset = ceilDiv(capDuration(d.ResetAfter), time.Second)
		t = reset
	}
	a.values(&v, clamp(d.Remaining), t, reset, -1)
	a.setFresh(h, &v)
}
