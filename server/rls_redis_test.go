package server

import (
	"context"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
	"github.com/admit-go/admit/server/admitv1"
)

// redisPolicy keeps its limits in Redis: an Envoy-style fixed window, a
// GCRA, a quota and a concurrency cap with a lease, failing closed.
// redisPolicy fails closed; its timeout is long so that a loaded machine
// (the first call loads the script and dials) is not taken for a failing
// Redis: the test stops Redis to see the failure policy.
const redisPolicy = `
defaults: {store: redis, failure: {policy: fail_closed, timeout: 5s}}
domain: edge
rules:
  - {name: per-ip, match: remote_address, rate: 3/min, algorithm: fixed_window}
  - {name: per-user, match: user, rate: 10/min}
  - {name: monthly, match: tenant, quota: 1000/month}
  - {name: pool, match: [{key: pool, value: db}], concurrency: {max: 1, lease: 1m}}
`

// TestRLSRedis: two servers on one Redis (two instances of admit serve)
// enforce one limit together through Envoy's protocol, at explicit
// instants (the engines decide on a manual clock, backends.Redis with the clock), and a
// lease held through one is seen by the other; with Redis gone, the rules
// fail closed: OVER_LIMIT.
func TestRLSRedis(t *testing.T) {
	srv := redistest.NewStandalone(t)
	store, err := redisstore.New(srv.Client(t), redisstore.Config{Prefix: redistest.Prefix(t), MinTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := admittest.NewManualClock(grpcT0)
	a := startGRPC(t, grpcSource(grpcEngine(t, redisPolicy, clk, redisBackends(store, clk))), withGRPCClock(clk))
	b := startGRPC(t, grpcSource(grpcEngine(t, redisPolicy, clk, redisBackends(store, clk))), withGRPCClock(clk))

	// Three per minute for one address, shared by both servers.
	for i, h := range []*grpcHarness{a, b, a, b} {
		resp := h.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("remote_address", "203.0.113.9"), rlsDesc("user", "u1"), rlsDesc("tenant", "acme")))
		want := rlsv3.RateLimitResponse_OK
		if i == 3 {
			want = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		ip, user, tenant := resp.Statuses[0], resp.Statuses[1], resp.Statuses[2]
		if resp.OverallCode != want || ip.CurrentLimit.GetRequestsPerUnit() != 3 || ip.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE ||
			ip.LimitRemaining != uint32(max(2-i, 0)) || ip.DurationUntilReset.AsDuration() != 50*time.Second {
			t.Fatalf("request %d: %v", i, resp)
		}
		if i < 3 && (user.LimitRemaining != uint32(9-i) || user.DurationUntilReset.AsDuration() != time.Duration(i+1)*6*time.Second ||
			tenant.LimitRemaining != uint32(999-i) || tenant.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MONTH ||
			tenant.DurationUntilReset.AsDuration() != time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).Sub(grpcT0)) {
			t.Fatalf("request %d: user %v, tenant %v", i, user, tenant)
		}
		if i == 3 && (user.LimitRemaining != 0 || user.DurationUntilReset != nil || tenant.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_UNKNOWN) {
			t.Fatalf("refused request: not asked: %v", resp)
		}
	}
	// The refused request consumed nothing.
	peek := b.shouldRateLimit(t, rlsReq("edge", 0, withHits(rlsDesc("user", "u1"), 0), withHits(rlsDesc("tenant", "acme"), 0)))
	if peek.Statuses[0].LimitRemaining != 7 || peek.Statuses[1].LimitRemaining != 997 {
		t.Fatalf("after the refusal: %v", peek)
	}
	// The window ends: admitted again.
	clk.Advance(50 * time.Second)
	if resp := b.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("remote_address", "203.0.113.9"))); resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("next window: %v", resp)
	}

	// A lease through a's admit.v1 holds the slot in Redis; b's RLS gate
	// sees it.
	ctx := context.Background()
	lease, err := a.admit.Acquire(ctx, &admitv1.AcquireRequest{Domain: "edge", Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}})
	if err != nil || lease.LeaseId == "" {
		t.Fatalf("acquire: %v, %v", lease, err)
	}
	if resp := b.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("pool", "db"))); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("gate with the slot leased: %v", resp)
	}
	if _, err := a.admit.Release(ctx, &admitv1.ReleaseRequest{LeaseId: lease.LeaseId}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if resp := b.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("pool", "db"))); resp.OverallCode != rlsv3.RateLimitResponse_OK {
			t.Fatalf("gate after the release: %v", resp)
		}
	}
	resp, err := b.admit.Check(ctx, &admitv1.CheckRequest{Domain: "edge", Hits: proto.Int64(0), Descriptors: []*admitv1.Descriptor{admitDesc("pool", "db")}})
	if err != nil || !resp.Decision.Allowed || resp.Statuses[0].Remaining != 1 {
		t.Fatalf("nothing held after the gates: %v, %v", resp, err)
	}

	// Redis gone: fail closed.
	srv.Kill()
	r, err := a.rls.ShouldRateLimit(ctx, rlsReq("edge", 1, rlsDesc("user", "u2")))
	if err != nil {
		wantCode(t, err, codes.Unavailable)
	} else if r.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("Redis down, fail closed: %v", r)
	}
}
