package httplimit

import (
	"io"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/admit-go/admit"
)

// Canonical header keys (textproto.CanonicalMIMEHeaderKey), assigned to the
// header map directly. Field names are case-insensitive, so "Ratelimit" is
// the draft's "RateLimit".
const (
	keyPolicy    = "Ratelimit-Policy"
	keyRateLimit = "Ratelimit"
	keyLimit     = "X-Ratelimit-Limit"
	keyRemaining = "X-Ratelimit-Remaining"
	keyReset     = "X-Ratelimit-Reset"
	keyRetry     = "Retry-After"
	keyCType     = "Content-Type"
)

const (
	ctypeJSON    = "application/json"
	ctypeProblem = "application/problem+json"
	// sfMax is the largest Integer of a structured field (RFC 9651).
	sfMax = 999_999_999_999_999
	// defaultPolicy names the policy of a decision without a Rule.
	defaultPolicy = "default"
)

// The fields, by index: fieldNames[i] is the canonical key of field i.
const (
	fPolicy = iota
	fRateLimit
	fLimit
	fRemaining
	fReset
	fRetry
	fCType
	maxFields
)

var fieldNames = [maxFields]string{keyPolicy, keyRateLimit, keyLimit, keyRemaining, keyReset, keyRetry, keyCType}

// fieldSet records which fields a response has and where their values are
// in a byte buffer; the buffer itself is passed by value, so that a buffer
// on the stack stays there. The Content-Type, when set, is ctype.
type fieldSet struct {
	n     int
	name  [maxFields]uint8
	start [maxFields]int32
	end   [maxFields]int32
	ctype string
}

func (f *fieldSet) add(field, start, end int) {
	f.name[f.n], f.start[f.n], f.end[f.n] = uint8(field), int32(start), int32(end)
	f.n++
}

// flush sets the fields on h, with one string for every value built in b
// and one []string backing all of them, and returns the string's tail from
// offset body on.
func (f *fieldSet) flush(h http.Header, b []byte, body int) string {
	s := string(b)
	vals := make([]string, f.n)
	for i := range f.n {
		if f.name[i] == fCType {
			vals[i] = f.ctype
		} else {
			vals[i] = s[f.start[i]:f.end[i]]
		}
		h[fieldNames[f.name[i]]] = vals[i : i+1 : i+1]
	}
	return s[body:]
}

// hasLimit reports whether d names a finite limit worth describing.
func hasLimit(d *admit.Decision) bool {
	l := d.Limit
	return !l.IsUnlimited() && (l.Rate > 0 || l.Burst > 0 || l.Period > 0)
}

// setFields sets the rate-limit fields of an admitted request's decision.
func (m *Middleware) setFields(h http.Header, d *admit.Decision) {
	if !hasLimit(d) {
		return
	}
	var (
		stack [256]byte
		f     fieldSet
	)
	b := m.appendFields(stack[:0], &f, d, false, 0)
	f.flush(h, b, len(b))
}

// refuse answers a refused request with status, d's fields and Retry-After,
// and the body (or calls the RefusalHandler).
func (m *Middleware) refuse(w http.ResponseWriter, r *http.Request, d *admit.Decision, status int) {
	var (
		stack [320]byte
		f     fieldSet
	)
	b := stack[:0]
	ra := retryAfter(d.RetryAfter)
	raSecs := ceilDiv(ra, time.Second)
	if m.fields != 0 && hasLimit(d) {
		b = m.appendFields(b, &f, d, true, raSecs)
	}
	if f.n > fRateLimit && f.name[fRateLimit] == fRateLimit {
		// The RateLimit field's t is the Retry-After: its digits end it.
		end := int(f.end[fRateLimit])
		f.add(fRetry, end-digits(raSecs), end)
	} else {
		start := len(b)
		b = strconv.AppendInt(b, raSecs, 10)
		f.add(fRetry, start, len(b))
	}
	if m.refusal != nil {
		f.flush(w.Header(), b, len(b))
		m.refusal(w, r, *d, status)
		return
	}
	f.ctype = ctypeJSON
	if m.problem {
		f.ctype = ctypeProblem
	}
	f.add(fCType, 0, 0)
	body := len(b)
	b = m.appendBody(b, d, status, ra, raSecs)
	s := f.flush(w.Header(), b, body)
	w.WriteHeader(status)
	writeString(w, s)
}

// appendFields appends the rate-limit fields of d; t is the RateLimit
// field's t on a refusal (the Retry-After).
func (m *Middleware) appendFields(b []byte, f *fieldSet, d *admit.Decision, refusal bool, t int64) []byte {
	conc := d.Kind == admit.KindConcurrency
	q := d.Limit.Burst
	if q <= 0 {
		q = d.Limit.Rate
	}
	q = clamp(q)
	r := clamp(d.Remaining)
	var reset int64 = -1
	if !conc {
		reset = ceilDiv(capDuration(d.ResetAfter), time.Second)
	}
	if !refusal {
		t = reset
	}
	// The legacy fields reuse the digits of the IETF fields where the
	// numbers are the same (q, r, and t on an admission).
	var qs, qe, rs, re, ts, te int
	if m.fields&IETFFields != 0 {
		start := len(b)
		b = appendSFString(b, policyName(d.Rule))
		b = append(b, ";q="...)
		qs = len(b)
		b = strconv.AppendInt(b, q, 10)
		qe = len(b)
		if conc {
			b = append(b, `;qu="concurrent-requests"`...)
		} else if w, ok := window(d.Limit, q); ok {
			b = append(b, ";w="...)
			b = strconv.AppendInt(b, w, 10)
		}
		f.add(fPolicy, start, len(b))
		name := b[start : qs-len(";q=")]
		start = len(b)
		b = append(b, name...)
		b = append(b, ";r="...)
		rs = len(b)
		b = strconv.AppendInt(b, r, 10)
		re = len(b)
		if t >= 0 {
			b = append(b, ";t="...)
			ts = len(b)
			b = strconv.AppendInt(b, t, 10)
			te = len(b)
		}
		f.add(fRateLimit, start, len(b))
	}
	if m.fields&LegacyFields != 0 {
		if qe == 0 {
			qs = len(b)
			b = strconv.AppendInt(b, q, 10)
			qe = len(b)
			rs = len(b)
			b = strconv.AppendInt(b, r, 10)
			re = len(b)
		}
		f.add(fLimit, qs, qe)
		f.add(fRemaining, rs, re)
		if reset >= 0 {
			if refusal || te == 0 {
				ts = len(b)
				b = strconv.AppendInt(b, reset, 10)
				te = len(b)
			}
			f.add(fReset, ts, te)
		}
	}
	return b
}

// appendBody appends the JSON (or problem+json) body of a refusal.
func (m *Middleware) appendBody(b []byte, d *admit.Decision, status int, ra time.Duration, raSecs int64) []byte {
	name := policyName(d.Rule)
	ms := ceilDiv(ra, time.Millisecond)
	b = append(b, '{')
	if m.problem {
		typ, title := m.problemType, m.problemText
		if typ == "" {
			typ, title = QuotaExceeded, "Quota Exceeded"
			if status == http.StatusServiceUnavailable {
				typ, title = TemporaryReducedCapacity, "Temporary Reduced Capacity"
			}
		}
		b = append(b, `"type":`...)
		b = appendJSONString(b, typ)
		b = append(b, `,"title":`...)
		b = appendJSONString(b, title)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"detail":`...)
		b = appendDetail(b, d, name, raSecs)
		b = append(b, `,"violated-policies":[`...)
		b = appendJSONString(b, name)
		b = append(b, "],"...)
	}
	b = append(b, `"code":"RATE_LIMIT","limit_dim":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, ms, 10)
	switch d.Kind {
	case admit.KindConcurrency:
		b = append(b, `,"kind":"CONCURRENCY_LIMIT"`...)
	case admit.KindQuota:
		b = append(b, `,"kind":"QUOTA_EXCEEDED"`...)
	}
	return append(b, "}\n"...)
}

// appendDetail appends a problem's human-readable explanation, as a JSON
// string.
func appendDetail(b []byte, d *admit.Decision, name string, secs int64) []byte {
	b = append(b, '"')
	switch {
	case strings.HasSuffix(d.Rule, "fail-closed"):
		b = append(b, "The rate limiter is unavailable"...)
	default:
		switch d.Kind {
		case admit.KindConcurrency:
			b = append(b, `Concurrency limit \"`...)
		case admit.KindQuota:
			b = append(b, `Quota \"`...)
		default:
			b = append(b, `Rate limit \"`...)
		}
		n := len(b)
		b = appendJSONString(b, name)
		b = append(b[:n], b[n+1:len(b)-1]...) // the escaped name without its quotes
		switch d.Kind {
		case admit.KindConcurrency:
			b = append(b, `\" reached`...)
		case admit.KindQuota:
			b = append(b, `\" exhausted`...)
		default:
			b = append(b, `\" exceeded`...)
		}
	}
	b = append(b, "; retry after "...)
	b = strconv.AppendInt(b, secs, 10)
	if secs == 1 {
		b = append(b, " second."...)
	} else {
		b = append(b, " seconds."...)
	}
	return append(b, '"')
}

// badBody precomputes the answer to a request that cannot be keyed.
func (m *Middleware) badBody(status int, code, text string) refusalBody {
	b := []byte{'{'}
	ctype := ctypeJSON
	if m.problem {
		ctype = ctypeProblem
		b = append(b, `"type":"about:blank","title":`...)
		b = appendJSONString(b, http.StatusText(status))
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, text)
		b = append(b, ',')
	}
	b = append(b, `"code":`...)
	b = appendJSONString(b, code)
	b = append(b, "}\n"...)
	return refusalBody{status: status, ctype: ctype, body: string(b)}
}

func writeString(w http.ResponseWriter, s string) { _, _ = io.WriteString(w, s) }

func policyName(rule string) string {
	if rule == "" {
		return defaultPolicy
	}
	return rule
}

// retryAfter is the wait a refusal announces: d, at least 1 s when d says
// nothing (0), at most MaxRetryAfter.
func retryAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	return capDuration(d)
}

func capDuration(d time.Duration) time.Duration {
	if d > MaxRetryAfter {
		return MaxRetryAfter
	}
	return max(d, 0)
}

// ceilDiv is d/unit rounded up, for d >= 0.
func ceilDiv(d, unit time.Duration) int64 {
	q := int64(d / unit)
	if d%unit != 0 {
		q++
	}
	return q
}

// digits is the number of decimal digits of v >= 0.
func digits(v int64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

func clamp(v int64) int64 { return min(max(v, 0), sfMax) }

// window is the time the burst q of l takes to come back, q×Period/Rate,
// in whole seconds rounded up (at least 1, at most sfMax); ok is false if l
// has no rate over time.
func window(l admit.Limit, q int64) (int64, bool) {
	if l.Rate <= 0 || l.Period <= 0 || q <= 0 {
		return 0, false
	}
	// ns = ceil(q×Period/Rate) in 128 bits, then seconds rounded up.
	hi, lo := bits.Mul64(uint64(q), uint64(l.Period))
	if hi >= uint64(l.Rate) {
		return sfMax, true
	}
	ns, rem := bits.Div64(hi, lo, uint64(l.Rate))
	if rem != 0 {
		ns++
	}
	secs := ns / uint64(time.Second)
	if ns%uint64(time.Second) != 0 {
		secs++
	}
	return int64(min(max(secs, 1), sfMax)), true
}

// appendSFString appends s as a structured-field String (RFC 9651): quoted,
// '"' and '\' escaped. Bytes outside printable ASCII, which a String
// cannot hold, become '?'.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	if plain(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
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

// plain reports whether s is printable ASCII without '"' or '\\': the
// same as a structured-field String and as a JSON string.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	if plain(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
