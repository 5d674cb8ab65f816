package server

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/server/admitv1"
)

// rlsBadRequests are requests RLS refuses with INVALID_ARGUMENT, and a
// word of the message saying why.
func rlsBadRequests() []struct {
	name string
	req  *rlsv3.RateLimitRequest
	want string
} {
	many := make([]*ratelimitv3.RateLimitDescriptor, 10_000)
	for i := range many {
		many[i] = rlsDesc("user", "u")
	}
	manyEntries := rlsDesc()
	for range defaultGRPCMaxEntries + 1 {
		manyEntries.Entries = append(manyEntries.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
	}
	mb := strings.Repeat("v", 1<<20)
	override := func(rpu uint32, unit typev3.RateLimitUnit, mult *wrapperspb.UInt32Value) *ratelimitv3.RateLimitDescriptor {
		d := rlsDesc("k", "v")
		d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit, UnitMultiplier: mult}
		return d
	}
	negative := rlsDesc("user", "u")
	negative.IsNegativeHits = true
	negative.HitsAddend = wrapperspb.UInt64(1)
	return []struct {
		name string
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{"empty request", &rlsv3.RateLimitRequest{}, "domain is required"},
		{"no domain", rlsReq("", 1, rlsDesc("user", "u")), "domain is required"},
		{"domain of 1 MB", rlsReq(mb, 1, rlsDesc("user", "u")), "domain of 1048576 bytes"},
		{"no descriptors", rlsReq("api", 1), "at least one is required"},
		{"10,000 descriptors", rlsReq("api", 1, many...), "10000 descriptors"},
		{"a descriptor without entries", rlsReq("api", 1, rlsDesc("user", "u"), rlsDesc()), "descriptors[1]: at least one entry"},
		{"too many entries", rlsReq("api", 1, manyEntries), "33 entries"},
		{"empty key", rlsReq("api", 1, rlsDesc("", "v")), "descriptors[0].entries[0]: key is empty"},
		{"key of 1 MB", rlsReq("api", 1, rlsDesc(mb, "v")), "key of 1048576 bytes"},
		{"value of 1 MB", rlsReq("api", 1, rlsDesc("user", "ok", "route", mb)), "descriptors[0].entries[1]: value of 1048576 bytes"},
		{"own hits 2^53+1", rlsReq("api", 1, withHits(rlsDesc("user", "u"), maxGRPCHits+1)), "hits_addend"},
		{"own hits 2^64-1", rlsReq("api", 1, withHits(rlsDesc("user", "u"), math.MaxUint64)), "hits_addend"},
		{"negative hits", rlsReq("api", 1, negative), "is_negative_hits"},
		{"unknown unit", rlsReq("api", 1, override(1, typev3.RateLimitUnit_UNKNOWN, nil)), "unit 0"},
		{"undefined unit", rlsReq("api", 1, override(1, 99, nil)), "unit 99"},
		{"unit multiplier 0", rlsReq("api", 1, override(1, typev3.RateLimitUnit_SECOND, wrapperspb.UInt32(0))), "unit_multiplier is 0"},
		{"period overflow", rlsReq("api", 1, override(1, typev3.RateLimitUnit_YEAR, wrapperspb.UInt32(math.MaxUint32))), "too long a period"},
	}
}

// TestRLSBadInput: bad requests are INVALID_ARGUMENT with a message saying
// why, over the wire; nothing is decided, the server keeps serving.
func TestRLSBadInput(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))
	for _, c := range rlsBadRequests() {
		_, err := h.rls.ShouldRateLimit(context.Background(), c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.want) {
			t.Errorf("%s: %v; want INVALID_ARGUMENT saying %q", c.name, err, c.want)
		}
	}
	// Nothing was consumed for user u.
	if st := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "u"))).Statuses[0]; st.LimitRemaining != 4 {
		t.Errorf("after the bad requests: %v", st)
	}
	// Direct calls: a nil request, nil descriptors and entries.
	s, err := newRLS(grpcSource(grpcEngine(t, algorithmsPolicy, clk)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*rlsv3.RateLimitRequest{
		nil,
		{Domain: "api", Descriptors: []*ratelimitv3.RateLimitDescriptor{nil}},
		{Domain: "api", Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{nil}}}},
	} {
		if _, err := s.ShouldRateLimit(context.Background(), r); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v", r, err)
		}
	}
	// Smaller caps.
	h2 := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCMaxDescriptors(2), withGRPCMaxEntries(1), withGRPCMaxValueBytes(3))
	for _, r := range []*rlsv3.RateLimitRequest{
		rlsReq("api", 1, rlsDesc("u", "a"), rlsDesc("u", "b"), rlsDesc("u", "c")),
		rlsReq("api", 1, rlsDesc("u", "a", "v", "b")),
		rlsReq("api", 1, rlsDesc("user", "a")),
		rlsReq("api", 1, rlsDesc("u", "abcd")),
		rlsReq("apis", 1, rlsDesc("u", "a")),
	} {
		_, err := h2.rls.ShouldRateLimit(context.Background(), r)
		wantCode(t, err, codes.InvalidArgument)
	}
}

// TestAdmitBadInput: admit.v1's bad requests.
func TestAdmitBadInput(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, clk)), withGRPCClock(clk))
	d := func(kv ...string) *admitv1.Descriptor { return admitDesc(kv...) }
	withLimit := func(l *admitv1.Limit) *admitv1.Descriptor {
		x := d("k", "v")
		x.Limit = l
		return x
	}
	withOwn := func(n int64) *admitv1.Descriptor {
		x := d("k", "v")
		x.Hits = proto.Int64(n)
		return x
	}
	many := make([]*admitv1.Descriptor, 10_000)
	for i := range many {
		many[i] = d("k", "v")
	}
	for _, c := range []struct {
		name string
		req  *admitv1.CheckRequest
		want string
	}{
		{"no domain", &admitv1.CheckRequest{Descriptors: []*admitv1.Descriptor{d("k", "v")}}, "domain is required"},
		{"no descriptors", &admitv1.CheckRequest{Domain: "api"}, "at least one"},
		{"10,000 descriptors", &admitv1.CheckRequest{Domain: "api", Descriptors: many}, "10000 descriptors"},
		{"no entries", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{d()}}, "at least one entry"},
		{"empty key", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{d("", "v")}}, "key is empty"},
		{"value of 1 MB", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{d("k", strings.Repeat("v", 1<<20))}}, "value of 1048576"},
		{"negative hits", &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(-1), Descriptors: []*admitv1.Descriptor{d("k", "v")}}, "hits: -1"},
		{"hits 2^63-1", &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(math.MaxInt64), Descriptors: []*admitv1.Descriptor{d("k", "v")}}, "hits: 9223372036854775807"},
		{"own negative hits", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{withOwn(-5)}}, "descriptors[0].hits: -5"},
		{"negative rate", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{withLimit(&admitv1.Limit{Rate: -1, Period: durationpb.New(1e9)})}}, "descriptors[0].limit"},
		{"no period", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{withLimit(&admitv1.Limit{Rate: 5})}}, "descriptors[0].limit"},
		{"invalid period", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{withLimit(&admitv1.Limit{Rate: 5, Period: &durationpb.Duration{Seconds: -1, Nanos: 5}})}}, "descriptors[0].limit"},
		{"negative burst", &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{withLimit(&admitv1.Limit{Rate: 5, Period: durationpb.New(1e9), Burst: -2})}}, "descriptors[0].limit"},
	} {
		_, err := h.admit.Check(context.Background(), c.req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.want) {
			t.Errorf("%s: %v; want INVALID_ARGUMENT saying %q", c.name, err, c.want)
		}
		_, err = h.admit.Acquire(context.Background(), &admitv1.AcquireRequest{Domain: c.req.Domain, Descriptors: c.req.Descriptors, Hits: c.req.Hits})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("Acquire %s: %v", c.name, err)
		}
	}
	// Hits of 2^53 are a request like another: refused.
	resp := h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(maxGRPCHits), Descriptors: []*admitv1.Descriptor{d("tenant", "acme")}})
	if resp.Decision.Allowed {
		t.Errorf("2^53 hits: %v", resp)
	}
	if _, err := h.admit.Acquire(context.Background(), nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("nil: %v", err)
	}
	if errors.Is(grpcBad("x"), errBadGRPCRequest) != true {
		t.Error("grpcBad is not an ErrBadGRPCRequest")
	}
}
