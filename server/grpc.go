package server

import (
	"sync"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/admit-go/admit/server/admitv1"
)

// The names of the gRPC services RegisterGRPC registers, as the health
// service knows them: those of their service descriptors.
var (
	rlsServiceName   = rlsv3.RateLimitService_ServiceDesc.ServiceName // envoy.service.ratelimit.v3.RateLimitService
	admitServiceName = admitv1.Admit_ServiceDesc.ServiceName          // admit.v1.Admit
)

// GRPC is the gRPC side of `admit serve`, as RegisterGRPC registers it on
// one *grpc.Server: Envoy's rate-limit service
// (envoy.service.ratelimit.v3.RateLimitService), admit.v1.Admit, the
// grpc.health.v1 health service (reporting each service by those names,
// and the server as a whole under "", as SERVING until SetServing or Close
// says otherwise) and server reflection (so that grpcurl and grpcui list and
// call the services without their protos).
//
// A GRPC is safe for concurrent use. Close it when the server stops.
type GRPC struct {
	rls    *rlsService
	admit  *admitService
	health *health.Server

	closeOnce sync.Once
}

// RegisterGRPC registers on s Envoy's rate-limit service, admit's own
// service (admit.v1), the health service and server reflection, all
// deciding with the engine src gives at each request, configured by cfg's
// RLSHeaders, AllowReset and Logger (it ignores the other fields). The
// error is cfg.Validate's; then nothing was registered. Give s the options
// of GRPCServerOptions.
//
//	srv := grpc.NewServer(server.GRPCServerOptions()...)
//	g, err := server.RegisterGRPC(srv, engines, server.Config{RLSHeaders: "envoy"})
//	...
//	defer g.Close()
//	srv.Serve(lis)
func RegisterGRPC(s *grpc.Server, src EngineSource, cfg Config) (*GRPC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.resolved()
	style, _ := parseRLSHeaders(c.RLSHeaders) // checked by Validate
	return registerGRPCServices(s, src, withGRPCHeaderStyle(style), withGRPCReset(c.AllowReset), withGRPCLogger(c.Logger))
}

// registerGRPCServices is RegisterGRPC with the options of the gRPC APIs.
func registerGRPCServices(s *grpc.Server, src EngineSource, opts ...grpcOption) (*GRPC, error) {
	rls, err := newRLS(src, opts...)
	if err != nil {
		return nil, err
	}
	adm, err := newAdmitService(src, opts...)
	if err != nil {
		return nil, err
	}
	g := &GRPC{rls: rls, admit: adm, health: health.NewServer()}
	rls.Register(s)
	adm.Register(s)
	healthpb.RegisterHealthServer(s, g.health)
	reflection.Register(s)
	g.SetServing(true)
	return g, nil
}

// SetServing sets the health of the server ("") and of both services:
// SERVING, or NOT_SERVING (while no policy is loaded, or while the server
// drains), for health-checking load balancers. After Close it does
// nothing.
func (g *GRPC) SetServing(serving bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range [...]string{"", rlsServiceName, admitServiceName} {
		g.health.SetServingStatus(name, st)
	}
}

// Close sets every service NOT_SERVING for good (health.Server.Shutdown),
// so that clients watching the health service move away while the server
// drains, and closes the AdmitService. It does not stop the *grpc.Server.
// Close is idempotent and returns nil.
func (g *GRPC) Close() error {
	g.closeOnce.Do(func() {
		g.health.Shutdown()
		_ = g.admit.Close()
	})
	return nil
}
