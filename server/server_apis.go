package server

import (
	"context"
	"net/http"

	"github.com/admit-go/admit/internal/stores/inredis"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

// adminHandler builds the HTTP API (NewAPI) with the Server's readiness
// and metrics, sharing the lease table with the gRPC API: the handler of
// /v1/*, /json, /healthz, /readyz and /metrics. With Redis, the leases of
// caps kept there are kept there too (WithLeaseStore), so that every
// instance on it can release them.
func (s *Server) adminHandler() (http.Handler, error) {
	leases, err := newLeases(withLeaseStore(inredis.LeaseRecords(s.store)))
	if err != nil {
		return nil, err
	}
	s.leases = leases
	var readyOpts []readyOption
	if c := s.redisClient(); c != nil {
		// Every rule kept in Redis has a failure policy (fail_open when
		// the file says none), so the service still decides while Redis
		// is down: ready, degraded.
		readyOpts = append(readyOpts,
			withProbe("redis", func(ctx context.Context) error { return c.Ping(ctx).Err() }),
			withDegradedReady(true))
	}
	ready, err := newReadiness(&s.engines, readyOpts...)
	if err != nil {
		return nil, err
	}
	s.api, err = newAPI(&s.engines,
		withLeases(leases),
		withReadiness(ready),
		withMetrics(s.metricsHandler()),
		withMaxBodyBytes(s.c.MaxRequestBytes),
		withReset(s.c.AllowReset),
		withAPILogger(s.log))
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && s.draining.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("{\"status\":\"shutting down\"}\n"))
			return
		}
		s.api.ServeHTTP(w, r)
	}), nil
}

// registerGRPC registers the gRPC APIs (RegisterGRPC) on g.
func (s *Server) registerGRPC(g *grpc.Server) error {
	style, err := parseRLSHeaders(s.c.RLSHeaders)
	if err != nil {
		return err
	}
	s.grpcAPI, err = registerGRPCServices(g, &s.engines, withGRPCLeases(s.leases), withGRPCHeaderStyle(style), withGRPCReset(s.c.AllowReset), withGRPCLogger(s.log))
	return err
}

// redisClient returns the Redis client the Server's store is on, nil
// without Redis.
func (s *Server) redisClient() redis.UniversalClient {
	if s.ownClient != nil {
		return s.ownClient
	}
	return s.c.RedisClient
}

// drainAPIs tells health checkers that the Server is going away: gRPC
// health NOT_SERVING (/readyz answers 503 by s.draining).
func (s *Server) drainAPIs() {
	if s.grpcAPI != nil {
		s.grpcAPI.SetServing(false)
	}
}

// closeAPIs closes the APIs and the lease table (giving back the slots
// of the leases still held).
func (s *Server) closeAPIs() {
	if s.grpcAPI != nil {
		_ = s.grpcAPI.Close()
	}
	if s.api != nil {
		_ = s.api.Close()
	}
	if s.leases != nil {
		_ = s.leases.Close()
	}
}
