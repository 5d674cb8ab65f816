package server

import (
	"context"
	"errors"
	"math"
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
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server/admitv1"
)

// FuzzRLSRequest feeds protobuf messages to Envoy's rate-limit service:
// decoded, converted and decided by an engine (every algorithm, a quota,
// a concurrency cap, inline limits), and answered. Never a panic; a
// request refused by the conversion is an ErrBadGRPCRequest and
// INVALID_ARGUMENT; an accepted one has one status per descriptor, an
// overall code that agrees with them, and consumes nothing when refused.
func FuzzRLSRequest(f *testing.F) {
	seeds := []*rlsv3.RateLimitRequest{
		rlsReq("api", 1, rlsDesc("alg", "gcra"), rlsDesc("user", "bob")),
		rlsReq("api", 0, withHits(rlsDesc("alg", "concurrency"), 2), rlsDesc("alg", "quota")),
		rlsReq("api", math.MaxUint32, rlsDesc("alg", "sliding_log"), withHits(rlsDesc("alg", "fixed_window"), 0)),
		rlsReq("other", 3, rlsDesc("user", "a", "route", "/x")),
	}
	ov := rlsDesc("user", "o")
	ov.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_MINUTE, UnitMultiplier: wrapperspb.UInt32(7)}
	seeds = append(seeds, rlsReq("api", 2, ov, rlsDesc("alg", "token_bucket")))
	for _, c := range rlsBadRequests() {
		if proto.Size(c.req) < 4096 {
			seeds = append(seeds, c.req)
		}
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x03, 'a', 'p', 'i', 0x12, 0x00})
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(f, algorithmsPolicy, clk, policy.Config{MaxOverrides: 64})
	s, err := newRLS(grpcSource(e), withGRPCClock(clk), withGRPCMaxValueBytes(256))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r rlsv3.RateLimitRequest
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		var sc grpcScratch
		convErr := s.o.rlsRequest(&r, &sc)
		if convErr != nil {
			if !errors.Is(convErr, errBadGRPCRequest) {
				t.Fatalf("conversion error %v is not an ErrBadGRPCRequest", convErr)
			}
		} else {
			if sc.req.Domain != r.Domain || len(sc.req.Descriptors) != len(r.Descriptors) || sc.req.Hits < 1 {
				t.Fatalf("converted %+v from %v", sc.req, &r)
			}
			for i, d := range sc.req.Descriptors {
				if len(d.Entries) != len(r.Descriptors[i].Entries) || (d.Limit != nil) != (r.Descriptors[i].Limit != nil) {
					t.Fatalf("descriptor %d: %+v from %v", i, d, r.Descriptors[i])
				}
				for j, en := range d.Entries {
					if en.Key == "" || en.Key != r.Descriptors[i].Entries[j].Key || en.Value != r.Descriptors[i].Entries[j].Value {
						t.Fatalf("entry %d.%d: %+v", i, j, en)
					}
				}
			}
		}
		resp, err := s.ShouldRateLimit(context.Background(), &r)
		if convErr != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("a bad request answered %v", err)
			}
			return
		}
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.ResourceExhausted {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(resp.Statuses) != len(r.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(r.Descriptors))
		}
		over := false
		for _, st := range resp.Statuses {
			if st.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
				over = true
			}
			if st.Code != rlsv3.RateLimitResponse_OK && st.Code != rlsv3.RateLimitResponse_OVER_LIMIT {
				t.Fatalf("status %v", st)
			}
		}
		if over != (resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT) {
			t.Fatalf("overall %v with statuses %v", resp.OverallCode, resp.Statuses)
		}
		if _, err := proto.Marshal(resp); err != nil {
			t.Fatalf("the response does not marshal: %v", err)
		}
		if over {
			// Refused: the limits consumed nothing. Ask again as a peek:
			// the same remaining.
			for _, d := range r.Descriptors {
				d.HitsAddend = wrapperspb.UInt64(0)
			}
			again, err := s.ShouldRateLimit(context.Background(), &r)
			if err != nil {
				t.Fatalf("peek: %v", err)
			}
			for i, st := range again.Statuses {
				if st.CurrentLimit != nil && resp.Statuses[i].Code == rlsv3.RateLimitResponse_OK && resp.Statuses[i].CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_UNKNOWN &&
					st.LimitRemaining < resp.Statuses[i].LimitRemaining {
					t.Fatalf("descriptor %d: remaining %d after a refusal, %d before", i, st.LimitRemaining, resp.Statuses[i].LimitRemaining)
				}
			}
		}
	})
}

// FuzzAdmitRequest feeds protobuf messages to admit.v1's Check: decoded,
// converted, decided and answered, never a panic; a bad request is
// INVALID_ARGUMENT.
func FuzzAdmitRequest(f *testing.F) {
	for _, s := range []*admitv1.CheckRequest{
		{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "acme"), admitDesc("pool", "db")}},
		{Domain: "api", Hits: proto.Int64(0), Descriptors: []*admitv1.Descriptor{{Entries: admitDesc("tenant", "x").Entries, Hits: proto.Int64(3)}}},
		{Domain: "api", Hits: proto.Int64(-1), Descriptors: []*admitv1.Descriptor{admitDesc("", "x")}},
		{Domain: "api", Descriptors: []*admitv1.Descriptor{{Entries: admitDesc("k", "v").Entries, Limit: &admitv1.Limit{Rate: 3, Period: durationpb.New(7e8), Burst: 2}}}},
		{Domain: "api", Descriptors: []*admitv1.Descriptor{{Entries: admitDesc("k", "v").Entries, Limit: &admitv1.Limit{Rate: math.MaxInt64, Period: &durationpb.Duration{Seconds: -3}}}}},
	} {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(f, tiersPolicy, clk, policy.Config{MaxOverrides: 64})
	s, err := newAdmitService(grpcSource(e), withGRPCClock(clk), withGRPCMaxValueBytes(256), withGRPCReset(true))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		var r admitv1.CheckRequest
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		var sc grpcScratch
		convErr := s.o.admitRequest(r.Domain, r.Descriptors, r.Hits, &sc)
		if convErr != nil && !errors.Is(convErr, errBadGRPCRequest) {
			t.Fatalf("conversion error %v", convErr)
		}
		resp, err := s.Check(context.Background(), &r)
		switch {
		case convErr != nil:
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("a bad request answered %v", err)
			}
		case err != nil:
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.ResourceExhausted {
				t.Fatalf("error %v", err)
			}
		default:
			if len(resp.Statuses) != len(r.Descriptors) {
				t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(r.Descriptors))
			}
			if _, err := proto.Marshal(resp); err != nil {
				t.Fatalf("the response does not marshal: %v", err)
			}
		}
		// Acquire the same, and release what it holds.
		a, err := s.Acquire(context.Background(), &admitv1.AcquireRequest{Domain: r.Domain, Descriptors: r.Descriptors, Hits: r.Hits})
		if err == nil && a.LeaseId != "" {
			if _, err := s.Release(context.Background(), &admitv1.ReleaseRequest{LeaseId: a.LeaseId}); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
		// Reset the same: a bad request is INVALID_ARGUMENT, a good one
		// resets (in memory, nothing can fail).
		rs, err := s.Reset(context.Background(), &admitv1.ResetRequest{Domain: r.Domain, Descriptors: r.Descriptors})
		switch {
		case err != nil:
			if c := status.Code(err); c != codes.InvalidArgument {
				t.Fatalf("reset: %v", err)
			}
		case rs.LimitsReset < 0 || rs.LimitsReset > int64(len(r.Descriptors))*4:
			t.Fatalf("reset %d limits for %d descriptors", rs.LimitsReset, len(r.Descriptors))
		}
	})
}

// TestGRPCScratchReuse: a pooled scratch forgets the previous request's
// inline limits and costs.
func TestGRPCScratchReuse(t *testing.T) {
	o := defaultGRPCOptions()
	var sc grpcScratch
	ov := rlsDesc("k", "v")
	ov.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_MINUTE}
	if err := o.rlsRequest(rlsReq("api", 1, ov, withHits(rlsDesc("a", "b"), 0)), &sc); err != nil {
		t.Fatal(err)
	}
	sc.reset()
	if err := o.rlsRequest(rlsReq("api", 2, rlsDesc("k", "v"), rlsDesc("a", "b")), &sc); err != nil {
		t.Fatal(err)
	}
	for i, d := range sc.req.Descriptors {
		if d.Limit != nil || d.OwnHits || d.Hits != 0 {
			t.Errorf("descriptor %d kept %+v", i, d)
		}
	}
}
