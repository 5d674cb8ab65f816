// Package server is admit's rate-limit service, the library behind
// `admit serve`: Envoy's rate-limit service (envoy.service.ratelimit.v3)
// and admit's own API over gRPC, an HTTP JSON API, health, readiness and
// metrics endpoints, and a gateway that applies a policy to HTTP requests
// before proxying them. Every part decides with a policy.Engine, obtained
// from an EngineSource on each request, so that a reload (a new engine)
// takes effect at once without stopping the server.
//
// # The service
//
// Server is `admit serve` as a library, configured by one Config (every
// zero field is its default; `admit serve`'s flags and ADMIT_* variables
// set the same fields): it owns the policy (loaded from files, reloaded
// on Reload and when they change, keeping the state of the limits that
// did not change), the store (memory, or Redis at Config.Redis), a
// Prometheus registry of its own, and the listeners: the HTTP API, the
// gRPC APIs, health, readiness and metrics, and in gateway mode a
// Gateway. Shutdown drains the requests in flight within a deadline.
//
// # Configuration
//
// An embedder builds a Server from a Config literal, writing only what
// differs from the defaults, and may check it first with Validate, whose
// *ConfigError names the field at fault:
//
//	cfg := server.Config{
//		HTTPAddr:    "127.0.0.1:9000",
//		GRPCAddr:    "off",                  // no gRPC listener
//		PolicyFiles: []string{"/etc/admit/policy.yaml"},
//		Redis:       "redis://redis:6379/0", // "" keeps everything in memory
//		Logger:      logger,
//	}
//	if err := cfg.Validate(); err != nil {
//		var ce *server.ConfigError
//		if errors.As(err, &ce) { ... ce.Field, such as "Redis" ... }
//	}
//	srv, err := server.New(cfg) // validates too
//	...
//	err = srv.Run(ctx) // serves until ctx ends, then drains
//
// DefaultConfig returns every default spelled out (New(DefaultConfig())
// and New(Config{}) are the same Server). The fields that text can set
// are `admit serve`'s settings, each a flag, an ADMIT_* variable and a
// key of its --server-config file, named in the field's comment; the
// others (Policy, RedisClient, Logger, Registry, Transport, ...) hold Go
// values. NewGateway, NewAPI and RegisterGRPC take the same Config and
// read the fields that concern them.
//
// Which one should I use?
//
//   - A rate-limit service for gateways and services in any language: run
//     `admit serve` (cmd/admit), or Server in a program of your own.
//   - Limits in front of an HTTP backend you cannot change: Gateway (or
//     `admit serve --upstream`), a reverse proxy deciding each request by
//     the policy before forwarding it.
//   - Only one API inside your own server: NewAPI (an http.Handler) or
//     RegisterGRPC on your *grpc.Server, with an Engines holding the
//     engine you build from a policy.
//   - Limits inside a Go service: not this package, but policy with
//     httplimit or grpclimit, which decide in the process.
//
// # HTTP API
//
// NewAPI serves POST /v1/check (a request's descriptors against the
// policy, the decision and one status per descriptor), /v1/acquire,
// /v1/release and /v1/extend (concurrency slots held under leases), and
// envoyproxy/ratelimit's POST /json. Errors are JSON bodies
// {"code","message"} with 400, 405, 413, 415, 422 or 503; docs/API.md
// describes every field with curl examples.
//
// # gRPC APIs
//
// RegisterGRPC registers every gRPC service of `admit serve` on one
// *grpc.Server: Envoy's rate-limit service (RLS), admit's own admit.v1
// service (AdmitService, proto/admit/v1/admit.proto, Go code in package
// admitv1), the grpc.health.v1 health service and server reflection.
//
// Which one should I use?
//
//   - Envoy, or any proxy or client speaking envoyproxy/ratelimit's
//     protocol (envoy.service.ratelimit.v3.RateLimitService): RLS. It is a
//     drop-in for envoyproxy/ratelimit, loading its configuration files
//     unchanged (policy.Parse), with the fields of its statuses filled for
//     every algorithm, the IETF RateLimit fields in
//     response_headers_to_add, and quota for what nothing limits.
//   - An application deciding its own requests: admit.v1's Check, which
//     reports the whole decision (rule, tier, kind, retry and reset times,
//     shadow refusals) and takes costs and inline limits without Envoy's
//     quirks.
//   - A concurrency cap (requests in flight): admit.v1's Acquire and
//     Release, which hold the slots under a lease. Envoy's protocol has no
//     release, so through RLS (and Check) a concurrency cap is a gate:
//     admitted iff it has room now, holding nothing afterwards.
//
// Every API checks its requests before deciding (domain, descriptors,
// entries, lengths, costs) and answers a bad
// one INVALID_ARGUMENT saying what is wrong. docs/API.md describes the
// messages, with grpcurl examples.
package server
