// Package server is admit's rate-limit service, the library behind
// `admit serve`: Envoy's rate-limit service (envoy.service.ratelimit.v3)
// and admit's own API over gRPC, an HTTP JSON API, health, readiness and
// metrics endpoints, and a gateway that applies a policy to HTTP requests
// before proxying them. Every part decides with a policy.Engine, obtained
// from an EngineSource on each request, so that a reload (a new engine)
// takes effect at once without stopping the server.
package server
