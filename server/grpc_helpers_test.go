package server

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/redisstore"
	"github.com/admit-go/admit/server/admitv1"
)

// grpcT0 is the instant the gRPC tests start at: a Monday, 10 s into a
// minute (so that fixed windows aligned on the epoch end 50 s later).
var grpcT0 = time.Date(2026, 3, 2, 12, 0, 10, 0, time.UTC)

// grpcEngine returns an engine enforcing the policy in yaml (this
// package's format or Envoy's), on clock if not nil, configured by cfg if
// given (with the local store if it gives no Backends).
func grpcEngine(t testing.TB, yaml string, clock admit.Clock, cfg ...policy.Config) *policy.Engine {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	c := storesOf(nil, clock)
	if len(cfg) > 0 {
		backends := c.Backends
		c = cfg[0]
		if c.Backends == nil {
			c.Backends = backends
		}
		if clock != nil {
			c.Clock = clock
		}
	}
	e, err := policy.NewEngine(p, c)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// grpcSource returns an Engines holding e.
func grpcSource(e *policy.Engine) *Engines {
	s := new(Engines)
	s.Set(e)
	return s
}

// grpcHarness is a gRPC server with RegisterGRPC's services over bufconn,
// and clients of each, using the generated client stubs (go-control-plane's
// for Envoy's service).
type grpcHarness struct {
	g      *GRPC
	srv    *grpc.Server
	conn   *grpc.ClientConn
	rls    rlsv3.RateLimitServiceClient
	admit  admitv1.AdmitClient
	health healthpb.HealthClient
}

func startGRPC(t testing.TB, src EngineSource, opts ...grpcOption) *grpcHarness {
	t.Helper()
	return startGRPCServer(t, grpc.NewServer(GRPCServerOptions()...), src, opts...)
}

// startGRPCServer is startGRPC on a server of the caller's.
func startGRPCServer(t testing.TB, srv *grpc.Server, src EngineSource, opts ...grpcOption) *grpcHarness {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	g, err := registerGRPCServices(srv, src, opts...)
	if err != nil {
		t.Fatalf("RegisterGRPC: %v", err)
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		_ = g.Close()
	})
	return &grpcHarness{g: g, srv: srv, conn: conn,
		rls:    rlsv3.NewRateLimitServiceClient(conn),
		admit:  admitv1.NewAdmitClient(conn),
		health: healthpb.NewHealthClient(conn)}
}

// rlsDesc is a descriptor of entries given as key, value, key, value...
func rlsDesc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// withHits sets a descriptor's own hits_addend.
func withHits(d *ratelimitv3.RateLimitDescriptor, n uint64) *ratelimitv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

func rlsReq(domain string, hits uint32, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: ds}
}

// shouldRateLimit calls the service and fails t on an error.
func (h *grpcHarness) shouldRateLimit(t testing.TB, r *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := h.rls.ShouldRateLimit(context.Background(), r)
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", r, err)
	}
	if len(resp.Statuses) != len(r.Descriptors) {
		t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(r.Descriptors))
	}
	return resp
}

// wantCode fails t unless err is a status with code c.
func wantCode(t testing.TB, err error, c codes.Code) {
	t.Helper()
	if got := status.Code(err); got != c {
		t.Fatalf("error %v: code %v, want %v", err, got, c)
	}
}

// headerMap returns the response's headers by key.
func headerMap(resp *rlsv3.RateLimitResponse) map[string]string {
	m := map[string]string{}
	for _, h := range resp.ResponseHeadersToAdd {
		m[h.Key] = h.Value
	}
	return m
}

// noGoroutineLeak fails t if more goroutines run at its end than at its
// start (after letting the ones that are ending end).
func noGoroutineLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines at the end, %d at the start:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// redisBackends is the Config of an engine on clock (nil: the system
// clock) with the local store and the Redis store s as "redis", its
// default store, deciding at clock's instants (nil: Redis's clock).
func redisBackends(s *redisstore.Store, clock admit.Clock) policy.Config {
	c := storesOf(nil, clock)
	c.Backends["redis"] = backends.Redis(s, clock)
	c.DefaultStore = "redis"
	return c
}

// storesOf is the Config of an engine on clock (nil: the system clock)
// with the stores of admit serve on s (see backends.Stores).
func storesOf(s *redisstore.Store, clock admit.Clock) policy.Config {
	c := policy.Config{Options: admit.Options{Clock: clock}}
	c.Backends, c.DefaultStore = backends.Stores(s)
	return c
}
