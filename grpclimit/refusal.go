package grpclimit

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"sync"
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

// Metadata names of the figures a Server sends.
const (
	// RetryAfterMD is the trailer of a refusal saying, in whole seconds
	// (rounded up), when to retry, as HTTP's Retry-After does. It is sent
	// when, and only when, the refusal carries a RetryInfo.
	RetryAfterMD = "retry-after"
	// RateLimitMD carries the IETF RateLimit field of the deciding limit:
	// `"name";r=remaining;t=seconds`.
	RateLimitMD = "ratelimit"
	// RateLimitPolicyMD carries the IETF RateLimit-Policy field of the
	// deciding limit: `"name";q=quota;w=window-seconds`.
	RateLimitPolicyMD = "ratelimit-policy"
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
	retry := d.RetryAfter > 0 && d.RetryAfter <= maxDelay
	md := make(metadata.MD, 3)
	state := p.name + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10)
	pb := &spb.Status{Code: int32(codes.ResourceExhausted)}
	switch {
	case retry:
		delay := ceilMillis(d.RetryAfter)
		pb.Message = p.head + ", retry in " + delay.String()
		pb.Details = []*anypb.Any{retryInfo(delay), p.quota}
		secs := strconv.FormatInt(ceilSeconds(d.RetryAfter), 10)
		md[RetryAfterMD] = []string{secs}
		state += ";t=" + secs
	case d.RetryAfter > maxDelay:
		pb.Message = p.head + ", the call can never be admitted"
		pb.Details = []*anypb.Any{p.quota}
	default:
		pb.Message = p.head
		pb.Details = []*anypb.Any{p.quota}
	}
	md[RateLimitMD] = []string{state}
	if p.policy != "" {
		md[RateLimitPolicyMD] = []string{p.policy}
	}
	return status.FromProto(pb), md
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
