package server_test

import (
	"context"
	"fmt"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/server"
)

// Envoy's rate-limit service on an envoyproxy/ratelimit configuration,
// called directly (server.RegisterGRPC serves it on a *grpc.Server): two
// requests per minute per address, the third refused, at instants of a
// manual clock.
func ExampleRLS() {
	p, err := policy.Parse("config.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 10, 0, time.UTC))
	e, err := policy.NewEngine(p, policy.WithBackend(policy.StoreLocal, backends.Memory()), policy.WithClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	var engines server.Engines
	engines.Set(e)
	rls, err := server.NewRLS(&engines, server.WithGRPCClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "203.0.113.7"}},
	}}}
	for range 3 {
		resp, err := rls.ShouldRateLimit(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		st := resp.Statuses[0]
		fmt.Printf("%v: %d per %v, %d left, reset in %v\n", resp.OverallCode, st.CurrentLimit.RequestsPerUnit, st.CurrentLimit.Unit,
			st.LimitRemaining, st.DurationUntilReset.AsDuration())
		for _, h := range resp.ResponseHeadersToAdd {
			fmt.Printf("  %s: %s\n", h.Key, h.Value)
		}
	}
	// Output:
	// OK: 2 per MINUTE, 1 left, reset in 50s
	//   RateLimit-Policy: "edge.remote_address";q=2;w=60
	//   RateLimit: "edge.remote_address";r=1;t=50
	// OK: 2 per MINUTE, 0 left, reset in 50s
	//   RateLimit-Policy: "edge.remote_address";q=2;w=60
	//   RateLimit: "edge.remote_address";r=0;t=50
	// OVER_LIMIT: 2 per MINUTE, 0 left, reset in 50s
	//   RateLimit-Policy: "edge.remote_address";q=2;w=60
	//   RateLimit: "edge.remote_address";r=0;t=50
	//   Retry-After: 50
}
