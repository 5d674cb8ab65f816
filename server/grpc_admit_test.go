package server

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/server/admitv1"
)

const tiersPolicy = `
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 2/min}
      pro:  {rate: 100/min}
    assign: {acme: pro}
domain: api
rules:
  - {name: per-tenant, match: tenant, tiers: plans}
  - {name: per-ip, match: remote_address, rate: 10/s, exempt: {remote_address: [10.0.0.0/8]}}
  - {name: trial, match: [{key: plan, value: trial}], rate: 1/hour, shadow: true}
  - {name: slots, match: [{key: pool, value: db}], concurrency: 2}
  - {name: adaptive, match: [{key: pool, value: adaptive}], adaptive_concurrency: {min: 1, max: 4, initial: 2}}
`

func admitDesc(kv ...string) *admitv1.Descriptor {
	d := &admitv1.Descriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &admitv1.Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (h *grpcHarness) check(t testing.TB, r *admitv1.CheckRequest) *admitv1.CheckResponse {
	t.Helper()
	resp, err := h.admit.Check(context.Background(), r)
	if err != nil {
		t.Fatalf("Check(%v): %v", r, err)
	}
	if len(resp.Statuses) != len(r.Descriptors) {
		t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(r.Descriptors))
	}
	return resp
}

// TestAdmitCheck checks every field of Check's answer.
func TestAdmitCheck(t *testing.T) {
	noGoroutineLeak(t)
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, clk)), withGRPCClock(clk))

	// Hits unset: 1 for the tenant's plan (free, 2/min).
	resp := h.check(t, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco"), admitDesc("remote_address", "10.1.2.3"), admitDesc("other", "x")}})
	d := resp.Decision
	if !d.Allowed || d.Rule != "per-tenant/free" || d.Kind != admitv1.Kind_KIND_RATE || d.Limit.GetRate() != 2 || d.Limit.GetPeriod().AsDuration() != time.Minute || d.Limit.GetBurst() != 2 ||
		d.Remaining != 1 || d.RetryAfter.AsDuration() != 0 || d.ResetAfter.AsDuration() != 30*time.Second || d.Unlimited || resp.UnknownDomain || resp.ShadowRefused {
		t.Errorf("decision %v", resp)
	}
	st := resp.Statuses[0]
	if st.Code != admitv1.Code_CODE_OK || st.Rule != "per-tenant" || st.Tier != "free" || st.Kind != admitv1.Kind_KIND_RATE || st.Remaining != 1 || st.ResetAfter.AsDuration() != 30*time.Second {
		t.Errorf("tenant %v", st)
	}
	if st := resp.Statuses[1]; st.Code != admitv1.Code_CODE_OK || st.Rule != "per-ip" || !st.Exempt || st.Limit != nil || st.Kind != admitv1.Kind_KIND_UNSPECIFIED {
		t.Errorf("exempt address %v", st)
	}
	if st := resp.Statuses[2]; st.Code != admitv1.Code_CODE_OK || st.Rule != "" || st.Limit != nil {
		t.Errorf("unmatched %v", st)
	}
	// Hits 2 now refused: retry after one emission interval (30 s).
	resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(2), Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco")}})
	if d := resp.Decision; d.Allowed || d.RetryAfter.AsDuration() != 30*time.Second || resp.Statuses[0].Code != admitv1.Code_CODE_OVER_LIMIT || resp.Statuses[0].Remaining != 1 {
		t.Errorf("refusal %v", resp)
	}
	// More than the burst: never (retry_after unset).
	resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(3), Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco")}})
	if d := resp.Decision; d.Allowed || d.RetryAfter != nil {
		t.Errorf("never %v", resp)
	}
	// Peek (hits 0), and a descriptor's own hits.
	peek := &admitv1.Descriptor{Entries: admitDesc("tenant", "newco").Entries, Hits: proto.Int64(0)}
	resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(5), Descriptors: []*admitv1.Descriptor{peek}})
	if !resp.Decision.Allowed || resp.Statuses[0].Remaining != 1 {
		t.Errorf("peek %v", resp)
	}
	// The pro tier.
	resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(10), Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "acme")}})
	if st := resp.Statuses[0]; st.Tier != "pro" || st.Remaining != 90 {
		t.Errorf("pro %v", st)
	}
	// A rule in shadow mode that would refuse.
	h.check(t, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("plan", "trial")}})
	resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("plan", "trial")}})
	if st := resp.Statuses[0]; !resp.Decision.Allowed || !resp.ShadowRefused || resp.Shadow.GetRule() != "trial" || resp.Shadow.GetAllowed() ||
		st.Code != admitv1.Code_CODE_OK || !st.Shadow || !st.WouldRefuse {
		t.Errorf("shadow %v", resp)
	}
	// An inline limit: 1 per second, burst 2.
	inline := &admitv1.Descriptor{Entries: admitDesc("client", "c1").Entries, Limit: &admitv1.Limit{Rate: 1, Period: durationpb.New(time.Second), Burst: 2}}
	for i, want := range []bool{true, true, false} {
		resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{inline}})
		if st := resp.Statuses[0]; resp.Decision.Allowed != want || !st.Override || st.Limit.GetBurst() != 2 {
			t.Errorf("inline %d: %v", i, resp)
		}
	}
	// An unknown domain: nothing limits, and the answer says so.
	resp = h.check(t, &admitv1.CheckRequest{Domain: "nope", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco")}})
	if !resp.Decision.Allowed || !resp.Decision.Unlimited || resp.Decision.Limit != nil || !resp.UnknownDomain {
		t.Errorf("unknown domain %v", resp)
	}
	// A concurrency cap: a gate, nothing held after Check.
	for range 3 {
		resp = h.check(t, &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(2), Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}})
		if st := resp.Statuses[0]; !resp.Decision.Allowed || st.Kind != admitv1.Kind_KIND_CONCURRENCY || st.Limit.GetRate() != 2 || st.Limit.GetPeriod() != nil {
			t.Errorf("concurrency %v", resp)
		}
	}
}

// TestAdmitLeases: Acquire holds slots until Release or the lease's end;
// leases are shared with a lease table the HTTP API may use.
func TestAdmitLeases(t *testing.T) {
	noGoroutineLeak(t)
	clk := admittest.NewManualClock(grpcT0)
	leases, err := newLeases(withLeaseClock(clk), withLeaseTTL(time.Minute, time.Hour), withMaxLeases(3))
	if err != nil {
		t.Fatal(err)
	}
	defer leases.Close()
	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, clk)), withGRPCClock(clk), withGRPCLeases(leases))
	ctx := context.Background()
	acquire := func(lease time.Duration, kv ...string) (*admitv1.AcquireResponse, error) {
		r := &admitv1.AcquireRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc(kv...)}}
		if lease != 0 {
			r.Lease = durationpb.New(lease)
		}
		return h.admit.Acquire(ctx, r)
	}
	a, err := acquire(0, "pool", "db")
	if err != nil || !a.Decision.Allowed || a.LeaseId == "" || !a.ExpiresAt.AsTime().Equal(grpcT0.Add(time.Minute)) || a.Statuses[0].Remaining != 1 {
		t.Fatalf("first acquire: %v, %v", a, err)
	}
	b, err := acquire(5*time.Second, "pool", "db")
	if err != nil || !b.Decision.Allowed || b.LeaseId == "" || b.LeaseId == a.LeaseId || !b.ExpiresAt.AsTime().Equal(grpcT0.Add(5*time.Second)) {
		t.Fatalf("second acquire: %v, %v", b, err)
	}
	// Full: refused, no lease.
	if c, err := acquire(0, "pool", "db"); err != nil || c.Decision.Allowed || c.LeaseId != "" || c.ExpiresAt != nil {
		t.Fatalf("third acquire: %v, %v", c, err)
	}
	// Nothing to hold: no lease.
	if c, err := acquire(0, "tenant", "acme"); err != nil || !c.Decision.Allowed || c.LeaseId != "" {
		t.Fatalf("rate only: %v, %v", c, err)
	}
	// Released through the gRPC API, with an outcome.
	if _, err := h.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: a.LeaseId, Outcome: admitv1.Outcome_OUTCOME_SUCCESS}); err != nil {
		t.Fatal(err)
	}
	_, err = h.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: a.LeaseId})
	wantCode(t, err, codes.NotFound) // twice
	_, err = h.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: "0123"})
	wantCode(t, err, codes.NotFound)
	_, err = h.admit.Release(ctx, &admitv1.ReleaseRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: b.LeaseId, Outcome: 7})
	wantCode(t, err, codes.InvalidArgument)
	// b's lease ends: its slot is back without a Release.
	c, err := acquire(0, "pool", "db")
	if err != nil || !c.Decision.Allowed {
		t.Fatalf("after a release: %v, %v", c, err)
	}
	if d, err := acquire(0, "pool", "db"); err != nil || d.Decision.Allowed {
		t.Fatalf("full again: %v, %v", d, err)
	}
	clk.Advance(5 * time.Second)
	if d, err := acquire(0, "pool", "db"); err != nil || !d.Decision.Allowed {
		t.Fatalf("after b's lease: %v, %v", d, err)
	}
	_, err = h.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: b.LeaseId})
	wantCode(t, err, codes.NotFound)
	// The table is shared: a lease taken here is released there (as the
	// HTTP API would), and the other way round.
	if err := leases.Release(context.Background(), c.LeaseId); err != nil {
		t.Fatalf("releasing a gRPC lease in the table: %v", err)
	}
	// Leases too long, negative, a full table.
	_, err = acquire(2*time.Hour, "pool", "db")
	wantCode(t, err, codes.InvalidArgument)
	_, err = acquire(-time.Second, "pool", "db")
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.admit.Acquire(ctx, &admitv1.AcquireRequest{Domain: "api", Lease: &durationpb.Duration{Seconds: 1, Nanos: -1}, Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}})
	wantCode(t, err, codes.InvalidArgument)
	for leases.Len() < 3 {
		if _, err := acquire(0, "pool", "adaptive"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = acquire(0, "pool", "adaptive")
	wantCode(t, err, codes.ResourceExhausted)
	_ = leases.Close()
	_, err = acquire(0, "pool", "db")
	wantCode(t, err, codes.Unavailable)
}

// TestAdmitOwnLeases: without WithGRPCLeases the service has a table of
// its own, closed (slots given back) by Close.
func TestAdmitOwnLeases(t *testing.T) {
	noGoroutineLeak(t)
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(t, tiersPolicy, clk)
	s, err := newAdmitService(grpcSource(e), withGRPCClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &admitv1.AcquireRequest{Domain: "api", Hits: proto.Int64(2), Descriptors: []*admitv1.Descriptor{admitDesc("pool", "adaptive")}}
	a, err := s.Acquire(ctx, req)
	if err != nil || a.LeaseId == "" || !a.ExpiresAt.AsTime().Equal(grpcT0.Add(defaultLeaseTTL)) {
		t.Fatalf("acquire: %v, %v", a, err)
	}
	if _, err := s.Release(ctx, &admitv1.ReleaseRequest{LeaseId: a.LeaseId, Outcome: admitv1.Outcome_OUTCOME_FAILURE}); err != nil {
		t.Fatal(err)
	}
	if a, err = s.Acquire(ctx, req); err != nil || a.LeaseId == "" {
		t.Fatalf("acquire: %v, %v", a, err)
	}
	if s.table().Len() != 1 {
		t.Fatalf("%d leases", s.table().Len())
	}
	_ = s.Close()
	_ = s.Close()
	if _, err := s.Acquire(ctx, req); status.Code(err) != codes.Unavailable {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := newAdmitService(nil); !errors.Is(err, errInvalidConfig) {
		t.Errorf("NewAdmitService(nil): %v", err)
	}
	if _, err := newAdmitService(grpcSource(e), withGRPCMaxEntries(0)); !errors.Is(err, errInvalidConfig) {
		t.Errorf("bad option: %v", err)
	}
	if _, err := s.Check(ctx, nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("nil request: %v", err)
	}
	if _, err := s.Check(ctx, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}}); err != nil {
		t.Errorf("Check after Close: %v", err)
	}
	none, _ := newAdmitService(new(Engines), withGRPCLeases(s.table()))
	if _, err := none.Check(ctx, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}}); status.Code(err) != codes.Unavailable {
		t.Errorf("no engine: %v", err)
	}
	if _, err := none.Acquire(ctx, req); status.Code(err) != codes.Unavailable {
		t.Errorf("no engine: %v", err)
	}
}

// TestGRPCHealthReflection: the health service reports every service,
// SetServing and Close change it; reflection lists the services.
func TestGRPCHealthReflection(t *testing.T) {
	noGoroutineLeak(t)
	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, nil)))
	ctx := context.Background()
	health := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := h.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("health %q: %v", service, err)
		}
		return r.Status
	}
	for _, name := range []string{"", rlsServiceName, admitServiceName} {
		if s := health(name); s != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%q: %v", name, s)
		}
	}
	h.g.SetServing(false)
	if s := health(rlsServiceName); s != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after SetServing(false): %v", s)
	}
	h.g.SetServing(true)

	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	want := []string{admitServiceName, rlsServiceName, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
	sort.Strings(want)
	if len(names) != len(want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	for i := range names {
		if names[i] != want[i] {
			t.Fatalf("services %v, want %v", names, want)
		}
	}
	// The descriptors of both services resolve.
	for _, sym := range []string{rlsServiceName, admitServiceName} {
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: sym}}); err != nil {
			t.Fatal(err)
		}
		r, err := stream.Recv()
		if err != nil || len(r.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
			t.Errorf("file of %s: %v, %v", sym, r, err)
		}
	}
	_ = stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("end of the reflection stream: %v", err)
	}

	_ = h.g.Close()
	_ = h.g.Close()
	if s := health(""); s != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after Close: %v", s)
	}
}

// rawCodec sends and receives raw bytes, for malformed messages.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestGRPCMalformed: a message that is not protobuf is answered
// INVALID_ARGUMENT on every method of a server made with
// GRPCServerOptions (INTERNAL, by grpc-go, on one made without), and the
// server keeps serving.
func TestGRPCMalformed(t *testing.T) {
	src := grpcSource(grpcEngine(t, tiersPolicy, nil))
	for _, c := range []struct {
		name string
		h    *grpcHarness
		want codes.Code
	}{
		{"GRPCServerOptions", startGRPC(t, src), codes.InvalidArgument},
		{"plain", startGRPCServer(t, grpc.NewServer(), src), codes.Internal},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, method := range []string{
				"/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
				admitv1.Admit_Check_FullMethodName, admitv1.Admit_Acquire_FullMethodName, admitv1.Admit_Release_FullMethodName,
			} {
				for _, body := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x05, 'a'}, {0x12, 0x80}} {
					var out []byte
					err := c.h.conn.Invoke(context.Background(), method, &body, &out, grpc.ForceCodec(rawCodec{}))
					wantCode(t, err, c.want)
					if c.want == codes.InvalidArgument && !strings.Contains(status.Convert(err).Message(), "malformed request") {
						t.Errorf("%s: %v", method, err)
					}
				}
			}
			if resp := c.h.check(t, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "acme")}}); !resp.Decision.Allowed {
				t.Errorf("after malformed requests: %v", resp)
			}
			c.h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("tenant", "acme")))
		})
	}
}

// TestGRPCMalformedForged: a valid request carrying the marker's field
// number, without the process's token, is an ordinary request (its
// unknown field ignored), not a malformed one.
func TestGRPCMalformedForged(t *testing.T) {
	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, nil)))
	req, err := proto.Marshal(rlsReq("api", 1, rlsDesc("tenant", "acme")))
	if err != nil {
		t.Fatal(err)
	}
	req = protowire.AppendTag(req, grpcMalformedField, protowire.BytesType)
	req = protowire.AppendBytes(req, []byte("0123456789abcdef forged"))
	var out []byte
	if err := h.conn.Invoke(context.Background(), "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", &req, &out, grpc.ForceCodec(rawCodec{})); err != nil {
		t.Fatalf("forged marker: %v", err)
	}
	var resp rlsv3.RateLimitResponse
	if err := proto.Unmarshal(out, &resp); err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("forged marker: %v %v", &resp, err)
	}
}

// TestServerGRPCMalformed: `admit serve`'s gRPC server (Server) is made
// with GRPCServerOptions, so a message that is not protobuf is
// INVALID_ARGUMENT there.
func TestServerGRPCMalformed(t *testing.T) {
	s := startServer(t)
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body, out := []byte{0xff, 0xff, 0xff}, []byte(nil)
	err = conn.Invoke(context.Background(), "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", &body, &out, grpc.ForceCodec(rawCodec{}))
	wantCode(t, err, codes.InvalidArgument)
}

// TestAdmitReset: Reset gives a tenant its plan back when WithGRPCReset
// allows it, and is PERMISSION_DENIED otherwise.
func TestAdmitReset(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	newco := &admitv1.CheckRequest{Domain: "api", Hits: proto.Int64(2), Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco")}}
	reset := &admitv1.ResetRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", "newco")}}

	off := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, clk)), withGRPCClock(clk))
	_, err := off.admit.Reset(context.Background(), reset)
	wantCode(t, err, codes.PermissionDenied)

	h := startGRPC(t, grpcSource(grpcEngine(t, tiersPolicy, clk)), withGRPCClock(clk), withGRPCReset(true))
	if resp := h.check(t, newco); !resp.Decision.Allowed {
		t.Fatalf("first: %v", resp)
	}
	if resp := h.check(t, newco); resp.Decision.Allowed {
		t.Fatalf("second, over the plan: %v", resp)
	}
	resp, err := h.admit.Reset(context.Background(), reset)
	if err != nil || resp.LimitsReset != 1 {
		t.Fatalf("Reset: %v, %v", resp, err)
	}
	if resp := h.check(t, newco); !resp.Decision.Allowed {
		t.Errorf("after the reset: %v", resp)
	}
	// Bad requests: none, an empty domain or key, a huge value, too many
	// descriptors; each INVALID_ARGUMENT, and nothing reset.
	many := make([]*admitv1.Descriptor, 10000)
	for i := range many {
		many[i] = admitDesc("tenant", "newco")
	}
	for name, bad := range map[string]*admitv1.ResetRequest{
		"no descriptors": {Domain: "api"},
		"empty domain":   {Descriptors: reset.Descriptors},
		"empty key":      {Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("", "x")}},
		"no entries":     {Domain: "api", Descriptors: []*admitv1.Descriptor{{}}},
		"huge value":     {Domain: "api", Descriptors: []*admitv1.Descriptor{admitDesc("tenant", strings.Repeat("v", 1<<20))}},
		"10,000":         {Domain: "api", Descriptors: many},
	} {
		_, err = h.admit.Reset(context.Background(), bad)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	h.check(t, newco)
	if resp := h.check(t, newco); resp.Decision.Allowed {
		t.Errorf("a bad reset reset something: %v", resp)
	}
}
