// Package server is admit's rate-limit service, the library behind
// `admit serve`: Envoy's rate-limit service (envoy.service.ratelimit.v3)
// and admit's own API over gRPC, an HTTP JSON API, health, readiness and
// metrics endpoints, and a gateway that applies a policy to HTTP requests
// before proxying them. Every part decides with a policy.Engine, obtained
// from an EngineSource on each request, so that a reload (a new engine)
// takes effect at once without stopping the server.
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
// entries, lengths, costs: see the GRPCOption values) and answers a bad
// one INVALID_ARGUMENT saying what is wrong. docs/API.md describes the
// messages, with grpcurl examples.
package server
