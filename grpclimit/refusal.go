package grpclimit

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"
)

// Metadata names of the figures a Server sends (documented on Server and
// Config.Headers).
const (
	// retryAfterMD is the trailer of a refusal saying, in whole seconds
	// (rounded up), when to retry, as HTTP's Retry-After does. It is sent
	// when, and only when, the refusal carries a RetryInfo.
	retryAfterMD = "retry-after"
	// rateLimitMD carries the IETF RateLimit field of the deciding limit:
	// `"name";r=remaining;t=seconds`.
	rateLimitMD = "ratelimit"
	// rateLimitPolicyMD carries the IETF RateLimit-Policy field of the
	// deciding limit: `"name";q=quota;w=window-seconds`.
	rateLimitPolicyMD = "ratelimit-policy"
)

const digestPrefix = "sha256:"

// digest returns "sha256:" + the hex SHA-256 of key.
func digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// refusal returns the status of a call that d refused, subject naming the
// limit, and the trailer metadata with the same figures. The parts that
// depend only on the limit come from c (nil for none).
func refusal(d admit.Decision, subject string, c *partCache) (*status.Status, metadata.MD) {
	p := c.parts(d, subject)
	md := make(metadata.MD, 3)
	vals := new([3]string) // the trailers' values, in one allocation
	state := p.name + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10)
	pb := &spb.Status{Code: int32(codes.ResourceExhausted)}
	switch {
	case d.RetryAfter > 0 && d.RetryAfter <= maxDelay:
		delay := ceilMillis(d.RetryAfter)
		pb.Message = p.head + ", retry in " + delay.String()
		pb.Details = []*anypb.Any{retryInfo(delay), p.quota}
		vals[0] = strconv.FormatInt(ceilSeconds(d.RetryAfter), 10)
		md[retryAfterMD] = vals[0:1:1]
		state += ";t=" + vals[0]
	case d.RetryAfter > maxDelay:
		pb.Message = p.head + ", the call can never be admitted"
		pb.Details = []*anypb.Any{p.quota}
	default:
		pb.Message = p.head
		pb.Details = []*anypb.Any{p.quota}
	}
	vals[1] = state
	md[rateLimitMD] = vals[1:2:2]
	if p.policy != "" {
		vals[2] = p.policy
		md[rateLimitPolicyMD] = vals[2:3:3]
	}
	return status.FromProto(pb), md
}

// refusalShape is everything a refusal depends on: two decisions of the
// same shape are refused with equal statuses and trailers. The delay is
// the RetryInfo's, RetryAfter rounded up to the millisecond (the
// retry-after trailer, in whole seconds rounded up, follows from it: a
// second is a whole number of milliseconds); 0 when the refusal has no
// RetryInfo, -1 when the call can never be admitted. remaining is the
// Decision's, at least 0, as sent.
type refusalShape struct {
	subject   string
	limit     admit.Limit
	kind      admit.Kind
	delay     time.Duration
	remaining int64
}

// shapeOf returns the shape of the refusal of d, subject naming the limit.
func shapeOf(d *admit.Decision, subject string) refusalShape {
	return refusalShape{subject: subject, limit: d.Limit, kind: d.Kind, delay: sentDelay(d.RetryAfter), remaining: max(d.Remaining, 0)}
}

// sentDelay returns the delay a refusal's RetryInfo carries for a
// RetryAfter of d: d rounded up to the millisecond, 0 for none, -1 for a
// call that can never be admitted.
func sentDelay(d time.Duration) time.Duration {
	switch {
	case d > maxDelay:
		return -1
	case d > 0:
		return ceilMillis(d)
	}
	return 0
}

// memoSlots is the number of refusals a refusalMemo keeps (a power of 2).
const memoSlots = 256

// refusalMemo keeps complete refusals, the status error and the trailers,
// so that a refusal of the same shape as a recent one costs a hash and a
// comparison instead of a status built and cloned (status.FromProto
// clones its proto) and a metadata map. A flood of refusals is mostly
// such repeats: every refusal of a key within a millisecond, say. Each of
// memoSlots slots holds the last refusal built whose shape hashes to it,
// so at most memoSlots refusals are kept whatever the number of rules,
// limits or delays; two shapes that share a slot only cost each other
// their memo.
//
// Sharing is safe because neither value is ever modified: a status error
// is immutable (status.Status has no mutator, and Proto returns a clone;
// grpc-go's server only reads the proto, to marshal it), and the trailers
// go to grpc.SetTrailer or ServerStream.SetTrailer, which merge them into
// the stream's own metadata with metadata.Join, a copy; nothing in this
// package writes to them once built.
//
// Its zero value is not ready: the seed must be set with maphash.MakeSeed.
// It is safe for concurrent use.
type refusalMemo struct {
	seed  maphash.Seed
	slots [memoSlots]atomic.Pointer[memoEntry]
}

type memoEntry struct {
	shape refusalShape
	err   error
	md    metadata.MD
}

// refusal returns the trailers and the error of a call that d refused,
// subject naming the limit: refusal(d, subject, c)'s, shared with the
// other refusals of the same shape while the memo keeps them. The caller
// must not modify the trailers.
func (m *refusalMemo) refusal(d *admit.Decision, subject string, c *partCache) (metadata.MD, error) {
	k := shapeOf(d, subject)
	slot := &m.slots[m.slot(&k)]
	// (The fields that differ most often first; == on strings returns at
	// once when both are the same string, the usual case.)
	if e := slot.Load(); e != nil && e.shape.delay == k.delay && e.shape.remaining == k.remaining &&
		e.shape.limit == k.limit && e.shape.kind == k.kind && e.shape.subject == k.subject {
		return e.md, e.err
	}
	st, md := refusal(*d, subject, c)
	e := &memoEntry{shape: k, err: st.Err(), md: md}
	slot.Store(e)
	return e.md, e.err
}

// slot returns the index of k's slot: the seeded hash of its subject
// combined with its numbers (each multiplied by its own odd constant),
// then MurmurHash3's 64-bit finalizer, so that every bit of them reaches
// the index.
func (m *refusalMemo) slot(k *refusalShape) uint64 {
	h := maphash.String(m.seed, k.subject)
	h ^= uint64(k.limit.Rate) * 0x9e3779b97f4a7c15
	h ^= uint64(k.limit.Period) * 0xc2b2ae3d27d4eb4f
	h ^= uint64(k.limit.Burst) * 0x165667b19e3779f9
	h ^= uint64(k.delay) * 0x27d4eb2f165667c5
	h ^= uint64(k.remaining)*0x85ebca77c2b2ae63 ^ uint64(k.kind)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h & (memoSlots - 1)
}

// retryInfo returns the google.rpc.RetryInfo of delay d as an Any, encoded
// by hand (a RetryInfo holds one Duration: seconds and nanos) since the
// refusal path must stay cheap.
func retryInfo(d time.Duration) *anypb.Any {
	var dur [24]byte
	b := dur[:0]
	if s := int64(d / time.Second); s != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s))
	}
	if n := int64(d % time.Second); n != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(n))
	}
	v := make([]byte, 0, len(b)+2)
	v = protowire.AppendTag(v, 1, protowire.BytesType)
	v = protowire.AppendBytes(v, b)
	return &anypb.Any{TypeUrl: retryInfoURL, Value: v}
}

const retryInfoURL = "type.googleapis.com/google.rpc.RetryInfo"

// refusalParts are the parts of a refusal (and of an admitted call's
// headers) that depend only on the limit.
type refusalParts struct {
	head   string     // the message up to the retry delay
	quota  *anypb.Any // the QuotaFailure (never modified: FromProto clones it)
	name   string     // subject as a Structured Field String
	policy string     // the RateLimit-Policy item, or ""
}

type refusalKey struct {
	subject string
	limit   admit.Limit
	kind    admit.Kind
}

// partCache caches the refusalParts of up to maxCachedParts limits. Its zero
// value is ready; a nil *partCache caches nothing. It is safe for concurrent
// use.
type partCache struct {
	mu sync.RWMutex
	m  map[refusalKey]*refusalParts
}

const maxCachedParts = 1024

func (c *partCache) parts(d admit.Decision, subject string) *refusalParts {
	if c == nil {
		return newParts(d, subject)
	}
	k := refusalKey{subject: subject, limit: d.Limit, kind: d.Kind}
	c.mu.RLock()
	p := c.m[k]
	c.mu.RUnlock()
	if p != nil {
		return p
	}
	p = newParts(d, subject)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[refusalKey]*refusalParts)
	}
	if len(c.m) < maxCachedParts {
		c.m[k] = p
	}
	c.mu.Unlock()
	return p
}

func newParts(d admit.Decision, subject string) *refusalParts {
	var head strings.Builder
	head.WriteString("grpclimit: ")
	switch d.Kind {
	case admit.KindConcurrency:
		head.WriteString("concurrency limit ")
		head.WriteString(strconv.Quote(subject))
		head.WriteString(" reached")
	case admit.KindQuota:
		head.WriteString("quota ")
		head.WriteString(strconv.Quote(subject))
		head.WriteString(" exhausted")
	default:
		head.WriteString("rate limit ")
		head.WriteString(strconv.Quote(subject))
		head.WriteString(" exceeded")
	}
	desc := describe(d)
	head.WriteString(" (")
	head.WriteString(desc)
	head.WriteString(")")
	qf, err := anypb.New(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     subject,
		Description: desc,
		QuotaId:     subject,
		QuotaValue:  quotaValue(d),
	}}})
	if err != nil {
		// Marshalling fails only for invalid UTF-8 in a string field;
		// the subject and description are then sent as valid UTF-8.
		qf, _ = anypb.New(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     strings.ToValidUTF8(subject, "?"),
			Description: strings.ToValidUTF8(desc, "?"),
			QuotaId:     strings.ToValidUTF8(subject, "?"),
			QuotaValue:  quotaValue(d),
		}}})
	}
	return &refusalParts{head: strings.ToValidUTF8(head.String(), "?"), quota: qf, name: sfString(subject), policy: policyItem(d, sfString(subject))}
}

// describe returns the limit of d in words: "100/s", "5000/h burst 50",
// "10 in flight", "1000 per 24h0m0s".
func describe(d admit.Decision) string {
	switch d.Kind {
	case admit.KindConcurrency:
		return strconv.FormatInt(d.Limit.Rate, 10) + " in flight"
	case admit.KindQuota:
		return strconv.FormatInt(d.Limit.Rate, 10) + " per " + d.Limit.Period.String()
	default:
		return d.Limit.String()
	}
}

// quotaValue returns the capacity of d's limit: the burst of a rate, the
// slots of a concurrency limit, the events of a quota's period.
func quotaValue(d admit.Decision) int64 {
	if d.Kind == admit.KindRate && d.Limit.Burst > 0 {
		return d.Limit.Burst
	}
	return d.Limit.Rate
}

// policyItem returns the RateLimit-Policy item of d's limit, name being a
// Structured Field String: `"name";q=100;w=60`. It is empty for a limit
// it cannot describe (unlimited, or outside Limit's domain).
func policyItem(d admit.Decision, name string) string {
	l := d.Limit
	if l.Rate < 0 || l.Rate == admit.Inf {
		return ""
	}
	switch d.Kind {
	case admit.KindConcurrency:
		return name + ";q=" + strconv.FormatInt(l.Rate, 10) + `;qu="concurrent-requests"`
	case admit.KindQuota:
		if l.Period > 0 {
			return name + ";q=" + strconv.FormatInt(l.Rate, 10) + ";w=" + strconv.FormatInt(ceilSeconds(l.Period), 10)
		}
	default:
		if l.Rate > 0 && l.Period > 0 && l.Burst > 0 {
			// The window in which the burst refills: Burst×Period/Rate.
			w := math.Ceil(float64(l.Burst) * l.Period.Seconds() / float64(l.Rate))
			if w >= 1 && w < 1e15 {
				return name + ";q=" + strconv.FormatInt(l.Burst, 10) + ";w=" + strconv.FormatInt(int64(w), 10)
			}
		}
	}
	return ""
}

// sfString returns s as a Structured Field String (RFC 8941): quoted, with
// \ and " escaped; bytes outside printable ASCII become '?'.
func sfString(s string) string {
	if s == "" {
		s = "default"
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// maxDelay is the longest RetryAfter a refusal passes on: a longer one
// (admit.InfDuration, or a century) means the call cannot be admitted.
const maxDelay = admit.InfDuration / 2

// ceilMillis rounds d (at most maxDelay) up to the millisecond, so a
// client that waits it is never early.
func ceilMillis(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// ceilSeconds returns d in whole seconds, rounded up, at least 1 for a
// positive d.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
