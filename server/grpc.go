package server

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// The names of the gRPC services RegisterGRPC registers, as the health
// service knows them.
const (
	RLSServiceName   = "envoy.service.ratelimit.v3.RateLimitService"
	AdmitServiceName = "admit.v1.Admit"
)

// GRPC is the gRPC side of `admit serve`, as RegisterGRPC registers it on
// one *grpc.Server: Envoy's rate-limit service, admit.v1, the
// grpc.health.v1 health service (reporting every service, and the server
// as a whole under "", as SERVING until SetServing or Close says
// otherwise) and server reflection (so that grpcurl and grpcui list and
// call the services without their protos).
//
// A GRPC is safe for concurrent use. Close it when the server stops.
type GRPC struct {
	RLS    *RLS
	Admit  *AdmitService
	Health *health.Server

	closeOnce sync.Once
}

// RegisterGRPC registers on s Envoy's rate-limit service (NewRLS), admit's
// own service (NewAdmitService), the health service and server reflection,
// all deciding with the engine src gives at each request, configured by
// opts. The error wraps ErrInvalidGRPCOption for an invalid option; then
// nothing was registered.
//
//	srv := grpc.NewServer()
//	g, err := server.RegisterGRPC(srv, engines, server.WithGRPCLeases(leases))
//	...
//	defer g.Close()
//	srv.Serve(lis)
func RegisterGRPC(s *grpc.Server, src EngineSource, opts ...GRPCOption) (*GRPC, error) {
	rls, err := NewRLS(src, opts...)
	if err != nil {
		return nil, err
	}
	adm, err := NewAdmitService(src, opts...)
	if err != nil {
		return nil, err
	}
	g := &GRPC{RLS: rls, Admit: adm, Health: health.NewServer()}
	rls.Register(s)
	adm.Register(s)
	healthpb.RegisterHealthServer(s, g.Health)
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
	for _, name := range [...]string{"", RLSServiceName, AdmitServiceName} {
		g.Health.SetServingStatus(name, st)
	}
}

// Close sets every service NOT_SERVING for good (health.Server.Shutdown),
// so that clients watching the health service move away while the server
// drains, and closes the AdmitService. It does not stop the *grpc.Server.
// Close is idempotent and returns nil.
func (g *GRPC) Close() error {
	g.closeOnce.Do(func() {
		g.Health.Shutdown()
		_ = g.Admit.Close()
	})
	return nil
}
