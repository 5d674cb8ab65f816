package httplimit

import (
	"io"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// Shared values of the Content-Type field. Like the cached values of
// answer and fieldValues, they are assigned to the header maps of many
// responses: len = cap = 1, so that Header.Add copies rather than appends
// in place, and nothing writes into them (net/http, like Header.Set,
// replaces a value's slice and never writes into it).
var (
	ctypeJSONValue    = []string{ctypeJSON}
	ctypeProblemValue = []string{ctypeProblem}
)

// answerCacheSize bounds the answers a Middleware keeps: the rules, limits
// and kinds whose responses are built from cached parts. A runaway set of
// rules costs a rebuild per request, never memory.
const answerCacheSize = 16

// answerCache holds the answers a Middleware built last, for at most
// answerCacheSize (Rule, Limit, Kind, status): slots fill in order and are
// then replaced round robin. Readers load the slots without a lock; an answer
// is never mutated once stored, but for its memo of field values.
type answerCache struct {
	slots [answerCacheSize]atomic.Pointer[answer]
	next  atomic.Uint32
}

// find returns the answer for d, refused with status, or for d on an
// admission (status 0: any status will do); nil if there is none.
func (c *answerCache) find(d *admit.Decision, status int) *answer {
	for i := range c.slots {
		a := c.slots[i].Load()
		if a == nil {
			return nil
		}
		if a.limit == d.Limit && a.kind == d.Kind && (status == 0 || a.status == status) && a.rule == d.Rule {
			return a
		}
	}
	return nil
}

func (c *answerCache) add(a *answer) {
	c.slots[(c.next.Add(1)-1)%answerCacheSize].Store(a)
}

// answer holds what the responses to decisions of one Rule, Limit and Kind
// (refused with one status) have in common: the constant field values,
// the RateLimit value's head and the refusal body's text around its
// numbers, all escaped and formatted once. Its slices are shared by every
// response that uses them, and never written into.
type answer struct {
	rule   string
	limit  admit.Limit
	kind   admit.Kind
	status int // the refusal status the body was built for

	consts [2]string                   // the backing of policy and limitV
	fields bool                        // the responses carry rate-limit fields
	conc   bool                        // a concurrency limit: no X-RateLimit-Reset, no t on admission
	policy []string                    // RateLimit-Policy's value, nil without IETFFields
	limitV []string                    // X-RateLimit-Limit's value, nil without LegacyFields
	rlHead string                      // the RateLimit value up to r's digits: `"api";r=`
	ctype  []string                    // the refusal body's Content-Type
	head   string                      // the refusal body up to its first number
	mid    string                      // problem details: after the detail's seconds, up to retry_after_ms's digits
	tail   string                      // after retry_after_ms's digits
	last   atomic.Pointer[fieldValues] // the last refusal's values, replaced when its numbers differ
}

// answerFor returns the answer for d (cached, or built and cached); status
// is the refusal's, or 0 for an admission.
func (m *Middleware) answerFor(d *admit.Decision, status int) *answer {
	if a := m.answers.find(d, status); a != nil {
		return a
	}
	if status == 0 {
		status = m.status
	}
	a := m.newAnswer(d, status)
	m.answers.add(a)
	return a
}

// newAnswer builds the answer for d refused with status. Its texts are
// appended to one buffer and sliced from one string: an answer costs three
// allocations (the answer, the string, and the buffer if a long Rule
// overflows the stack).
func (m *Middleware) newAnswer(d *admit.Decision, status int) *answer {
	a := &answer{rule: d.Rule, limit: d.Limit, kind: d.Kind, status: status, ctype: ctypeJSONValue}
	name := policyName(d.Rule)
	var (
		stack [512]byte
		sp    answerSpans
	)
	b := stack[:0]
	if m.fields != 0 && hasLimit(d) {
		a.fields = true
		a.conc = d.Kind == admit.KindConcurrency
		b = m.appendFieldTexts(b, &sp, d, name, a.conc)
	}
	sp.hs = len(b)
	if m.problem {
		a.ctype = ctypeProblemValue
		b = m.appendProblemTexts(b, &sp, d, name, status)
	} else {
		b = append(b, `{"code":"RATE_LIMIT","limit_dim":`...)
		b = appendJSONString(b, name)
		b = append(b, fieldRetry...)
		sp.he = len(b)
	}
	a.setTexts(string(b), &sp, m.fields&LegacyFields != 0)
	a.tail = bodyTail(d.Kind)
	return a
}

// answerSpans are the spans, in the buffer newAnswer fills, of the texts an
// answer keeps: [rs:re] the RateLimit head, [ps:pe] the RateLimit-Policy
// value, [ls:le] the X-RateLimit-Limit value, [hs:he] the body's head and
// [ms:me] the problem details' mid. An empty span is a text not written.
type answerSpans struct {
	rs, re, ps, pe, ls, le, hs, he, ms, me int
}

// appendFieldTexts appends to b the constant texts of d's rate-limit fields,
// named name, that m sends, and records their spans in sp: the RateLimit
// head and RateLimit-Policy value with IETFFields, the X-RateLimit-Limit
// value (the quota within the policy's when both are sent) with
// LegacyFields. conc is whether d is a concurrency limit.
func (m *Middleware) appendFieldTexts(b []byte, sp *answerSpans, d *admit.Decision, name string, conc bool) []byte {
	q := d.Limit.Burst
	if q <= 0 {
		q = d.Limit.Rate
	}
	q = clamp(q)
	if m.fields&IETFFields != 0 {
		sp.rs = len(b)
		b = appendSFString(b, name)
		ne := len(b)
		b = append(b, ";r="...)
		sp.re = len(b)
		sp.ps = len(b)
		b = append(b, b[sp.rs:ne]...)
		b = append(b, ";q="...)
		sp.ls = len(b)
		b = strconv.AppendInt(b, q, 10)
		sp.le = len(b)
		if conc {
			b = append(b, `;qu="concurrent-requests"`...)
		} else if w, ok := window(d.Limit, q); ok {
			b = append(b, ";w="...)
			b = strconv.AppendInt(b, w, 10)
		}
		sp.pe = len(b)
	}
	if m.fields&LegacyFields != 0 && sp.le == 0 {
		sp.ls = len(b)
		b = strconv.AppendInt(b, q, 10)
		sp.le = len(b)
	}
	return b
}

// appendProblemTexts appends to b the problem details body (RFC 9457) of d
// refused with status, named name, around its numbers, and records in sp
// the spans of its head (up to the detail's seconds) and mid (after them,
// up to retry_after_ms's digits).
func (m *Middleware) appendProblemTexts(b []byte, sp *answerSpans, d *admit.Decision, name string, status int) []byte {
	typ, title := m.problemType, m.problemText
	if typ == "" {
		typ, title = quotaExceeded, "Quota Exceeded"
		if status == http.StatusServiceUnavailable {
			typ, title = temporaryReducedCapacity, "Temporary Reduced Capacity"
		}
	}
	b = append(b, `{"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"detail":`...)
	b = appendDetailHead(b, d, name)
	sp.he = len(b)
	sp.ms = len(b)
	b = append(b, `,"violated-policies":[`...)
	b = appendJSONString(b, name)
	b = append(b, `],"code":"RATE_LIMIT","limit_dim":`...)
	b = appendJSONString(b, name)
	b = append(b, fieldRetry...)
	sp.me = len(b)
	return b
}

// setTexts slices a's texts from s, the string of the buffer sp indexes;
// legacy is whether X-RateLimit-Limit is sent.
func (a *answer) setTexts(s string, sp *answerSpans, legacy bool) {
	if sp.pe > 0 {
		a.consts[0] = s[sp.ps:sp.pe]
		a.policy = a.consts[0:1:1]
		a.rlHead = s[sp.rs:sp.re]
	}
	if legacy && a.fields {
		a.consts[1] = s[sp.ls:sp.le]
		a.limitV = a.consts[1:2:2]
	}
	a.head, a.mid = s[sp.hs:sp.he], s[sp.ms:sp.me]
}

// bodyTail is the end of a refusal body for a decision of kind: after
// retry_after_ms's digits, naming a concurrency limit or a quota.
func bodyTail(kind admit.Kind) string {
	switch kind {
	case admit.KindConcurrency:
		return `,"kind":"CONCURRENCY_LIMIT"}` + "\n"
	case admit.KindQuota:
		return `,"kind":"QUOTA_EXCEEDED"}` + "\n"
	default:
		return "}\n"
	}
}

// bodyPool holds the buffers refusal bodies are written from.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// maxPooledBody is the capacity beyond which a body buffer is not pooled.
const maxPooledBody = 4 << 10

// refuse answers a refused request with status, d's fields and Retry-After
// (its retry time jittered by Config.RetryJitter), and the body (or calls the RefusalHandler). The field values come from
// the answer's memo when the last refusal under the same answer had the
// same numbers, as the refusals of a burst mostly do: then a refusal
// allocates nothing.
func (m *Middleware) refuse(w http.ResponseWriter, r *http.Request, d *admit.Decision, status int) {
	if m.jitter.Fraction > 0 {
		jd := m.jitter.Apply(*d)
		d = &jd
	}
	a := m.answerFor(d, status)
	nev := never(d)
	ra := retryAfter(d.RetryAfter)
	raSecs := ceilDiv(ra, time.Second)
	if nev {
		raSecs = -1 // no Retry-After, no t: waiting does not help
	}
	var rem, reset int64 = -1, -1
	if a.fields {
		rem = clamp(d.Remaining)
		if !a.conc {
			reset = ceilDiv(capDuration(d.ResetAfter), time.Second)
		}
	}
	v := a.last.Load()
	if v == nil || v.r != rem || v.t != raSecs || v.reset != reset {
		v = new(fieldValues)
		a.values(v, rem, raSecs, reset, raSecs)
		a.last.Store(v)
	}
	h := w.Header()
	if m.refusal != nil {
		a.setFresh(h, v)
		m.refusal(w, r, *d, status)
		return
	}
	a.setShared(h, v)
	h[keyCType] = a.ctype
	w.WriteHeader(status)
	bp := bodyPool.Get().(*[]byte)
	b := (*bp)[:0]
	switch {
	case nev && m.problem:
		b = append(b, a.head[:len(a.head)-len(detailRetry)]...)
		b = append(b, detailNever...)
		b = append(b, a.mid[:len(a.mid)-len(fieldRetry)]...)
		b = append(b, fieldNever...)
	case nev:
		b = append(b, a.head[:len(a.head)-len(fieldRetry)]...)
		b = append(b, fieldNever...)
	case m.problem:
		b = append(b, a.head...)
		b = appendDetailTail(b, raSecs)
		b = append(b, a.mid...)
		b = strconv.AppendInt(b, ceilDiv(ra, time.Millisecond), 10)
	default:
		b = append(b, a.head...)
		b = strconv.AppendInt(b, ceilDiv(ra, time.Millisecond), 10)
	}
	b = append(b, a.tail...)
	_, _ = w.Write(b)
	if cap(b) <= maxPooledBody {
		*bp = b
		bodyPool.Put(bp)
	}
}

// The texts a refusal body ends its head with, and what replaces them for
// a request that can never be admitted.
const (
	fieldRetry  = `,"retry_after_ms":`
	fieldNever  = `,"never":true`
	detailRetry = "; retry after "
	detailNever = `; the request costs more than the limit ever allows, and can never be admitted."`
)

// never reports whether d refuses a request that can never be admitted,
// whatever it waits: one that costs more than the limit's burst, or is
// limited to 0 (d.RetryAfter is admit.InfDuration). The middleware
// answers it without Retry-After and without the RateLimit field's t,
// and its body says "never":true instead of retry_after_ms, since
// retrying cannot help; FieldValues likewise.
func never(d *admit.Decision) bool {
	return !d.Allowed && d.RetryAfter == admit.InfDuration
}

// appendDetailHead appends a problem's human-readable explanation, as a
// JSON string, up to the seconds to wait; appendDetailTail ends it.
func appendDetailHead(b []byte, d *admit.Decision, name string) []byte {
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
	return append(b, detailRetry...)
}

// appendDetailTail appends the end of a problem's explanation: the
// seconds to wait.
func appendDetailTail(b []byte, secs int64) []byte {
	b = strconv.AppendInt(b, secs, 10)
	if secs == 1 {
		return append(b, ` second."`...)
	}
	return append(b, ` seconds."`...)
}

// badBody precomputes the answer to a request that cannot be keyed.
func (m *Middleware) badBody(status int, code, text string) refusalBody {
	b := []byte{'{'}
	ctype := ctypeJSONValue
	if m.problem {
		ctype = ctypeProblemValue
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
// nothing (0), at most maxRetryAfter.
func retryAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	return capDuration(d)
}

func capDuration(d time.Duration) time.Duration {
	if d > maxRetryAfter {
		return maxRetryAfter
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
